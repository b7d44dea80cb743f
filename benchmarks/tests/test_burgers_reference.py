"""The shipped Burgers reference solutions (``cgmpinn_jax/data/burgers/*.npz``).

Equation: u_t + u u_x = nu u_xx on [-1, 1] x [0, 1], u(x, 0) = -sin(pi x), u(+-1, t) = 0, for
nu = 0.01/pi and nu = 0.01. Made by ``benchmarks/burgers_reference.py``; its accuracy study is
in ``benchmarks/results/burgers_reference.md``. Fast: numpy only, no training.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks import burgers_reference as br

DATA = Path(__file__).resolve().parents[2] / "cgmpinn_jax" / "data" / "burgers"
CASES = {"0.01/pi": ("burgers_nu0.01pi.npz", 0.01 / math.pi), "0.01": ("burgers_nu0.01.npz", 0.01)}
# Last output index at which the 255-point periodic output grid resolves u_x and u_xx
# spectrally: for nu = 0.01/pi the front at x = 0 is far narrower than the grid spacing from
# t ~ 1/pi on; for nu = 0.01 it stays a few grid spacings wide.
RESOLVED_UNTIL = {"0.01/pi": 30, "0.01": 98}


def _load(key):
    with np.load(DATA / CASES[key][0], allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return request.param, _load(request.param)


def test_file_layout(case):
    key, z = case
    assert z["x"].shape == (256,) and z["t"].shape == (101,) and z["u"].shape == (256, 101)
    assert z["u"].dtype == np.float64
    np.testing.assert_array_equal(z["x"], np.linspace(-1, 1, 256))
    np.testing.assert_array_equal(z["t"], np.linspace(0, 1, 101))
    assert float(z["nu"]) == CASES[key][1]
    assert int(z["modes"]) >= 1024 and str(z["method"]) and 0 < float(z["rtol"]) <= 1e-9
    assert (DATA / CASES[key][0]).stat().st_size < 1_000_000


def test_initial_boundary_oddness(case):
    """u(x, 0) = -sin(pi x); u(+-1, t) = 0; u(-x, t) = -u(x, t) (u0 is odd, Burgers keeps it)."""
    _, z = case
    x, u = z["x"], z["u"]
    assert np.abs(u[:, 0] + np.sin(np.pi * x)).max() < 1e-12
    assert np.abs(u[[0, -1], :]).max() < 1e-10
    assert np.abs(x[::-1] + x).max() < 1e-15  # the grid is symmetric
    assert np.abs(u[::-1, :] + u).max() < 1e-10


def _residuals(z, nu):
    """(r, r - (dt^2/6) D3 u, scale) at the interior output times j = 2..99.

    u_x, u_xx: spectral differentiation on the output grid without its last point (255 equispaced
    points of period 2); u_t: the centred difference (u_{j+1} - u_{j-1}) / (2 dt), whose
    truncation error is (dt^2/6) u_ttt + O(dt^4). D3 u = (u_{j+2} - 2u_{j+1} + 2u_{j-1} -
    u_{j-2}) / (2 dt^3) is u_ttt to O(dt^2). scale: max_x |u u_x| + max_x |nu u_xx| per time."""
    u, t = z["u"][:-1], z["t"]
    dt = t[1] - t[0]
    m = u.shape[0]
    k = np.pi * np.arange(m // 2 + 1)
    v = np.fft.rfft(u, axis=0)
    ux = np.fft.irfft(1j * k[:, None] * v, m, axis=0)
    uxx = np.fft.irfft(-(k**2)[:, None] * v, m, axis=0)
    j = np.arange(2, len(t) - 2)
    ut = (u[:, j + 1] - u[:, j - 1]) / (2 * dt)
    d3 = (u[:, j + 2] - 2 * u[:, j + 1] + 2 * u[:, j - 1] - u[:, j - 2]) / (2 * dt**3)
    adv, dif = u[:, j] * ux[:, j], nu * uxx[:, j]
    r = ut + adv - dif
    scale = np.abs(adv).max(axis=0) + np.abs(dif).max(axis=0)
    return j, r, r - dt**2 / 6 * d3, scale, dt, d3


@pytest.mark.parametrize("key", sorted(CASES))
def test_pde_residual(key):
    """The residual u_t + u u_x - nu u_xx on the shipped grid is the time difference's error.

    Bounds, at the times the output grid resolves u in x: (a) |r| is at most the leading
    truncation term (dt^2/6) max|u_ttt| (5% slack for its O(dt^2) estimate) plus 1e-4 of the
    terms' size (the spectral derivatives of the 255-point grid as the front steepens);
    (b) with that leading term removed, what remains (O(dt^4) and the grid's derivative error)
    is below 5e-4 (nu = 0.01/pi, up to t = 0.3) or 1e-4 (nu = 0.01) of the terms' size. The
    same residual with nu off by 1% fails (b): the check sees the viscous term."""
    z = _load(key)
    nu = CASES[key][1]
    j, r, rc, scale, dt, d3 = _residuals(z, nu)
    sel = j <= RESOLVED_UNTIL[key]
    lead = dt**2 / 6 * np.abs(d3).max(axis=0)
    assert np.all(np.abs(r).max(axis=0)[sel] <= 1.05 * lead[sel] + 1e-4 * scale[sel])
    tol = 5e-4 if key == "0.01/pi" else 1e-4
    assert np.all(np.abs(rc).max(axis=0)[sel] <= tol * scale[sel])
    _, _, rc_wrong, scale_w, _, _ = _residuals(z, 1.01 * nu)
    assert np.any(np.abs(rc_wrong).max(axis=0)[sel] > tol * scale_w[sel])


@pytest.mark.parametrize("key", sorted(CASES))
def test_coarse_recompute_matches(key):
    """The script's solver at N = 256 points, step 1e-4, up to t = 0.1 (u still smooth there)
    agrees with the shipped file at t = 0, 0.01, ..., 0.1 to near round-off."""
    z = _load(key)
    coef = br.solve(CASES[key][1], 256, 100, n_out=10)
    u = br.evaluate(coef, z["x"])
    assert np.abs(u - z["u"][:, :11]).max() < 1e-12


@pytest.mark.parametrize("key", sorted(CASES))
def test_cole_hopf_spot_check(key):
    """The Cole-Hopf integral (an independent solution) at every x of the grid at four times,
    the front included."""
    z = _load(key)
    for jt in (10, 30, 50, 100):
        ch = br.cole_hopf(CASES[key][1], z["x"], float(z["t"][jt]))
        assert np.abs(ch - z["u"][:, jt]).max() < 1e-11


def test_sine_series_evaluation_exact_at_boundary():
    """The series is summed with k x reduced mod 2, so u(+-1) = 0 exactly, and a pure mode is
    reproduced."""
    coef = np.zeros((5, 1))
    coef[2, 0] = 1.0
    x = np.linspace(-1, 1, 9)
    u = br.evaluate(coef, x)[:, 0]
    assert u[0] == 0.0 and u[-1] == 0.0
    np.testing.assert_allclose(u, np.sin(3 * np.pi * x), atol=1e-15)
