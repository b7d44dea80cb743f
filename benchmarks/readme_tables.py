"""The numbers of the README and the docs pages come from the committed results files.

Two things, both from ``benchmarks/results/`` alone (no training, no jax):

* the tables between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated -->`` in
  ``README.md`` and ``docs/*.md`` are rebuilt: ``summary`` (the README's one results table:
  CGMPINN and PINN per problem, faithful and accurate, beside the paper), ``headline`` (1D
  Poisson headline over five seeds, from ``headline.json``), ``paper-overview`` (median
  relative e2 of every method on the six problems, paper in parentheses, from
  ``paper_runs.json``, as ``paper_tables.py`` builds ``methods.md``), ``precision-goals`` (the
  float64 L-BFGS table of ``precision.md``), ``accuracy`` (the Gauss-Newton preset's table of
  ``accuracy.md``) and ``own-pde`` (``own_pde.json``); every block must appear in some page;
* every number between ``<!-- BEGIN sourced -->`` and ``<!-- END sourced -->`` in a page
  (scientific notation such as ``3.51e-04``, decimals such as ``112.5``, and integers with a
  unit of seconds such as ``2316 s``) must be written, at the same precision (``9.5e-4`` =
  ``9.50e-04``), in one of the reports ``benchmarks/results/*.md``, which the benchmark
  scripts generate from the records ``benchmarks/results/*.json``. Not checked: ratios
  written with an ``x`` (``2.7x``, derived from two checked numbers) and ranges of them
  (``1.9-21x``), ``k of n`` counts, approximations written with ``~`` or ``about``, and
  version strings. A number in the wrong place that happens to be written somewhere else in
  the reports also passes: the check catches numbers no report contains (a typo, a stale
  number, one never recorded).

Usage::

    python -m benchmarks.readme_tables            # rewrite the generated blocks of every page
    python -m benchmarks.readme_tables --check    # exit 1 if a block is stale or a number unsourced

``benchmarks/tests/test_readme_numbers.py`` runs the check.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

from benchmarks import tables_lib as tl

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
README = ROOT / "README.md"
DOCS = ROOT / "docs"

BLOCK_RE = re.compile(r"(<!-- BEGIN generated: ([\w-]+) -->\n)(.*?)(<!-- END generated -->)", re.S)


def _load_record(path: Path) -> dict:
    return json.loads(path.read_text())["runs"]


def _paper() -> dict:
    return json.loads((ROOT / "cgmpinn_jax" / "data" / "paper_tables.json").read_text())


# ------------------------------------------------------------------------------------------
# generated blocks


# (README label, headline.json label, paper_tables variant, show "k/n seeds <= 1e-3")
HEADLINE_ROWS = (
    ("CGMPINN, ReLoBRaLo on (as released)", "CGMPINN (ReLoBRaLo on)", "cgmpinn", True),
    ("CGMPINN, ReLoBRaLo off", "CGMPINN (ReLoBRaLo off)", "cgmpinn_relobralo_off", True),
    ("PINN (same engine)", "PINN", "pinn", False),
)
PAPER_HEADLINE = {"cgmpinn": ("methods", "CGMPINN"), "pinn": ("methods", "PINN")}


def _e(x: float) -> str:
    return f"{x:.2e}"


def headline_table(results: Path = RESULTS) -> str:
    """The 1D Poisson headline table: our five seeds (median [min - max]), the paper's single
    run, the authors' code over five seeds (reference-code.md §13)."""
    runs = [
        r
        for r in _load_record(results / "headline.json").values()
        if r["problem"] == "poisson1d" and r.get("backend", "optax") == "optax"
    ]
    paper = _paper()
    lines = [
        "| variant | ours | paper (1 run) | authors' code, 5 seeds (reference-code.md §13) |",
        "|---|---|---|---|",
    ]
    for label, rec_label, variant, goal in HEADLINE_ROWS:
        rel = [tl.dec(r["rel_e2"]) for r in runs if r["label"] == rec_label]
        if not rel:
            raise ValueError(f"headline.json has no 1D Poisson run of {rec_label!r}")
        st = tl.stats(rel)
        ours = f"{_e(st['median'])} [{_e(st['min'])} - {_e(st['max'])}]"
        if goal:
            ours += f", {sum(x <= 1e-3 for x in rel)}/{len(rel)} seeds <= 1e-3"
        src = PAPER_HEADLINE.get(variant)
        p = paper[src[0]]["poisson1d"][src[1]]["rel_e2"] if src else None
        authors = tl.AUTHORS_RERUN["poisson1d"][variant]["median"]
        lines.append(f"| {label} | {ours} | {'-' if p is None else _e(p)} | median {_e(authors)} |")
    return "\n".join(lines) + "\n"


