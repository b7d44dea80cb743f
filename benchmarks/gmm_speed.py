"""Speed of the jitted 1-D EM GMM (cgmpinn_jax.gmm.fit_gmm) against sklearn's GaussianMixture.

Same data, same process, same run.  For each N the residual vector is drawn (with a fixed seed)
by resampling a real PINN residual vector (tests/data/residuals_mid.npy, 1-D Poisson after 1000
Adam steps) with 1% multiplicative jitter, in float32, as the reference code passes it to sklearn.

* jax: ``jax.jit(lambda r: fit_gmm(r, 4))`` on a device-resident array; compile time (lower +
  compile, ahead of time) is reported separately and excluded from the timings; the median of
  ``--repeats`` calls, each ending with ``block_until_ready``.  "jax, host in/out" additionally
  includes the host->device copy of the residuals and the device->host copy of the (N, K)
  responsibilities (what a host-driven caller pays).
* sklearn: ``GaussianMixture(4, random_state=1224).fit(X)`` (the reference's call, docs/reference-code.md
  §5) and fit + ``predict_proba(X)`` (the reference's full steps 1-2); median of repeats, with
  the default thread pools and with ``threadpoolctl.threadpool_limits(1)`` (sklearn's OpenMP
  k-means degrades badly on shared cores); speed-ups use the faster setting.
* quality: mean log-likelihood per sample of both fits, evaluated in float64 numpy.

Usage (from the repository root)::

    python -m benchmarks.gmm_speed                 # N = 1500, 8000, 100000
    python -m benchmarks.gmm_speed --sizes 1500 8000 --repeats 30

Writes benchmarks/results/gmm_speed.md and benchmarks/results/gmm_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time
import warnings

import jax
import numpy as np

from cgmpinn_jax.gmm import fit_gmm

from benchmarks import runcache

ROOT = pathlib.Path(__file__).resolve().parents[1]

RESULTS = ROOT / "benchmarks" / "results"
DATA = ROOT / "tests" / "data" / "residuals_mid.npy"


def make_residuals(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.load(DATA).astype(np.float64)
    x = rng.choice(base, n) * (1.0 + 0.01 * rng.normal(size=n))
    return x.astype(np.float32)


def score(x, weights, means, variances) -> float:
    x = np.asarray(x, np.float64)[:, None]
    w, m, v = (np.asarray(a, np.float64).ravel()[None, :] for a in (weights, means, variances))
    lp = np.log(w) - 0.5 * np.log(2.0 * np.pi * v) - 0.5 * (x - m) ** 2 / v
    mx = lp.max(axis=1, keepdims=True)
    return float(np.mean(mx[:, 0] + np.log(np.exp(lp - mx).sum(axis=1))))


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(n: int, repeats: int, sk_repeats: int) -> dict:
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits

    x = make_residuals(n)
    xd = jax.device_put(x)
    fn = jax.jit(lambda r: fit_gmm(r, 4))
    t0 = time.perf_counter()
    compiled = fn.lower(xd).compile()
    compile_s = time.perf_counter() - t0
    fit = jax.block_until_ready(compiled(xd))  # warm-up
    jax_s = median_time(lambda: jax.block_until_ready(compiled(xd)), repeats)
    host_s = median_time(lambda: np.asarray(compiled(jax.device_put(x)).resp), repeats)

    X = x[:, None]

    def sk_fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return GaussianMixture(4, random_state=1224).fit(X)

    g = sk_fit()  # warm-up (imports, thread pools)
    sk_fit_s = median_time(sk_fit, sk_repeats)
    sk_full_s = median_time(lambda: sk_fit().predict_proba(X), sk_repeats)
    # sklearn's k-means runs OpenMP threads, which slow down badly when the cores are shared;
    # time it with one thread too and compare against the faster of the two settings.
    with threadpool_limits(1):
        sk_fit1_s = median_time(sk_fit, sk_repeats)
        sk_full1_s = median_time(lambda: sk_fit().predict_proba(X), sk_repeats)
    best_fit = min(sk_fit_s, sk_fit1_s)
    best_full = min(sk_full_s, sk_full1_s)
    return {
        "n": n,
        "jax_compile_s": compile_s,
        "jax_fit_ms": jax_s * 1e3,
        "jax_host_io_ms": host_s * 1e3,
        "sklearn_fit_ms": sk_fit_s * 1e3,
        "sklearn_fit_predict_ms": sk_full_s * 1e3,
        "sklearn_fit_1thread_ms": sk_fit1_s * 1e3,
        "sklearn_fit_predict_1thread_ms": sk_full1_s * 1e3,
        "speedup_vs_fit": best_fit / jax_s,
        "speedup_vs_fit_predict": best_full / jax_s,
        "jax_n_iter": int(fit.n_iter),
        "jax_status": int(fit.status),
        "sklearn_n_iter": int(g.n_iter_),
        "jax_loglik": score(x, fit.weights, fit.means, fit.variances),
        "sklearn_loglik": score(x, g.weights_, g.means_, g.covariances_),
        "repeats": repeats,
        "sklearn_repeats": sk_repeats,
    }


def machine() -> dict:
    import sklearn

    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover
        load = None
    m = runcache.host("platform", "processor", "cpu_count", "python", "jax", "backend")
    return {
        "platform": m["platform"],
        "processor": m["processor"],
        "cpu_count": m["cpu_count"],
        "python": m["python"],
        "jax": m["jax"],
        "jax_backend": m["backend"],
        "jax_devices": [str(d) for d in jax.devices()],
        "numpy": np.__version__,
        "sklearn": sklearn.__version__,
        "loadavg_at_start": load,
    }


def to_markdown(rows: list[dict], info: dict, command: str) -> str:
    lines = [
        "# GMM fit speed: jitted JAX EM vs sklearn GaussianMixture",
        "",
        f"Command: `{command}`",
        "",
        "Machine: " + ", ".join(f"{k}={v}" for k, v in info.items()),
        "",
        "K = 4, float32 residuals (resampled real 1-D Poisson PINN residuals), sklearn defaults",
        "(tol 1e-3, reg_covar 1e-6, max_iter 100, k-means init, random_state 1224).",
        "Times are medians over repeats in one process; JAX compile time is excluded from the",
        "fit times and listed separately. 'host in/out' adds the residual upload and the (N, K)",
        "responsibility download. Log-likelihoods are per sample, evaluated in float64.",
        "",
        "sklearn is timed with its default thread pools and with `threadpool_limits(1)`",
        "(default / 1 thread); the speed-ups are against the faster of the two.",
        "",
        "| N | JAX fit (ms) | JAX host in/out (ms) | JAX compile (s) | sklearn fit (ms) "
        "| sklearn fit+predict_proba (ms) | speed-up vs fit | speed-up vs fit+predict "
        "| EM iters JAX / sklearn | loglik JAX / sklearn |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['jax_fit_ms']:.2f} | {r['jax_host_io_ms']:.2f} | {r['jax_compile_s']:.2f} "
            f"| {r['sklearn_fit_ms']:.1f} / {r['sklearn_fit_1thread_ms']:.1f} "
            f"| {r['sklearn_fit_predict_ms']:.1f} / {r['sklearn_fit_predict_1thread_ms']:.1f} "
            f"| {r['speedup_vs_fit']:.1f}x | {r['speedup_vs_fit_predict']:.1f}x "
            f"| {r['jax_n_iter']} / {r['sklearn_n_iter']} "
            f"| {r['jax_loglik']:.4f} / {r['sklearn_loglik']:.4f} |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1500, 8000, 100000])
    ap.add_argument("--repeats", type=int, default=20, help="JAX repeats (sklearn: half, >= 5)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    info = machine()
    rows = []
    for n in args.sizes:
        reps = args.repeats if n <= 20000 else max(5, args.repeats // 2)
        sk_reps = max(5, reps // 2)
        rows.append(bench(n, reps, sk_reps))
        r = rows[-1]
        print(
            f"N={n:>7d}  jax {r['jax_fit_ms']:8.2f} ms (host io {r['jax_host_io_ms']:8.2f} ms, "
            f"compile {r['jax_compile_s']:.2f} s)  sklearn fit {r['sklearn_fit_ms']:.1f} / "
            f"{r['sklearn_fit_1thread_ms']:.1f} ms (1 thread), fit+proba {r['sklearn_fit_predict_ms']:.1f} / "
            f"{r['sklearn_fit_predict_1thread_ms']:.1f} ms  speed-up {r['speedup_vs_fit']:.1f}x / "
            f"{r['speedup_vs_fit_predict']:.1f}x  loglik {r['jax_loglik']:.4f} vs {r['sklearn_loglik']:.4f}",
            flush=True,
        )
    command = "python -m benchmarks.gmm_speed" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    md = to_markdown(rows, info, command.strip())
    print()
    print(md)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "gmm_speed.md").write_text(md)
        (RESULTS / "gmm_speed.json").write_text(json.dumps({"machine": info, "command": command, "results": rows}, indent=2))


if __name__ == "__main__":
    main()
