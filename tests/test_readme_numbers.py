"""The README's Results section against benchmarks/results/ (benchmarks/readme_tables.py):
its generated tables are up to date, and every number it quotes is in a report."""

from pathlib import Path

import pytest

from benchmarks import readme_tables as rt

ROOT = Path(__file__).resolve().parents[1]

README = (ROOT / "README.md").read_text()


def test_generated_tables_are_up_to_date():
    names = [m.group(2) for m in rt.BLOCK_RE.finditer(README)]
    assert sorted(names) == sorted(rt.BLOCKS)
    assert rt.render(README) == README, "run `python -m benchmarks.readme_tables`"


def test_every_results_number_is_in_a_report():
    numbers = rt.readme_numbers(rt.results_section(README))
    assert len(numbers) > 200  # the section is found and its numbers are read
    assert rt.unsourced_numbers(README) == []


def test_check_fails_on_a_stale_table_or_an_unsourced_number():
    assert rt.check(README) == []
    # a table cell edited by hand
    cell = "| CGMPINN | 8.84e-4 (1.81e-4) |"
    assert cell in README
    stale = README.replace(cell, "| CGMPINN | 1.00e-4 (1.81e-4) |")
    assert any("stale" in p for p in rt.check(stale))
    # a prose number that no report contains (one digit off), and a made-up timing
    prose = "STAR-PINN has the\n  lowest median of all methods (8.99e-5;"
    assert prose in README
    bad = README.replace(prose, prose.replace("8.99e-5", "8.97e-5")).replace("PINN 57.2 s", "PINN 57.3 s")
    assert sorted(rt.unsourced_numbers(bad)) == ["57.3", "8.97e-5"]
    # what is not checked: ratios, approximations, versions
    assert rt.readme_numbers("2.7x below, 1.9-21x, ~7 s, about 4 s, jax 0.10.2, x86_64, 112.5 s, 684 s, 1e-3") == [
        "112.5", "684", "1e-3"]


def test_number_precision():
    assert rt.canonical("9.50e-04") == rt.canonical("9.5e-4") == rt.canonical("0.00095")
    assert rt.canonical("9.51e-4") != rt.canonical("9.5e-4")
    assert rt.canonical("144.0") == rt.canonical("144")


def test_unknown_block_is_an_error():
    with pytest.raises(ValueError, match="unknown generated block"):
        rt.render("<!-- BEGIN generated: nope -->\nx\n<!-- END generated -->")
