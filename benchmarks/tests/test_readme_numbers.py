"""The README and the docs pages against benchmarks/results/ (benchmarks/readme_tables.py):
their generated tables are up to date, and every number a page quotes in its sourced regions
is in a report."""

from pathlib import Path

import pytest

from benchmarks import readme_tables as rt

ROOT = Path(__file__).resolve().parents[2]
TEXTS = {name: p.read_text() for name, p in rt.pages(ROOT).items()}


def test_pages_are_the_readme_and_every_docs_page():
    assert "README.md" in TEXTS and "docs/paper.md" in TEXTS and "docs/accuracy.md" in TEXTS
    assert len(TEXTS) == 1 + len(list((ROOT / "docs").glob("*.md")))


def test_generated_tables_are_up_to_date():
    names = [m.group(2) for text in TEXTS.values() for m in rt.BLOCK_RE.finditer(text)]
    assert sorted(set(names)) == sorted(rt.BLOCKS)
    for name, text in TEXTS.items():
        assert rt.render(text) == text, f"{name}: run `python -m benchmarks.readme_tables`"


def test_every_sourced_number_is_in_a_report():
    numbers = [n for text in TEXTS.values() for n in rt.readme_numbers(rt.sourced_text(text))]
    assert len(numbers) > 300  # the sourced regions are found and their numbers are read
    for name, text in TEXTS.items():
        assert rt.unsourced_numbers(text) == [], name


def test_check_fails_on_a_stale_table_a_missing_block_or_an_unsourced_number():
    assert rt.check(TEXTS) == []
    paper = TEXTS["docs/paper.md"]
    # a table cell edited by hand
    row = next(line for line in paper.splitlines() if line.startswith("| CGMPINN | "))
    cell = "| CGMPINN | " + row.split("|")[2].strip() + " |"  # the overview's first CGMPINN cell
    assert cell != "| CGMPINN | 1.00e-4 (9.99e-9) |"
    stale = dict(TEXTS, **{"docs/paper.md": paper.replace(cell, "| CGMPINN | 1.00e-4 (9.99e-9) |")})
    assert any("docs/paper.md" in p and "stale" in p for p in rt.check(stale))
    # a generated block no page has
    gone = {k: v for k, v in TEXTS.items() if k != "README.md"}
    assert any("'summary'" in p for p in rt.check(gone))
    # a prose number that no report contains (one digit off), and a made-up timing
    prose = "lowest median of all methods (8.99e-5;"
    assert prose in paper
    bad = paper.replace(prose, prose.replace("8.99e-5", "8.97e-5"))
    speed = TEXTS["docs/speed.md"]
    assert "PINN 57.2 s" in speed
    assert rt.unsourced_numbers(bad) == ["8.97e-5"]
    assert rt.unsourced_numbers(speed.replace("PINN 57.2 s", "PINN 57.3 s")) == ["57.3"]
    # outside a sourced region nothing is checked
    assert rt.unsourced_numbers("PINN 57.3 s, 8.97e-5") == []
    assert rt.unsourced_numbers("<!-- BEGIN sourced -->\nPINN 57.3 s\n<!-- END sourced -->") == [
        "57.3"
    ]
    # what is not checked: ratios, approximations, versions
    assert rt.readme_numbers(
        "2.7x below, 1.9-21x, ~7 s, about 4 s, jax 0.10.2, x86_64, 112.5 s, 684 s, 1e-3"
    ) == ["112.5", "684", "1e-3"]


def test_number_precision():
    assert rt.canonical("9.50e-04") == rt.canonical("9.5e-4") == rt.canonical("0.00095")
    assert rt.canonical("9.51e-4") != rt.canonical("9.5e-4")
    assert rt.canonical("144.0") == rt.canonical("144")


def test_unknown_block_is_an_error():
    with pytest.raises(ValueError, match="unknown generated block"):
        rt.render("<!-- BEGIN generated: nope -->\nx\n<!-- END generated -->")


def test_docs_figure_is_the_study_figure():
    """docs/img/gn_wall_heat.png is a copy of the figure the (retired) gn_wall study wrote."""
    assert (ROOT / "docs/img/gn_wall_heat.png").read_bytes() == (
        ROOT / "benchmarks/results/gn_wall_heat.png"
    ).read_bytes()