def overview_table(results: Path = RESULTS) -> str:
    """Median relative e2 over seeds of every method on the six problems (paper in parentheses)."""
    runs = [
        r
        for r in _load_record(results / "paper_runs.json").values()
        if r.get("format") == tl.RUN_FORMAT
    ]
    table = tl.build_methods_table(tl.select_runs(runs), _paper())
    probs = list(table)
    lines = [
        "| method | " + " | ".join(tl.PROBLEM_TITLES[p] for p in probs) + " |",
        "|---|" + "|".join("---" for _ in probs) + "|",
    ]
    for i, row in enumerate(table[probs[0]]["rows"]):
        cells = []
        for p in probs:
            r = table[p]["rows"][i]
            c = r["ours"]
            ours = "—" if c is None else tl.fmt_sci(c["rel_e2"]["median"]) + tl.scale_mark(c)
            pr = (r["paper"] or {}).get("rel_e2")
            cells.append(ours + (f" ({tl.fmt_sci(pr)})" if pr is not None else ""))
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def precision_goals_table(results: Path = RESULTS) -> str:
    """The accurate preset against float32 and issue 19's goals: the table of that name in
    ``precision.md`` (written from ``precision.json`` and ``paper_runs.json`` by the retired
    study ``precision``: ``python -m benchmarks.retired precision -- --build-only``)."""
    text = (results / "precision.md").read_text()
    head = "## The accurate preset against float32 and the goals"
    if head not in text:
        raise ValueError(
            f"precision.md has no section {head!r}: run "
            "`python -m benchmarks.retired precision -- --build-only`"
        )
    lines = [
        ln for ln in text.split(head, 1)[1].split("\n## ", 1)[0].splitlines() if ln.startswith("|")
    ]
    return "\n".join(lines) + "\n"


def accuracy_table(results: Path = RESULTS) -> str:
    """The Gauss-Newton accurate preset per problem and method: the first table of
    ``accuracy.md`` (``benchmarks/accuracy.py`` writes it from ``accuracy.json``)."""
    text = (results / "accuracy.md").read_text()
    body = text.split("\n## ", 1)[0]
    lines = [ln for ln in body.splitlines() if ln.startswith("|")]
    if not lines:
        raise ValueError(
            "accuracy.md has no table: run `python -m benchmarks.accuracy --report-only`"
        )
    return "\n".join(lines) + "\n"


def own_pde_table(results: Path = RESULTS) -> str:
    """Your own PDE, where to start: ``own_pde.json`` (``benchmarks/own_pde.py``), the faithful
    and accurate presets on Burgers and Helmholtz, with the error after 100 and 300
    second-stage iterations."""
    runs = _load_record(results / "own_pde.json")
    order = {"burgers": 0, "helmholtz2d": 1, "faithful": 0, "accurate": 1}

    def after(r, m):
        a = r["after_second"].get(str(m))
        return "-" if a is None else f"{_e(a['rel_e2'])} at {a['seconds']:.0f} s"

    lines = [
        "| problem | preset | rel. e2 after 100 second-stage it. | after 300 | at the end | wall |",
        "|---|---|---|---|---|---|",
    ]
    for r in sorted(runs.values(), key=lambda r: (order[r["problem"]], order[r["preset"]])):
        lines.append(
            f"| {r['problem']} | {r['preset']} | {after(r, 100)} | {after(r, 300)} | "
            f"{_e(r['metrics']['rel_e2'])} | {r['wall_seconds']:.0f} s |"
        )
    return "\n".join(lines) + "\n"


SUMMARY_METHODS = (("CGMPINN", "cgmpinn"), ("PINN", "pinn"))


def _accuracy_medians(results: Path) -> dict:
    """{(problem, method): (median rel e2, seeds)} of the accurate preset's grid runs (the
    default number of Gauss-Newton iterations; the grid's seeds, as ``accuracy.py`` plans them)."""
    from benchmarks.accuracy import run_key, seeds_for

    path = results / "accuracy.json"
    out: dict = {}
    for key, r in _load_record(path).items() if path.exists() else ():
        # the preset's own iteration count: the key has no "__gn<n>" override
        if r["seed"] in seeds_for(r["problem"]) and key == run_key(
            r["problem"], r["method"], r["seed"]
        ):
            out.setdefault((r["problem"], r["method"]), []).append(r["metrics"]["rel_e2"])
    return {k: (tl.stats([tl.dec(x) for x in v])["median"], len(v)) for k, v in out.items()}


