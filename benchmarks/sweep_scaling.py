"""Wall time of a vmapped sweep over 1, 2, 4, 8 seeds against one seed (1D Poisson, CGMPINN,
fixed budget), on this machine.

Reproduce:  python -m benchmarks.sweep_scaling [--adam-steps 400] [--lbfgs-steps 200]
Writes benchmarks/results/sweep_scaling.{md,json}.

Compile and run seconds are reported separately; "per seed" = run seconds / seeds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import cgmpinn_jax as cj

from benchmarks import runcache


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--adam-steps", type=int, default=400)
    ap.add_argument("--lbfgs-steps", type=int, default=200)
    ap.add_argument("--seeds", default="1,2,4,8")
    ap.add_argument("--tag", default="", help="machine label (e.g. gpu-h200): writes sweep_scaling-<tag>.{md,json}")
    args = ap.parse_args(argv)
    cfg = cj.TrainConfig(adam={"steps": args.adam_steps}, second={"steps": args.lbfgs_steps})
    machine = runcache.machine_text("{arch}, {cpu_count} cores, jax {jax}, "
                                    "backend {backend} ({device_kind}), {device_count} device(s)")
    rows = []
    out = Path(__file__).parent / "results"
    name = "sweep_scaling" + (f"-{args.tag}" if args.tag else "")

    def write():  # after every row, so a run stopped early keeps what it measured
        base = rows[0]["run_s"]
        out.mkdir(exist_ok=True)
        path = out / f"{name}.json"
        # keys this script does not write (a hand-added "note", "paper_budget" rows) are kept
        doc = json.loads(path.read_text()) if path.exists() else {}
        doc.update({"machine": machine, "budget": vars(args), "rows": rows})
        path.write_text(json.dumps(doc, indent=1))
        lines = [
            "# Sweep scaling: seeds vmapped in one compiled call",
            "",
            f"1D Poisson, CGMPINN, {args.adam_steps} Adam + {args.lbfgs_steps} L-BFGS steps, float32. Machine: {machine}.",
            f"Command: `python -m benchmarks.sweep_scaling --adam-steps {args.adam_steps} --lbfgs-steps {args.lbfgs_steps} "
            f"--seeds {args.seeds}{' --tag ' + args.tag if args.tag else ''}`. One measurement per row (not repeated).",
            "",
            "| mode | seeds | compile s | run s | run s per seed | run s vs 1 seed alone |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            lines.append(f"| {r['mode']} | {r['seeds']} | {r['compile_s']:.1f} | {r['run_s']:.1f} | "
                         f"{r['run_s'] / r['seeds']:.2f} | {r['run_s'] / base:.2f}x |")
        if doc.get("paper_budget"):
            pb = doc["paper_budget"]
            lines += ["", "At the paper's budget: " + pb.get("note", ""), "",
                      "| mode | method | seeds | compile s | run s |", "|---|---|---|---|---|"]
            lines += [f"| {r['mode']} | {r['method']} | {', '.join(map(str, r['seeds']))} | {r['compile_s']:.1f} | "
                      f"{r['run_s']:.1f} |" for r in pb["rows"]]
        (out / f"{name}.md").write_text("\n".join(lines) + "\n")
        return lines

    t0 = time.perf_counter()
    single = cj.train("poisson1d", "cgmpinn", cfg, key=0, quiet=True)
    rows.append({"mode": "train (1 seed, not vmapped)", "seeds": 1, "compile_s": single.compile_seconds,
                 "run_s": single.run_seconds, "wall_s": time.perf_counter() - t0})
    print(rows[-1], flush=True)
    lines = write()
    for n in [int(s) for s in args.seeds.split(",")]:
        t0 = time.perf_counter()
        res = cj.sweep("poisson1d", "cgmpinn", cfg, seeds=list(range(n)), quiet=True)
        rows.append({"mode": "sweep (vmapped)", "seeds": n, "compile_s": res.compile_seconds,
                     "run_s": res.run_seconds, "wall_s": time.perf_counter() - t0})
        print(rows[-1], flush=True)
        lines = write()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
