"""ReLoBRaLo loss balancing as an optax-style ``(init, update)`` pair (docs/reference-code.md §7).

Paper Eqs. relobralo_ema, relobralo_ref, relobralo_weight::

    EMA_c(k)    = alpha EMA_c(k-1) + (1 - alpha) L_c(k)
    L_ref_c(k)  = EMA_c(k-1) with probability rho, else L_c(k') for a uniform k' < k
    lambda_c(k) = C softmax_c(L_c(k) / (L_ref_c(k) + 1e-8) / T)

``variant="reference"`` (default) is what the authors' code does (class ``ReLoBRaLoWeights``),
which differs from the paper in one place: the EMA is updated with the *current* losses
*before* it is used as the reference (the paper uses the EMA of the previous step).  Per
``update(L)`` call:

1. append ``L`` to the history;
2. first call ever: ``EMA <- L``, lambdas stay as they are (ones), return;
3. ``EMA <- alpha EMA + (1 - alpha) L``;
4. with probability ``rho``: ``ref = EMA``; else ``ref = history[j]``, ``j`` uniform over the
   strictly earlier calls;
5. ``lambda = C softmax((L / (ref + 1e-8)) / T)``.

Choices made here:

* **Fixed-size history.**  The reference keeps an unbounded Python list.  Here the history is a
  ring buffer of ``history_size`` rows (default 20000: the longest reference budget is
  8000 Adam steps + 12000 L-BFGS iterations = 20000 calls, one call per Adam step / L-BFGS
  iteration, because this project freezes lambda within an L-BFGS iteration -- see
  docs/reference-code.md §15, §16).
  Within that budget nothing is ever overwritten and the lookback is exactly the reference's.
  Past ``history_size`` calls the lookback is uniform over the ``history_size - 1`` most recent
  earlier calls that are still in the buffer.
* **Explicit randomness.**  The PRNG key is part of the state and split once per call.  The two
  draws (``u`` for the Bernoulli, ``j`` for the lookback index, see `relobralo_draws`) are
  fed to the pure `relobralo_step`, so the formula can be tested against an independent
  implementation driven by the same draws.  (The reference uses numpy's global RNG.)
* Losses are treated as constants (``stop_gradient``); so are the returned lambdas.

``variant="original"`` is the ReLoBRaLo of Bischof & Kraus (2021, "Multi-objective loss
balancing for physics-informed deep learning"), written from that paper's definition::

    lambda_bal(t, t') = C softmax(L(t) / (L(t') + 1e-8) / T)
    lambda_hist(t)    = b lambda(t-1) + (1 - b) lambda_bal(t, 0),   b ~ Bernoulli(rho)
    lambda(t)         = alpha lambda_hist(t) + (1 - alpha) lambda_bal(t, t-1)

with ``lambda(0) = 1`` and the first call storing ``L(0)``.  It keeps an EMA of the *weights*
rather than of the losses and has no random lookback into the history (the history buffer is
unused and has a single row).  The ``1e-8`` in the ratio is this implementation's guard.

Examples:
    >>> import jax, jax.numpy as jnp
    >>> bal = relobralo(2)
    >>> state = bal.init(jax.random.PRNGKey(0))
    >>> lam, state = bal.update(jnp.array([1.0, 1.0]), state)    # first call: ones
    >>> lam, state = bal.update(jnp.array([10.0, 0.1]), state)
    >>> bool(lam[0] > lam[1]), round(float(lam.sum()), 5)
    (True, 2.0)
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from cgmpinn_jax._checks import check_static_int as _check_static_int
from cgmpinn_jax._checks import concrete_float as _concrete_float

__all__ = [
    "ReLoBRaLoState",
    "Balancing",
    "relobralo",
    "relobralo_step",
    "relobralo_draws",
    "no_balancing",
]

_RATIO_EPS = 1e-8
_VARIANTS = ("reference", "original")


class ReLoBRaLoState(NamedTuple):
    """The state of a [`Balancing`][cgmpinn_jax.weighting.Balancing] of ``C`` loss terms (a
    pytree of arrays), from [`relobralo`][cgmpinn_jax.weighting.relobralo] or
    [`no_balancing`][cgmpinn_jax.weighting.no_balancing].

    Attributes:
        lambdas: ``(C,)`` float array, the current term weights (ones initially).
        ema: ``(C,)`` float array, the exponential moving average of the losses (the
            ``"reference"`` variant).
        history: ``(H, C)`` float array, the ring buffer of past losses; call ``t`` is stored
            in row ``t % H``.
        count: ``()`` int32, the number of ``update`` calls so far.
        key: the PRNG key, split once per call.
        initial_losses: ``(C,)`` float array, the losses of the first call ``L(0)`` (the
            ``"original"`` variant).
        previous_losses: ``(C,)`` float array, the losses of the previous call ``L(t-1)`` (the
            ``"original"`` variant).
    """

    lambdas: jax.Array
    ema: jax.Array
    history: jax.Array
    count: jax.Array  # type: ignore[assignment]
    key: jax.Array
    initial_losses: jax.Array
    previous_losses: jax.Array


class Balancing(NamedTuple):
    """A balancing of the ``C`` loss terms as an ``(init, update)`` pair of pure functions, in
    the style of optax.

    The training engine calls ``update`` once per Adam step or second-stage iteration and
    weights the loss terms with the returned lambdas, ``sum_c lambda_c L_c``.

    Attributes:
        init: ``init(key, dtype=None) -> state``, the initial
            [`ReLoBRaLoState`][cgmpinn_jax.weighting.ReLoBRaLoState] (lambdas all ones) from a
            PRNG key; ``dtype`` defaults to JAX's default float.
        update: ``update(losses, state) -> (lambdas, new_state)`` with ``losses`` and
            ``lambdas`` ``(C,)`` float arrays.
    """

    init: Callable
    update: Callable


def _check_unit_interval(name, value):
    v = _concrete_float(value)
    if v is not None and not 0.0 <= v <= 1.0:
        raise ValueError(f"`{name}` must lie in [0, 1], got {value!r}")


def _check_positive(name, value):
    v = _concrete_float(value)
    if v is not None and not v > 0.0:
        raise ValueError(f"`{name}` must be > 0, got {value!r}")


def _balanced(losses, ref, temperature):
    c = losses.shape[0]
    return c * jax.nn.softmax((losses / (ref + _RATIO_EPS)) / temperature)


def relobralo_draws(key, count, history_size):
    """The random draws of one ReLoBRaLo call (what
    [`relobralo`][cgmpinn_jax.weighting.relobralo]'s ``update`` feeds to
    [`relobralo_step`][cgmpinn_jax.weighting.relobralo_step]).

    Args:
        key: the PRNG key of the state.
        count: ``()`` int, the number of calls before this one (the state's ``count``).
        history_size: H, the length of the ring buffer (a Python int).

    Returns:
        ``(new_key, u, j)``: ``u ~ U[0, 1)`` (the reference's ``rand() < rho`` test) and
        ``j`` a call index drawn uniformly from ``[max(0, count - H + 1), count - 1]``
        (the strictly earlier calls still in the buffer; 0 when there is none).

    Examples:
        >>> k, u, j = relobralo_draws(jax.random.PRNGKey(0), jnp.int32(5), 100)
        >>> 0 <= int(j) < 5 and 0.0 <= float(u) < 1.0
        True
    """
    new_key, k_u, k_j = jax.random.split(key, 3)
    u = jax.random.uniform(k_u, ())
    lo = jnp.maximum(count - history_size + 1, 0)
    hi = jnp.maximum(count, lo + 1)
    j = jax.random.randint(k_j, (), lo, hi, dtype=jnp.int32)
    return new_key, u, j


def relobralo_step(
    losses,
    state: ReLoBRaLoState,
    u,
    j,
    *,
    alpha=0.999,
    temperature=1.0,
    rho=0.99,
    variant="reference",
):
    r"""One ReLoBRaLo update with the random draws given: a pure function, used by
    [`relobralo`][cgmpinn_jax.weighting.relobralo], that can be checked against an
    independent implementation driven by the same draws.

    The ``"reference"`` variant, on every call after the first (which only stores the
    losses $L$):

    $$
    \bar L \leftarrow \alpha\, \bar L + (1 - \alpha)\, L, \qquad
    L^{\mathrm{ref}} = \begin{cases} \bar L & u < \rho \\ L(j) & \text{otherwise} \end{cases},
    \qquad
    \lambda = C\, \mathrm{softmax}\left(\frac{L / (L^{\mathrm{ref}} + 10^{-8})}{T}\right).
    $$

    Args:
        losses: ``(C,)`` float array, the current loss terms ``L`` (treated as constants).
        state: the [`ReLoBRaLoState`][cgmpinn_jax.weighting.ReLoBRaLoState] before the call
            (its key is returned unchanged).
        u: ``()`` uniform draw in ``[0, 1)``; ``u < rho`` selects the moving-average reference
            (``"reference"`` variant) or keeps the weight memory (``"original"`` variant).
        j: ``()`` int, the global index of an earlier call whose losses are the lookback
            reference (``"reference"`` variant; read from row ``j % H``; ignored when
            ``u < rho`` and on the first call).
        alpha: the moving-average coefficient in ``[0, 1]`` (default 0.999).
        temperature: the softmax temperature ``> 0`` (default 1.0).
        rho: the probability of the moving-average reference in ``[0, 1]`` (default 0.99).
        variant: ``"reference"`` (the authors' code, default) or ``"original"`` (Bischof and
            Kraus, 2021); see [`relobralo`][cgmpinn_jax.weighting.relobralo].

    Returns:
        ``(lambdas, new_state)``: the ``(C,)`` term weights (they sum to ``C``) and the
        [`ReLoBRaLoState`][cgmpinn_jax.weighting.ReLoBRaLoState] after the call.

    Raises:
        ValueError: an unknown ``variant``.

    Examples:
        >>> s = relobralo(2).init(jax.random.PRNGKey(0))
        >>> lam, s = relobralo_step(jnp.array([1.0, 2.0]), s, 0.5, 0)
        >>> lam.tolist(), int(s.count)
        ([1.0, 1.0], 1)
    """
    losses = lax.stop_gradient(jnp.asarray(losses, state.lambdas.dtype))
    count = state.count
    first = count == 0
    use_ema = u < rho
    if variant == "reference":
        h = state.history.shape[0]
        history = state.history.at[count % h].set(losses)
        ema = jnp.where(first, losses, alpha * state.ema + (1.0 - alpha) * losses)
        ref = jnp.where(use_ema, ema, history[j % h])
        lam = jnp.where(first, state.lambdas, _balanced(losses, ref, temperature))
        new_state = state._replace(lambdas=lam, ema=ema, history=history, count=count + 1)
    elif variant == "original":
        init_l = jnp.where(first, losses, state.initial_losses)
        bal_prev = _balanced(losses, state.previous_losses, temperature)
        bal_init = _balanced(losses, init_l, temperature)
        hist = jnp.where(use_ema, state.lambdas, bal_init)
        lam = jnp.where(first, state.lambdas, alpha * hist + (1.0 - alpha) * bal_prev)
        new_state = state._replace(
            lambdas=lam, count=count + 1, initial_losses=init_l, previous_losses=losses
        )
    else:
        raise ValueError(f"`variant` must be one of {_VARIANTS}, got {variant!r}")
    lam = lax.stop_gradient(lam)
    return lam, new_state


def _make_init(n_terms, history_rows):
    def init(key, dtype=None):
        dtype = jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype
        ones = jnp.ones((n_terms,), dtype)
        zeros = jnp.zeros((n_terms,), dtype)
        return ReLoBRaLoState(
            lambdas=ones,
            ema=zeros,
            history=jnp.zeros((history_rows, n_terms), dtype),
            count=jnp.zeros((), jnp.int32),
            key=key,
            initial_losses=zeros,
            previous_losses=zeros,
        )

    return init


def _check_losses(losses, n_terms):
    shape = jnp.shape(losses)
    if shape != (n_terms,):
        raise ValueError(f"`losses` must have shape ({n_terms},), got {shape}")


def relobralo(
    n_terms: int,
    *,
    alpha=0.999,
    temperature=1.0,
    rho=0.99,
    history_size: int = 20000,
    variant: str = "reference",
) -> Balancing:
    r"""ReLoBRaLo, relative loss balancing with random lookback, as a
    [`Balancing`][cgmpinn_jax.weighting.Balancing] of $C$ loss terms.

    The paper's Eqs. relobralo_ema, relobralo_ref and relobralo_weight, for the losses
    $L_c(k)$ of call $k$:

    $$
    \bar L_c(k) = \alpha\, \bar L_c(k-1) + (1 - \alpha)\, L_c(k), \qquad
    L_c^{\mathrm{ref}}(k) = \begin{cases} \bar L_c & \text{with probability } \rho \\
    L_c(k'),\ k' < k \text{ uniform} & \text{otherwise} \end{cases},
    $$

    $$
    \lambda_c(k) = C\, \frac{\exp\left(\varrho_c(k) / T\right)}
    {\sum_{c'=1}^{C} \exp\left(\varrho_{c'}(k) / T\right)},
    \qquad \varrho_c(k) = \frac{L_c(k)}{L_c^{\mathrm{ref}}(k) + 10^{-8}},
    $$

    so a term that falls more slowly than its history is up-weighted, and the lambdas always
    sum to $C$.  The first call stores the losses and returns ones.

    ``variant="reference"`` (default) is what the authors' code does, which differs from the
    paper in one place: the moving average is updated with the current losses *before* it
    serves as the reference.  The history is a ring buffer of ``history_size`` rows; within
    that many calls the lookback is exactly the reference's (an unbounded list), beyond them
    it is uniform over the ``history_size - 1`` most recent earlier calls.
    ``variant="original"`` is the ReLoBRaLo of Bischof and Kraus (2021, "Multi-objective loss
    balancing for physics-informed deep learning"), which keeps a moving average of the
    *weights* and has no lookback into the history:

    $$
    \lambda^{\mathrm{bal}}(t, t') =
    C\, \mathrm{softmax}\left(\frac{L(t) / (L(t') + 10^{-8})}{T}\right),
    \qquad
    \lambda(t) = \alpha \left[b\, \lambda(t-1) + (1 - b)\, \lambda^{\mathrm{bal}}(t, 0)\right]
    + (1 - \alpha)\, \lambda^{\mathrm{bal}}(t, t-1),
    $$

    with $b \sim \mathrm{Bernoulli}(\rho)$.

    The randomness is explicit: the PRNG key is part of the state and split once per call.

    Args:
        n_terms: ``C``, the number of loss terms (2 for the Poisson problems ``[PDE, BC]``, 3
            for the time-dependent ones ``[PDE, IC, BC]``).
        alpha: the moving-average coefficient in ``[0, 1]`` (default 0.999); may be traced.
        temperature: the softmax temperature ``T > 0`` (default 1.0); may be traced.
        rho: the probability of the moving-average reference in ``[0, 1]`` (default 0.99); may
            be traced.
        history_size: the rows ``H >= 2`` of the ring buffer of past losses (default 20000,
            the longest budget of the reference: 8000 Adam steps and 12000 L-BFGS iterations).
        variant: ``"reference"`` (the authors' code) or ``"original"`` (Bischof and Kraus).

    Returns:
        The [`Balancing`][cgmpinn_jax.weighting.Balancing]: ``init(key, dtype=None)`` takes a
        PRNG key; ``update(losses, state)`` draws ``(u, j)`` with
        [`relobralo_draws`][cgmpinn_jax.weighting.relobralo_draws] and applies
        [`relobralo_step`][cgmpinn_jax.weighting.relobralo_step].

    Raises:
        ValueError: on a bad argument (named in the message; traced values are not checked).

    Examples:
        >>> bal = relobralo(3)
        >>> s = bal.init(jax.random.PRNGKey(1))
        >>> for L in ([1.0, 1.0, 1.0], [2.0, 0.5, 1.0]):
        ...     lam, s = bal.update(jnp.array(L), s)
        >>> round(float(lam.sum()), 5), int(s.count)
        (3.0, 2)
    """
    n_terms = _check_static_int("n_terms", n_terms, 1)
    history_size = _check_static_int("history_size", history_size, 2)
    _check_unit_interval("alpha", alpha)
    _check_positive("temperature", temperature)
    _check_unit_interval("rho", rho)
    if variant not in _VARIANTS:
        raise ValueError(f"`variant` must be one of {_VARIANTS}, got {variant!r}")
    rows = history_size if variant == "reference" else 1

    def update(losses, state):
        _check_losses(losses, n_terms)
        key, u, j = relobralo_draws(state.key, state.count, rows)
        lam, new_state = relobralo_step(
            losses, state, u, j, alpha=alpha, temperature=temperature, rho=rho, variant=variant
        )
        return lam, new_state._replace(key=key)

    return Balancing(_make_init(n_terms, rows), update)


def no_balancing(n_terms: int) -> Balancing:
    """No balancing, as a [`Balancing`][cgmpinn_jax.weighting.Balancing]: the plain sum of the
    loss terms, every lambda always 1 (the state has the layout of
    [`relobralo`][cgmpinn_jax.weighting.relobralo]'s, with a one-row history).

    Args:
        n_terms: ``C``, the number of loss terms.

    Returns:
        The [`Balancing`][cgmpinn_jax.weighting.Balancing].

    Examples:
        >>> bal = no_balancing(2)
        >>> lam, s = bal.update(jnp.array([3.0, 4.0]), bal.init(jax.random.PRNGKey(0)))
        >>> lam.tolist()
        [1.0, 1.0]
    """
    n_terms = _check_static_int("n_terms", n_terms, 1)

    def update(losses, state):
        _check_losses(losses, n_terms)
        return state.lambdas, state._replace(count=state.count + 1)

    return Balancing(_make_init(n_terms, 1), update)
