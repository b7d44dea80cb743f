"""Generate real PINN residual vectors for the GMM tests (run once; outputs are committed).

Trains a plain tanh MLP (1 -> 50 x 4 -> 1, PyTorch-default uniform init) on the 1-D Poisson
problem u_xx = f on [0, 1] with exact solution u = sin(5 pi x) cos(3 pi x) + tanh(20 x)
(f = u_xx of the exact solution, by autodiff), 1500 uniformly random collocation points, Dirichlet
data u(0), u(1), Adam lr 1e-3 on mean(r^2) + mean(bc^2).  Saves the float32 PDE residual vector
r = u_xx - f at the collocation points after 0, 1000 and 3000 Adam steps as
residuals_early.npy / residuals_mid.npy / residuals_late.npy next to this file.

Standalone on purpose (does not import cgmpinn_jax).  Usage:

    python tests/data/make_residuals.py
"""

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import optax

HERE = pathlib.Path(__file__).resolve().parent
P = jax.lax.Precision.HIGHEST


def exact(x):
    return jnp.sin(5 * jnp.pi * x) * jnp.cos(3 * jnp.pi * x) + jnp.tanh(20 * x)


def second_derivative(fn):
    return jax.grad(jax.grad(fn))


def init_mlp(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, kw, kb = jax.random.split(key, 3)
        bound = 1.0 / np.sqrt(fan_in)
        w = jax.random.uniform(kw, (fan_in, fan_out), minval=-bound, maxval=bound)
        b = jax.random.uniform(kb, (fan_out,), minval=-bound, maxval=bound)
        params.append((w, b))
    return params


def mlp(params, x):  # scalar -> scalar
    h = jnp.reshape(x, (1,))
    for w, b in params[:-1]:
        h = jnp.tanh(jnp.dot(h, w, precision=P) + b)
    w, b = params[-1]
    return (jnp.dot(h, w, precision=P) + b)[0]


def main():
    key = jax.random.PRNGKey(1224)
    key, kx, kp = jax.random.split(key, 3)
    x = jax.random.uniform(kx, (1500,), dtype=jnp.float32)
    f = jax.vmap(second_derivative(exact))(x)
    xb = jnp.array([0.0, 1.0], jnp.float32)
    ub = exact(xb)
    params = init_mlp(kp, [1, 50, 50, 50, 50, 1])

    def residual(params):
        uxx = jax.vmap(second_derivative(lambda z: mlp(params, z)))(x)
        return uxx - f

    def loss(params):
        r = residual(params)
        bc = jax.vmap(lambda z: mlp(params, z))(xb) - ub
        return jnp.mean(r**2) + jnp.mean(bc**2)

    opt = optax.adam(1e-3)
    state = opt.init(params)

    @jax.jit
    def chunk(params, state, n):
        def body(_, carry):
            p, s = carry
            g = jax.grad(loss)(p)
            upd, s = opt.update(g, s, p)
            return optax.apply_updates(p, upd), s

        return jax.lax.fori_loop(0, n, body, (params, state))

    res_fn = jax.jit(residual)
    done = 0
    for name, step in [("early", 0), ("mid", 1000), ("late", 3000)]:
        if step > done:
            params, state = chunk(params, state, step - done)
            done = step
        r = np.asarray(res_fn(params), dtype=np.float32)
        np.save(HERE / f"residuals_{name}.npy", r)
        print(f"step {step:5d}: loss {float(loss(params)):.4e}  |r| max {np.abs(r).max():.3e}")


if __name__ == "__main__":
    main()