def summary_table(results: Path = RESULTS) -> str:
    """The README's one results table: per problem, the paper's CGMPINN, our CGMPINN and PINN
    at the paper's budget (float32, the faithful default; median over seeds) and with the
    accurate preset (float64 Gauss-Newton; median over the seeds run, ``-`` where none ran)."""
    runs = [
        r
        for r in _load_record(results / "paper_runs.json").values()
        if r.get("format") == tl.RUN_FORMAT
    ]
    table = tl.build_methods_table(tl.select_runs(runs), _paper())
    acc = _accuracy_medians(results)
    lines = [
        "| problem | paper CGMPINN | CGMPINN, faithful | PINN, faithful | CGMPINN, accurate | "
        "PINN, accurate |",
        "|---|---|---|---|---|---|",
    ]
    for p, body in table.items():
        rows = {r["label"]: r for r in body["rows"]}
        paper = (rows["CGMPINN"]["paper"] or {}).get("rel_e2")
        cells = [tl.fmt_sci(paper)]
        for label, _ in SUMMARY_METHODS:
            c = rows[label]["ours"]
            cells.append(
                "-"
                if c is None
                else f"{tl.fmt_sci(c['rel_e2']['median'])} ({c['rel_e2']['n']} seeds)"
            )
        for _, m in SUMMARY_METHODS:
            a = acc.get((p, m))
            cells.append(
                "-" if a is None else f"{tl.fmt_sci(a[0])} ({a[1]} seed{'s' if a[1] > 1 else ''})"
            )
        lines.append(f"| {tl.PROBLEM_TITLES[p]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


BLOCKS = {
    "summary": summary_table,
    "headline": headline_table,
    "paper-overview": overview_table,
    "precision-goals": precision_goals_table,
    "accuracy": accuracy_table,
    "own-pde": own_pde_table,
}


def render(readme: str, results: Path = RESULTS) -> str:
    """``readme`` with every generated block rebuilt; an unknown block name is an error."""

    def sub(m):
        name = m.group(2)
        if name not in BLOCKS:
            raise ValueError(f"unknown generated block {name!r}; known: {', '.join(BLOCKS)}")
        return m.group(1) + BLOCKS[name](results) + m.group(4)

    return BLOCK_RE.sub(sub, readme)


# ------------------------------------------------------------------------------------------
# every sourced number


SOURCED_RE = re.compile(r"<!-- BEGIN sourced -->\n(.*?)<!-- END sourced -->", re.S)


def sourced_text(page: str) -> str:
    """The parts of a page whose numbers must be in a report: its ``sourced`` regions."""
    return "\n".join(SOURCED_RE.findall(page))


def pages(root: Path = ROOT) -> dict[str, Path]:
    """The pages with generated blocks or sourced numbers: the README and every docs page."""
    out = {"README.md": root / "README.md"}
    out.update({f"docs/{p.name}": p for p in sorted((root / "docs").glob("*.md"))})
    return out


# a number not glued to letters, dots or digits ("0.10.2", "x86_64", "H200", "float32", "§6.19"
# are skipped): scientific (3.51e-04, 1e-3), decimal (112.5) or integer
NUMBER_RE = re.compile(r"(?<![\w.§])(\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?![\w.]*\d)(?!\.\d)")
RATIO_AFTER = re.compile(r"(?:\s?-\s?\d+(?:\.\d+)?)?x")  # "2.7x", "1.9-21x", "3.5-4.4x"


def readme_numbers(text: str) -> list[str]:
    """The numbers of ``text`` that must be sourced: every scientific or decimal number and every
    integer followed by " s", except ratios (``2.7x``, ``1.9-21x``) and approximations (``~7 s``,
    ``about 4 s``)."""
    out = []
    for m in NUMBER_RE.finditer(text):
        tok, after = m.group(1), text[m.end() : m.end() + 12]
        before = text[max(0, m.start() - 6) : m.start()]
        if RATIO_AFTER.match(after) or before.endswith(("~", "about ")):
            continue
        if "e" in tok or "." in tok or re.match(r" s\b", after):
            out.append(tok)
    return out


def canonical(tok: str) -> Decimal:
    """The value of ``tok`` at its written precision, trailing zeros dropped: "9.50e-04",
    "9.5e-4" and "0.00095" are the same number, "9.51e-4" is not."""
    return Decimal(tok).normalize()


def number_pool(results: Path = RESULTS) -> set[Decimal]:
    """Every number written in a report (``*.md``) of ``results``; the reports are generated from
    the records (``*.json``) by the benchmark scripts, at the precision the README quotes."""
    pool: set[Decimal] = set()
    for p in sorted(results.glob("*.md")):
        for t in re.findall(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", p.read_text()):
            pool.add(canonical(t))
    return pool


def unsourced_numbers(page: str, results: Path = RESULTS) -> list[str]:
    """The numbers of a page's sourced regions written in no report of ``results``."""
    pool = number_pool(results)
    return [t for t in readme_numbers(sourced_text(page)) if canonical(t) not in pool]


def check(texts: dict[str, str], results: Path = RESULTS) -> list[str]:
    """Problems found in the pages ``{name: text}`` (empty: every generated block is up to date
    and appears in some page, and every sourced number is in a report)."""
    problems = []
    names = {m.group(2) for text in texts.values() for m in BLOCK_RE.finditer(text)}
    for name in BLOCKS:
        if name not in names:
            problems.append(f"no page has the generated block {name!r}")
    for page, text in texts.items():
        if render(text, results) != text:
            problems.append(
                f"{page}: generated tables are stale: run `python -m benchmarks.readme_tables`"
            )
        missing = unsourced_numbers(text, results)
        if missing:
            problems.append(
                f"{page}: sourced numbers found in no file of benchmarks/results/: "
                + ", ".join(missing)
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--check",
        action="store_true",
        help="only check; exit 1 on a stale table or an unsourced number",
    )
    args = ap.parse_args(argv)
    paths = pages()
    texts = {name: p.read_text() for name, p in paths.items()}
    if not args.check:
        for name, text in texts.items():
            new = render(text)
            if new != text:
                paths[name].write_text(new)
                texts[name] = new
                print(f"{name}: generated tables rewritten")
    problems = check(texts)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
