"""Reference solution of the viscous Burgers equation, the PINN benchmark problem.

The problem, on x in [-1, 1], t in [0, 1]::

    u_t + u u_x = nu u_xx,    u(x, 0) = -sin(pi x),    u(-1, t) = u(1, t) = 0,

for ``nu = 0.01/pi`` (Raissi et al.; PINNacle's ``burgers1d``: a steep front at x = 0 forms
near t = 1/pi and stays) and ``nu = 0.01`` (DSGNAR, Webb et al. 2026).

Method (Fourier pseudo-spectral in x with the 2/3 rule, ETDRK4 in t) and checks (2N points,
steps 2h and h/2, Cole-Hopf, PINNacle's COMSOL solution via ``--comsol PATH``): "How the
Burgers reference is made" in docs/problems-from-data.md.

    python -m benchmarks.burgers_reference                    # both viscosities: the npz files
    python -m benchmarks.burgers_reference --nu 0.01/pi --check

Writes ``cgmpinn_jax/data/burgers/burgers_nu0.01pi.npz`` and ``burgers_nu0.01.npz`` (``x`` (256,),
``t`` (101,), ``u[i, j] = u(x_i, t_j)``, ``nu``, ``modes``, ``method``, ``step``: h, ``rtol``: the
relative L2 error ``--check`` shows the settings stay below), with ``--check`` the results files.
Float64 numpy throughout, on one thread (OMP_NUM_THREADS=1 for the series sum's BLAS call).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
DATA = ROOT / "cgmpinn_jax" / "data" / "burgers"
COMSOL_MIRROR = Path("/work/.mirror/i207M+PINNacle/repo")

VISCOSITIES = {"0.01/pi": 0.01 / math.pi, "0.01": 0.01}
FILES = {"0.01/pi": "burgers_nu0.01pi.npz", "0.01": "burgers_nu0.01.npz"}
# (points N, steps per output interval of 0.01) of the shipped reference
SETTINGS = {"0.01/pi": (4096, 200), "0.01": (2048, 200)}
METHOD = "Fourier pseudo-spectral (2/3 rule), ETDRK4 fixed step"
RTOL = 1e-9  # the relative L2 error the shipped reference is to stay below

X_OUT = np.linspace(-1.0, 1.0, 256)
T_OUT = np.linspace(0.0, 1.0, 101)
DT_OUT = 0.01


# ----------------------------------------------------------------------------- the solver
def _phi123(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """phi_1, phi_2, phi_3 of real z <= 0: phi_k(z) = sum_j z^j / (j + k)!."""
    z = np.asarray(z, dtype=np.float64)
    small = np.abs(z) < 1.0
    zs = np.where(small, z, 0.0)
    out = []
    for k in (1, 2, 3):
        term = np.full_like(z, 1.0 / math.factorial(k))
        acc = term.copy()
        for j in range(1, 30):
            term = term * zs / (j + k)
            acc = acc + term
        out.append(acc)
    zb = np.where(small, -1.0, z)
    ez = np.exp(zb)
    big = ((ez - 1.0) / zb, (ez - 1.0 - zb) / zb**2, (ez - 1.0 - zb - zb**2 / 2.0) / zb**3)
    return tuple(np.where(small, s, b) for s, b in zip(out, big))


def solve(
    nu: float, n: int, steps_per_output: int, n_out: int = 100, dt_out: float = DT_OUT
) -> np.ndarray:
    """Sine coefficients ``b[k-1, j]`` (k = 1..K, K = n // 3) of u(., j dt_out), j = 0..n_out.

    ``u(x, t_j) = sum_k b[k-1, j] sin(pi k x)``; ETDRK4 with step h = dt_out / steps_per_output
    on the pseudo-spectral system of the module docstring, n collocation points."""
    if n % 2:
        raise ValueError("n must be even")
    kmax = n // 3
    k = np.arange(kmax + 1, dtype=np.float64)
    h = dt_out / steps_per_output
    lin = -nu * (math.pi * k) ** 2
    e, e2 = np.exp(h * lin), np.exp(h * lin / 2.0)
    p1h = _phi123(h * lin / 2.0)[0]
    p1, p2, p3 = _phi123(h * lin)
    q = (h / 2.0) * p1h  # (e^{Lh/2} - 1) / L
    f1 = h * (p1 - 3.0 * p2 + 4.0 * p3)
    f2 = h * 2.0 * (p2 - 2.0 * p3)
    f3 = h * (4.0 * p3 - p2)
    g = -0.5j * math.pi * k  # -(1/2) d/dx

    def nonlin(v):
        u = np.fft.irfft(v, n)  # zero-padded: modes above K are zero
        return g * np.fft.rfft(u * u)[: kmax + 1]

    x = -1.0 + 2.0 * np.arange(n) / n
    v = np.fft.rfft(-np.sin(np.pi * x))[: kmax + 1]
    v[0] = 0.0
    sign = (-1.0) ** np.arange(1, kmax + 1)
    coef = np.empty((kmax, n_out + 1))
    coef[:, 0] = -(2.0 / n) * sign * v[1:].imag
    for j in range(1, n_out + 1):
        for _ in range(steps_per_output):
            nv = nonlin(v)
            a = e2 * v + q * nv
            na = nonlin(a)
            b = e2 * v + q * na
            nb = nonlin(b)
            c = e2 * a + q * (2.0 * nb - nv)
            nc = nonlin(c)
            v = e * v + f1 * nv + f2 * (na + nb) + f3 * nc
        coef[:, j] = -(2.0 / n) * sign * v[1:].imag
    return coef


def evaluate(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``u[i, j] = sum_k coef[k-1, j] sin(pi k x_i)``: the sine series at the points x.

    The argument k x is reduced to r in [0, 2) and sin(pi r) taken as sin(pi m), m in [-1/2, 1/2]
    (m = r, 1 - r or r - 2), so sin(pi k x) is exactly 0 wherever k x is an integer: u(+-1) = 0."""
    k = np.arange(1, coef.shape[0] + 1, dtype=np.float64)
    r = np.remainder(np.outer(np.asarray(x, np.float64), k), 2.0)
    m = np.where(r <= 0.5, r, np.where(r <= 1.5, 1.0 - r, r - 2.0))
    return np.sin(np.pi * m) @ coef


def reference(nu: float, n: int, steps_per_output: int) -> np.ndarray:
    """u on the output grid, ``u[i, j] = u(X_OUT[i], T_OUT[j])``, from :func:`solve`."""
    return evaluate(solve(nu, n, steps_per_output), X_OUT)


# ----------------------------------------------------------------------------- Cole-Hopf
def cole_hopf(nu: float, x: np.ndarray, t: float, refine: int = 8) -> np.ndarray:
    """u(x, t) for t > 0 from the Cole-Hopf integral of the module docstring.

    Trapezoidal rule in eta on [-L, L] with L^2 / (4 nu t) = 1 / (pi nu) + 40 (beyond it the
    integrand is below exp(-40) times its maximum) and spacing min(sigma, w) / refine, where
    sigma = sqrt(2 nu t) is the width of the Gaussian and w = sqrt(2 nu / pi) that of f's peaks."""
    x = np.asarray(x, dtype=np.float64)
    a = 1.0 / (2.0 * math.pi * nu)
    sigma = math.sqrt(2.0 * nu * t)
    half = sigma * math.sqrt(2.0 * (2.0 * a + 40.0))
    d = min(sigma, 1.0 / (math.pi * math.sqrt(a))) / refine
    m = int(math.ceil(half / d))
    eta = np.linspace(-half, half, 2 * m + 1)
    y = x[:, None] - eta[None, :]
    expo = -a * np.cos(np.pi * y) - eta[None, :] ** 2 / (2.0 * sigma**2)
    w = np.exp(expo - expo.max(axis=1, keepdims=True))
    return -(np.sin(np.pi * y) * w).sum(axis=1) / w.sum(axis=1)


def cole_hopf_grid(
    nu: float, x: np.ndarray = X_OUT, t: np.ndarray = T_OUT, refine: int = 8
) -> np.ndarray:
    """:func:`cole_hopf` at every (x_i, t_j); the t = 0 column is the initial value."""
    out = np.empty((len(x), len(t)))
    for j, tj in enumerate(t):
        out[:, j] = -np.sin(np.pi * x) if tj == 0 else cole_hopf(nu, x, tj, refine)
    return out


# ----------------------------------------------------------------------------- COMSOL
def read_comsol(path: str | None) -> np.ndarray | None:
    """PINNacle's ``ref/burgers1d.dat`` as an array (rows: x, then u at t = 0, 0.1, ..., 1).

    ``path`` a text file; None: read it from the local PINNacle mirror if there is one."""
    if path is not None:
        text = Path(path).read_text()
    elif (COMSOL_MIRROR / "HEAD").exists() or (COMSOL_MIRROR / ".git").exists():
        try:
            text = subprocess.run(
                ["git", "-C", str(COMSOL_MIRROR), "show", "HEAD:ref/burgers1d.dat"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
    else:
        return None
    rows = [
        list(map(float, ln.split()))
        for ln in text.splitlines()
        if ln.strip() and not ln.lstrip().startswith("%")
    ]
    return np.array(rows)


def _diff(a: np.ndarray, ref: np.ndarray) -> dict:
    d = a - ref
    return {"max": float(np.abs(d).max()), "rel_l2": float(np.linalg.norm(d) / np.linalg.norm(ref))}


# ----------------------------------------------------------------------------- the study
def check(key: str, comsol: str | None = None) -> tuple[dict, np.ndarray]:
    """The shipped computation and its checks (space 2N, time 2h and h/2, Cole-Hopf, COMSOL)."""
    nu = VISCOSITIES[key]
    n, s = SETTINGS[key]
    t0 = time.perf_counter()
    coef = solve(nu, n, s)
    wall = time.perf_counter() - t0
    u = evaluate(coef, X_OUT)
    rec = {
        "nu": key,
        "nu_value": nu,
        "modes": n,
        "kept_modes": n // 3,
        "method": METHOD,
        "step": DT_OUT / s,
        "rtol": RTOL,
        "wall_s": round(wall, 2),
    }
    print(f"nu={key}: N={n}, h={DT_OUT / s:g}: {wall:.1f} s", flush=True)
    runs = {"space_2N": (2 * n, s), "time_2h": (n, s // 2), "time_h/2": (n, 2 * s)}
    for name, (nn, ss) in runs.items():
        t0 = time.perf_counter()
        other = reference(nu, nn, ss)
        rec[name] = dict(
            _diff(u, other), modes=nn, step=DT_OUT / ss, wall_s=round(time.perf_counter() - t0, 2)
        )
        print(f"  vs {name} (N={nn}, h={DT_OUT / ss:g}): {rec[name]}", flush=True)
    # error estimates of the shipped u: space from 2N; time: ETDRK4 is fourth order, so the error
    # of step h is about |u_h - u_{2h}| / 15 (and |u_h - u_{h/2}| * 16/15)
    est_t = max(rec["time_2h"]["rel_l2"] / 15.0, rec["time_h/2"]["rel_l2"] * 16.0 / 15.0)
    rec["estimated_rel_l2"] = rec["space_2N"]["rel_l2"] + est_t
    t0 = time.perf_counter()
    ch = cole_hopf_grid(nu)
    ch2 = cole_hopf_grid(nu, refine=16)
    rec["cole_hopf"] = dict(
        _diff(u, ch),
        points=int(ch.size),
        quadrature_self=_diff(ch, ch2)["max"],
        wall_s=round(time.perf_counter() - t0, 2),
    )
    print(f"  vs Cole-Hopf: {rec['cole_hopf']}", flush=True)
    if key == "0.01/pi":
        data = read_comsol(comsol)
        if data is not None:
            xc, uc = data[:, 0], data[:, 1:]
            ours = evaluate(coef[:, ::10], xc)
            front = np.abs(xc) >= 0.1
            odd = np.allclose(xc[::-1], -xc, atol=1e-12)
            imax, jmax = np.unravel_index(np.abs(ours - uc).argmax(), uc.shape)
            rec["comsol"] = dict(
                _diff(ours, uc),
                points=int(uc.size),
                away_from_front=_diff(ours[front], uc[front]),
                t01=_diff(ours[:, 1], uc[:, 1]),
                t0=_diff(ours[:, 0], uc[:, 0]),
                own_oddness_defect=float(np.abs(uc[::-1] + uc).max()) if odd else None,
                cole_hopf_vs_comsol=_diff(cole_hopf_grid(nu, xc, T_OUT[::10]), uc),
                max_at={"x": float(xc[imax]), "t": float(T_OUT[::10][jmax])},
                source="PINNacle ref/burgers1d.dat (COMSOL 6.0)",
            )
            print(f"  vs PINNacle COMSOL: {rec['comsol']}", flush=True)
    return rec, u


def write_npz(key: str, u: np.ndarray) -> Path:
    """``cgmpinn_jax/data/burgers/<FILES[key]>``."""
    n, s = SETTINGS[key]
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / FILES[key]
    np.savez_compressed(
        path,
        x=X_OUT,
        t=T_OUT,
        u=u,
        nu=np.float64(VISCOSITIES[key]),
        modes=np.int64(n),
        method=np.str_(METHOD),
        rtol=np.float64(RTOL),
        step=np.float64(DT_OUT / s),
    )
    return path


def _fmt(d: dict) -> str:
    return f"{d['rel_l2']:.1e} / {d['max']:.1e}"


def write_results(records: dict, command: str | None) -> None:
    """``burgers_reference.json`` (one compact record; ``records`` merged into its rows) and
    ``burgers_reference.md`` from it. ``records`` empty and ``command`` None: rebuild the md."""
    RESULTS.mkdir(exist_ok=True)
    jpath = RESULTS / "burgers_reference.json"
    old = json.loads(jpath.read_text()) if jpath.exists() else {}
    rows = dict(old.get("rows", {}))
    rows.update(records)
    if records or not old:
        doc = {
            "study": "burgers_reference",
            "date": _dt.date.today().isoformat(),
            "machine": machine.machine_text("{cpu_model}, {cpu_count} cores")
            + f", one thread (numpy {np.__version__})",
            "command": command,
            "commit": machine.code_commit(),
            "rows": rows,
        }
        jpath.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    else:
        doc = old
    command = doc["command"]
    lines = [
        "# Burgers reference solutions",
        "",
        "u_t + u u_x = nu u_xx on [-1, 1] x [0, 1], u(x, 0) = -sin(pi x), "
        "u(+-1, t) = 0; shipped as",
        "`cgmpinn_jax/data/burgers/burgers_nu0.01pi.npz` and `burgers_nu0.01.npz` "
        "(x = linspace(-1, 1, 256),",
        "t = linspace(0, 1, 101)). Made by `benchmarks/burgers_reference.py`: "
        "Fourier pseudo-spectral in x",
        "(N points, modes up to N/3 kept: the 2/3 rule), ETDRK4 in t with fixed step h, "
        "float64; the sine",
        "series is summed at the output points. Differences are relative L2 / max abs "
        "over the whole",
        "output grid (256 x 101).",
        "",
        "| nu | N (kept modes) | method | step h | vs 2N | vs step 2h | vs step h/2 | "
        "estimated error (rel L2) | vs Cole-Hopf | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, r in ((k, rows[k]) for k in ("0.01/pi", "0.01") if k in rows):
        lines.append(
            f"| {key} | {r['modes']} ({r['kept_modes']}) | ETDRK4 | {r['step']:g} "
            f"| {_fmt(r['space_2N'])} | {_fmt(r['time_2h'])} | {_fmt(r['time_h/2'])} "
            f"| {r['estimated_rel_l2']:.1e} | {_fmt(r['cole_hopf'])} | {r['wall_s']:.1f} |"
        )
    lines += [
        "",
        "Estimated error: difference to 2N plus the time-step error of ETDRK4 (fourth order: the",
        "difference to step 2h / 15, or to step h/2 x 16/15, the larger). Wall: the shipped",
        "computation alone (numpy, one thread; the machine is shared, so timings vary "
        "by up to 2x).",
        "Cole-Hopf: the integral formula (heat-kernel convolution, trapezoidal rule) "
        "at every grid point",
        "with t > 0, an independent solution; its own quadrature (spacing halved) "
        "changes it by at most "
        + ", ".join(
            f"{rows[k]['cole_hopf']['quadrature_self']:.0e} (nu = {k})"
            for k in ("0.01/pi", "0.01")
            if k in rows
        )
        + ".",
    ]
    c = rows.get("0.01/pi", {}).get("comsol")
    if c:
        odd = "n/a" if c["own_oddness_defect"] is None else f"{c['own_oddness_defect']:.1e}"
        lines += [
            "",
            "PINNacle's COMSOL reference for nu = 0.01/pi (`ref/burgers1d.dat`: x = -1:0.02:1,",
            "t = 0, 0.1, ..., 1; a finite-element solution), against ours summed at its points:",
            "",
            "| points | all: rel L2 / max | \\|x\\| >= 0.1: rel L2 / max | t = 0.1: rel L2 / max "
            "| t = 0: rel L2 / max | COMSOL's max \\|u(-x) + u(x)\\| |",
            "|---|---|---|---|---|---|",
            f"| {c['points']} | {_fmt(c)} | {_fmt(c['away_from_front'])} | {_fmt(c['t01'])} "
            f"| {_fmt(c['t0'])} | {odd} |",
            "",
            "The Cole-Hopf integral at COMSOL's points differs from COMSOL by "
            f"{_fmt(c['cole_hopf_vs_comsol'])} (rel L2 / max),",
            "as ours does: the differences are COMSOL's discretisation error. The largest is at",
            f"x = {c['max_at']['x']:g}, t = {c['max_at']['t']:g}, next to the front (and, COMSOL's",
            "solution being odd to the last column's size, at -x too).",
        ]
    lines += [
        "",
        f"Machine: {doc['machine']}. Date: {doc['date']}.",
        "",
        f"Command: `{command}`",
        "",
    ]
    (RESULTS / "burgers_reference.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument(
        "--nu",
        choices=sorted(VISCOSITIES),
        action="append",
        help="viscosity (repeatable; default both)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="also run the convergence study, Cole-Hopf and COMSOL comparisons and "
        "write benchmarks/results/burgers_reference.{md,json}",
    )
    p.add_argument("--comsol", default=None, help="PINNacle's ref/burgers1d.dat (text)")
    p.add_argument("--no-write", action="store_true", help="write no npz")
    p.add_argument(
        "--build-only",
        action="store_true",
        help="only rebuild burgers_reference.md from burgers_reference.json",
    )
    args = p.parse_args(argv)
    if args.build_only:
        write_results({}, None)
        return 0
    keys = args.nu or ["0.01/pi", "0.01"]
    records = {}
    for key in keys:
        if args.check:
            records[key], u = check(key, args.comsol)
        else:
            t0 = time.perf_counter()
            u = reference(VISCOSITIES[key], *SETTINGS[key])
            print(f"nu={key}: {time.perf_counter() - t0:.1f} s", flush=True)
        if not args.no_write:
            print("  wrote", write_npz(key, u).relative_to(ROOT), flush=True)
    if args.check:
        argv = sys.argv[1:] if argv is None else argv
        write_results(
            records,
            (
                "OMP_NUM_THREADS=1 python -m benchmarks.burgers_reference " + shlex.join(argv)
            ).strip(),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
