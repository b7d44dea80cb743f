"""Methods: a record of behaviour -- network factory, weighting factory, balancing, loss.

Every method, CGMPINN and the baselines alike, is a frozen [`Method`][cgmpinn_jax.Method] whose
fields are the pieces the engine calls; nothing is interpreted from strings elsewhere. The
section numbers (§) below are those of ``docs/reference-code.md``.

==========  ==========  ===========  =============  ==========================================
name        network     weighting    ReLoBRaLo      loss
==========  ==========  ===========  =============  ==========================================
cgmpinn     MLP         CGM (§5)     both stages    lambda_pde mean(w r^2) + lambda_c L_c
pinn        MLP         uniform      off            PDE + IC + BC (§10.1)
lbpinn      MLP         uniform      off            sum 0.5 exp(-s_c) L_c + 0.5 sum softplus(s_c),
                                                    concatenated-residual means (§10.2)
gpinn       MLP         uniform      off            PDE + IC + BC + 0.01 sum_j mean((dr/dz_j)^2)
lnn_pinn    LNN-PINN    uniform      off            PINN loss (§10.4)
star_pinn   STAR-PINN   uniform      off            PINN loss (§10.5)
gmmpinn     MLP         GMM (§11.1)  per problem    ablation: exp(+beta d) v_m, no tau
clpinn      MLP         CL (§11.2)   per problem    ablation: per-point min-max of r^2
==========  ==========  ===========  =============  ==========================================

Problem-specific settings (§2, §6, §11) belong to the method, not to the problem
(`MethodSettings`, from the method's ``settings(problem)``): only CGMPINN and its
ablations use the Fisher-KPP input map (x/5, t-1), Xavier-normal init and (CGMPINN only)
k_upd = 100 with the refit before the L-BFGS step; the baselines use raw inputs and PyTorch's
default init on every problem, as in the reference code. The ablation runs use k_upd = 200
everywhere and ReLoBRaLo as the reference's ablation script did: off for 1D Poisson, Adam
stage only for Fisher-KPP, both stages elsewhere.

A new method is a new record, e.g. CGMPINN without the precision factor:

```python
Method("cgm_novar", network=mlp_network,
       weighting=lambda cfg, hyper: weighting.cgm_weighting(beta=hyper.beta, eps=hyper.eps,
                                                           variance_factor=False),
       settings=cgm_settings)
```
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Literal, Optional, cast

import equinox as eqx
import jax
import jax.numpy as jnp

from ._options import NetworkOptions
from . import nn as nets
from . import weighting as weighting_lib
from .problems import Problem

__all__ = [
    "Method",
    "MethodSettings",
    "LossSpec",
    "METHODS",
    "get_method",
    "build_model",
    "network_factory",
    "check_network",
    "mlp_network",
    "lnn_network",
    "star_network",
    "plain_settings",
    "cgm_settings",
    "ablation_settings",
]

InputMap = Optional[tuple[tuple[float, ...], tuple[float, ...]]]
Stages = Literal["both", "adam", "none"]


@dataclasses.dataclass(frozen=True)
class MethodSettings:
    """How a method is set up on one problem: what a method's ``settings(problem)`` returns.

    The baselines use the defaults on every problem; CGMPINN and its ablations change them per
    problem (see [`cgm_settings`][cgmpinn_jax.methods.cgm_settings] and
    [`ablation_settings`][cgmpinn_jax.methods.ablation_settings]).

    Attributes:
        relobralo: the stages whose loss terms are balanced by ReLoBRaLo: ``"both"`` (the Adam
            stage and the second stage), ``"adam"`` (the Adam stage only) or ``"none"``
            (every term weight is 1).
        k_upd: the number of steps between two refreshes of the point weights; ``None`` takes
            the problem's ``defaults.k_upd``.
        init: the network's initialisation: ``"torch"`` (PyTorch's default for a linear
            layer, uniform weights and biases) or ``"xavier"`` (Xavier-normal weights, zero
            biases).
        input_map: a fixed (not trained) affine map ``z -> scale * z + shift`` of the network's
            input, given as ``(scale, shift)``, two tuples of one float per coordinate; ``None``
            feeds the raw coordinates.
        refit_before_second_step: in the second stage, refresh the weights before each step
            rather than after it (the reference's Fisher-KPP scripts).

    Examples:
        >>> MethodSettings(relobralo="adam", k_upd=200).init
        'torch'
    """

    relobralo: Stages = "none"
    k_upd: Optional[int] = None
    init: str = "torch"
    input_map: InputMap = None
    refit_before_second_step: bool = False


@dataclasses.dataclass(frozen=True)
class LossSpec:
    """How a method forms its loss from the residuals of the loss terms.

    Attributes:
        aggregation: how a loss term made of several pieces (e.g. the boundary condition on
            each edge) becomes one number: ``"sum"`` adds the mean squared residual of each
            piece (the reference PINN and CGMPINN), ``"concat"`` takes one mean over the
            concatenated residuals of all pieces (lbPINN).
        learnable_balance: lbPINN's balance: one trainable log-variance ``s_c`` per term and
            the loss ``sum_c 0.5 exp(-s_c) L_c + 0.5 softplus(s_c)``.
        grad_weight: gPINN's weight of the residual-gradient term
            ``sum_j mean((dr/dz_j)^2)`` (0, the default, leaves it out).

    Raises:
        ValueError: an unknown ``aggregation`` or a negative ``grad_weight``.

    Examples:
        >>> LossSpec(grad_weight=0.01)
        LossSpec(aggregation='sum', learnable_balance=False, grad_weight=0.01)
    """

    aggregation: Literal["sum", "concat"] = "sum"
    learnable_balance: bool = False
    grad_weight: float = 0.0

    def __post_init__(self):
        if self.aggregation not in ("sum", "concat"):
            raise ValueError(
                f"LossSpec.aggregation must be 'sum' or 'concat', got {self.aggregation!r}"
            )
        if not self.grad_weight >= 0:
            raise ValueError(f"LossSpec.grad_weight must be >= 0, got {self.grad_weight}")


# ---- network factories: (key, in_dim, width, depth, init, input_map[, out_dim=]) -> eqx.Module --
# (``out_dim`` is passed only for a system, a problem with several fields)


def mlp_network(key, in_dim, width, depth, init, input_map, out_dim=1):
    """The network of CGMPINN, PINN, lbPINN, gPINN and the ablations: a
    [`MLP`][cgmpinn_jax.nn.MLP] built by [`mlp`][cgmpinn_jax.nn.mlp].

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d`` (the problem's ``dim``).
        width: hidden units per layer.
        depth: the number of hidden layers.
        init: ``"torch"`` or ``"xavier"`` (see
            [`MethodSettings`][cgmpinn_jax.methods.MethodSettings]).
        input_map: ``(scale, shift)`` or ``None`` (see
            [`MethodSettings`][cgmpinn_jax.methods.MethodSettings]).
        out_dim: outputs per point: 1 for a scalar field, the number of fields for a system.

    Returns:
        The network, an equinox module mapping one point of shape ``(d,)`` to a scalar
        (to an ``(out_dim,)`` vector when ``out_dim > 1``).
    """
    return nets.mlp(key, in_dim, width, depth, init=init, input_map=input_map, out_dim=out_dim)


def lnn_network(key, in_dim, width, depth, init, input_map, out_dim=1):
    """The network of LNN-PINN: an [`LNNPINN`][cgmpinn_jax.nn.LNNPINN] built by
    [`lnn_pinn`][cgmpinn_jax.nn.lnn_pinn] (``depth - 1`` liquid residual blocks).

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d`` (the problem's ``dim``).
        width: hidden units per layer.
        depth: the number of hidden layers (the input layer and ``depth - 1`` blocks).
        init: ``"torch"`` or ``"xavier"``.
        input_map: ``(scale, shift)`` or ``None``.
        out_dim: outputs per point: 1 for a scalar field, the number of fields for a system.

    Returns:
        The network, an equinox module mapping one point of shape ``(d,)`` to a scalar
        (to an ``(out_dim,)`` vector when ``out_dim > 1``).
    """
    return nets.lnn_pinn(key, in_dim, width, depth, init=init, input_map=input_map, out_dim=out_dim)


def star_network(key, in_dim, width, depth, init, input_map, out_dim=1):
    """The network of STAR-PINN: a [`STARPINN`][cgmpinn_jax.nn.STARPINN] built by
    [`star_pinn`][cgmpinn_jax.nn.star_pinn], always 3 blocks of 2 hidden layers whatever
    ``depth`` (as the reference code).

    Args:
        key: PRNG key of the initial parameters.
        in_dim: the number of input coordinates ``d`` (the problem's ``dim``).
        width: hidden units per layer.
        depth: ignored (accepted so that every network factory has the same signature).
        init: ``"torch"`` or ``"xavier"``.
        input_map: ``(scale, shift)`` or ``None``.
        out_dim: outputs per point: 1 for a scalar field, the number of fields for a system.

    Returns:
        The network, an equinox module mapping one point of shape ``(d,)`` to a scalar
        (to an ``(out_dim,)`` vector when ``out_dim > 1``).
    """
    return nets.star_pinn(key, in_dim, width, init=init, input_map=input_map, out_dim=out_dim)


# ---- weighting factories: (config, hyper) -> weighting.Weighting ----------------------------


def uniform_weights(cfg, hyper):
    return weighting_lib.uniform_weighting()


def cgm_weights(cfg, hyper):
    return weighting_lib.cgm_weighting(
        n_components=cfg.cgm.n_components,
        beta=hyper.beta,
        eps=hyper.eps,
        variance_factor=cfg.cgm.variance_factor,
    )


def gmm_weights(cfg, hyper):
    return weighting_lib.gmmpinn_weighting(
        n_components=cfg.cgm.n_components, beta=hyper.beta, eps=hyper.eps
    )


def cl_weights(cfg, hyper):
    return weighting_lib.clpinn_weighting(beta=hyper.beta, eps=hyper.eps)


# ---- per-problem settings -----------------------------------------------------------------

#: The reference's Fisher-KPP CGMPINN script normalises its inputs to (x/5, t-1), uses
#: Xavier-normal init, refreshes every 100 steps and refits before each L-BFGS step
#: (docs/reference-code.md §2, §6).
_CGM_FISHER_KPP: dict[str, Any] = dict(
    input_map=((0.2, 1.0), (0.0, -1.0)), init="xavier", refit_before_second_step=True
)
#: ReLoBRaLo in the reference's ablation script (docs/reference-code.md §11.3): elsewhere both
#: stages.
_ABLATION_RELOBRALO: dict[str, Stages] = {"poisson1d": "none", "fisher_kpp": "adam"}


def plain_settings(problem: Problem) -> MethodSettings:
    """The settings of the baselines on every problem: raw inputs, PyTorch's initialisation,
    the problem's ``k_upd`` and no ReLoBRaLo (the default
    [`MethodSettings`][cgmpinn_jax.methods.MethodSettings]).

    Args:
        problem: the problem (not read: the settings are the same everywhere).

    Returns:
        ``MethodSettings()``.
    """
    return MethodSettings()


def cgm_settings(problem: Problem) -> MethodSettings:
    """The settings of CGMPINN on ``problem``, as in the reference's scripts.

    ReLoBRaLo in both stages everywhere. On Fisher-KPP (``problem.name == "fisher_kpp"``)
    also the input map ``(x/5, t - 1)``, Xavier-normal initialisation, ``k_upd = 100`` and the
    refresh before each second-stage step; elsewhere raw inputs, PyTorch's initialisation and
    the problem's ``k_upd``.

    Args:
        problem: the problem to be solved.

    Returns:
        The [`MethodSettings`][cgmpinn_jax.methods.MethodSettings] of CGMPINN there.

    Examples:
        >>> from cgmpinn_jax import get_problem
        >>> cgm_settings(get_problem("fisher_kpp")).k_upd, cgm_settings(get_problem("heat")).k_upd
        (100, None)
    """
    if problem.name == "fisher_kpp":
        return MethodSettings(relobralo="both", k_upd=100, **_CGM_FISHER_KPP)
    return MethodSettings(relobralo="both")


def ablation_settings(problem: Problem) -> MethodSettings:
    """The settings of the ablation runs (GMMPINN, CLPINN) on ``problem``, as in the
    reference's ablation scripts.

    ``k_upd = 200`` on every problem; ReLoBRaLo off for 1D Poisson, in the Adam stage only for
    Fisher-KPP and in both stages elsewhere; on Fisher-KPP also CGMPINN's input map,
    Xavier-normal initialisation and refresh before each second-stage step.

    Args:
        problem: the problem to be solved.

    Returns:
        The [`MethodSettings`][cgmpinn_jax.methods.MethodSettings] of the ablations there.

    Examples:
        >>> from cgmpinn_jax import get_problem
        >>> (
        ...     ablation_settings(get_problem("poisson1d")).relobralo,
        ...     ablation_settings(get_problem("heat")).relobralo,
        ... )
        ('none', 'both')
    """
    relo = _ABLATION_RELOBRALO.get(problem.name, "both")
    # the ablation refits before the step too (docs/reference-code.md §11)
    extra = _CGM_FISHER_KPP if problem.name == "fisher_kpp" else {}
    return MethodSettings(relobralo=relo, k_upd=200, **extra)


@dataclasses.dataclass(frozen=True)
class Method:
    """A training method as a record of behaviour: the pieces the training engine calls.

    Every method, CGMPINN and the baselines alike, is one such frozen record (the eight of
    the paper are in [`METHODS`][cgmpinn_jax.METHODS]); nothing is interpreted from its name.
    [`train`][cgmpinn_jax.train] takes a method's name or a record, so a new method is a new
    record.

    Attributes:
        name: the registry name (``"cgmpinn"``, ``"pinn"``, ...).
        network: the network factory ``(key, in_dim, width, depth, init, input_map) -> module``,
            called with ``out_dim=F`` as well for a system of ``F`` fields; the module maps one
            point ``(d,)`` to a scalar (``(F,)``). Default:
            [`mlp_network`][cgmpinn_jax.methods.mlp_network].
        weighting: the factory of the per-point weights of the PDE residual,
            ``(config, hyper) -> Weighting`` with ``config`` the run's
            [`TrainConfig`][cgmpinn_jax.TrainConfig] and ``hyper`` its
            [`Hyper`][cgmpinn_jax.config.Hyper] (``beta``, ``eps``); it returns a
            [`Weighting`][cgmpinn_jax.weighting.Weighting]. Default: the uniform weighting
            (every weight 1).
        loss: how the loss terms are formed, a [`LossSpec`][cgmpinn_jax.methods.LossSpec].
        settings: ``problem -> MethodSettings``, the per-problem set-up (ReLoBRaLo stages,
            ``k_upd``, initialisation, input map), a
            [`MethodSettings`][cgmpinn_jax.methods.MethodSettings]. Default:
            [`plain_settings`][cgmpinn_jax.methods.plain_settings].
        label: the name the paper uses (``"CGMPINN"``), for tables and figures.

    Raises:
        ValueError: ``network``, ``weighting`` or ``settings`` not callable, or ``loss`` not a
            ``LossSpec``.

    Examples:
        CGMPINN without the precision factor:

        >>> from cgmpinn_jax import weighting
        >>> from cgmpinn_jax.methods import Method, cgm_settings, get_method
        >>> novar = Method("cgm_novar", settings=cgm_settings, label="CGMPINN w/o v",
        ...                weighting=lambda cfg, hyper: weighting.cgm_weighting(
        ...                    beta=hyper.beta, eps=hyper.eps, variance_factor=False))
        >>> novar.weights_points, get_method("pinn").weights_points
        (True, False)
    """

    name: str
    network: Callable[..., Any] = mlp_network
    weighting: Callable[..., Any] = uniform_weights
    loss: LossSpec = LossSpec()
    settings: Callable[[Problem], MethodSettings] = plain_settings
    label: str = ""

    def __post_init__(self):
        for field in ("network", "weighting", "settings"):
            if not callable(getattr(self, field)):
                raise ValueError(f"Method.{field} must be callable, got {getattr(self, field)!r}")
        if not isinstance(self.loss, LossSpec):
            raise ValueError(f"Method.loss must be a LossSpec, got {self.loss!r}")

    @property
    def weights_points(self) -> bool:
        """Whether the method weights its collocation points (a curriculum / GMM weighting,
        not the uniform one): only then do tau and the weight figures mean anything."""
        return self.weighting is not uniform_weights


def build_model(
    problem: Problem, method: Method, key: jax.Array, *, width: int, depth: int, network: Any = None
):
    """The method's network for ``problem``, initialised.

    The network has the problem's number of inputs (``problem.dim``), one output per field of
    the problem (``problem.fields``), and the initialisation and input map of the method's
    settings there (``method.settings(problem)``). A ``network`` other than the method's own
    replaces the MLP of the methods that have one, and is checked before anything compiles.

    Args:
        problem: the problem to be solved, a [`Problem`][cgmpinn_jax.Problem].
        method: the method, a [`Method`][cgmpinn_jax.Method].
        key: PRNG key of the initial parameters.
        width: hidden units per layer.
        depth: the number of hidden layers.
        network: ``None`` (the method's network), a
            [`NetworkOptions`][cgmpinn_jax.NetworkOptions], a factory
            ``(key, in_dim, out_dim) -> equinox.Module`` or an equinox module (used as it is).

    Returns:
        The network (an equinox module) mapping one point ``(d,)`` to a scalar, or to an
        ``(F,)`` vector for a system of ``F`` fields; for a
        [`HardConstrained`][cgmpinn_jax.problems.HardConstrained] problem, inside its
        [`ConstrainedNetwork`][cgmpinn_jax.problems.ConstrainedNetwork] transform.

    Raises:
        ValueError: a network for a method with a network of its own (LNN-PINN, STAR-PINN), an
            unknown or unimportable factory, or a network of the wrong shape, dtype or
            without trainable parameters.
    """
    s = method.settings(problem)
    n_out = len(getattr(problem, "fields", ("u",)))
    extra = {} if n_out == 1 else {"out_dim": n_out}
    if network is None or (isinstance(network, NetworkOptions) and network.name is None):
        return _constrained(
            problem, method.network(key, problem.dim, width, depth, s.init, s.input_map, **extra)
        )
    if method.network is not mlp_network:
        raise ValueError(
            f"method {method.name!r} has a network of its own ({method.network.__name__}); "
            "a network option applies to the methods with the MLP "
            f"(cgmpinn, pinn, lbpinn, gpinn, gmmpinn, clpinn)"
        )
    if isinstance(network, eqx.Module):
        model, what = network, f"the network {type(network).__name__}"
    else:
        factory, kwargs, what = (
            network,
            {},
            f"the network factory {getattr(network, '__name__', network)!r}",
        )
        if isinstance(network, NetworkOptions):
            name = cast(str, network.name)  # not None here: checked above
            factory, kwargs, what = (
                network_factory(name),
                network.kwargs,
                f"the network {network.name!r}",
            )
            if ":" not in name:  # a built-in choice: the run's size unless its options set one
                kwargs = {"width": width, "depth": depth, **kwargs}
        model = factory(key, problem.dim, n_out, **kwargs)
    check_network(model, problem.dim, n_out, what)
    return _constrained(problem, model)


def _constrained(problem: Problem, model):
    """``model`` under the problem's hard constraint (a
    [`HardConstrained`][cgmpinn_jax.problems.HardConstrained] problem), else ``model``."""
    from .problems.hard import ConstrainedNetwork, HardConstrained

    if isinstance(problem, HardConstrained) and not isinstance(model, ConstrainedNetwork):
        return ConstrainedNetwork(model, problem)
    return model


def network_factory(name: str) -> Callable:
    """The factory a [`NetworkOptions`][cgmpinn_jax.NetworkOptions] name stands for.

    Args:
        name: a key of [`NETWORKS`][cgmpinn_jax.nn.NETWORKS], or ``"package.module:factory"``
            (``factory`` may be a dotted attribute path inside the module).

    Returns:
        The factory, a callable ``(key, in_dim, out_dim, **options) -> equinox.Module``.

    Raises:
        ValueError: an unknown built-in name, a module that does not import, or a missing or
            non-callable attribute (the message says which).
    """
    from . import nn
    from ._importable import import_path

    zoo = getattr(nn, "NETWORKS", {})
    if ":" not in name:
        if name in zoo:
            return zoo[name]
        raise ValueError(
            f"unknown network {name!r}: a built-in choice ({', '.join(zoo) or 'none'}) or "
            f"'package.module:factory'"
        )
    return import_path(name, "network")


def check_network(model: Any, in_dim: int, out_dim: int, what: str = "the network") -> None:
    """Check a network before anything compiles: an equinox module with inexact (float)
    parameters, mapping one point ``(in_dim,)`` of the run's float dtype to a scalar
    (``out_dim == 1``) or an ``(out_dim,)`` vector of that dtype.

    Args:
        model: the network.
        in_dim: the problem's number of coordinates.
        out_dim: the problem's number of fields.
        what: how to name the network in an error.

    Raises:
        ValueError: the first check that fails, named.
    """
    if not isinstance(model, eqx.Module):
        raise ValueError(
            f"{what} must be an equinox Module (a factory must return one), "
            f"got {type(model).__name__}"
        )
    leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_inexact_array))
    if not leaves:
        raise ValueError(f"{what} has no trainable parameters (no floating-point array leaves)")
    dtype = jnp.zeros(()).dtype  # the run's float dtype (float64 inside a float64 run)
    other = sorted({str(x.dtype) for x in leaves} - {str(dtype)})
    if other:
        raise ValueError(
            f"{what} has {', '.join(other)} parameters; the run is in {dtype} "
            f"(create the parameters without a fixed dtype, or in the run's)"
        )
    try:
        out = jax.eval_shape(
            cast(Callable[..., Any], model), jax.ShapeDtypeStruct((in_dim,), dtype)
        )
    except Exception as e:  # noqa: BLE001 - any failure to trace is the user's network's, reported as such
        raise ValueError(
            f"{what} fails on one point of shape ({in_dim},) {dtype}: {type(e).__name__}: {e}"
        ) from e
    want = [()] if out_dim == 1 else [(out_dim,)]
    if not hasattr(out, "shape") or out.shape not in want:
        raise ValueError(
            f"{what} maps one point ({in_dim},) to "
            f"{getattr(out, 'shape', type(out).__name__)}; expected "
            f"{'a scalar ()' if out_dim == 1 else f'({out_dim},), one value per field'}"
        )
    if out.dtype != dtype:
        raise ValueError(
            f"{what} returns {out.dtype} for a {dtype} point; the run is in {dtype} (create the "
            f"parameters without a fixed dtype, or in the run's)"
        )


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("cgmpinn", weighting=cgm_weights, settings=cgm_settings, label="CGMPINN"),
        Method("pinn", label="PINN"),
        Method(
            "lbpinn", loss=LossSpec(aggregation="concat", learnable_balance=True), label="lbPINN"
        ),
        Method("gpinn", loss=LossSpec(grad_weight=0.01), label="gPINN"),
        Method("lnn_pinn", network=lnn_network, label="LNN-PINN"),
        Method("star_pinn", network=star_network, label="STAR-PINN"),
        Method("gmmpinn", weighting=gmm_weights, settings=ablation_settings, label="GMMPINN"),
        Method("clpinn", weighting=cl_weights, settings=ablation_settings, label="CLPINN"),
    )
}
"""The eight methods of the paper by name: ``"cgmpinn"``, the baselines ``"pinn"``, ``"lbpinn"``,
``"gpinn"``, ``"lnn_pinn"``, ``"star_pinn"`` and the ablations ``"gmmpinn"`` (GMM weights, no
curriculum) and ``"clpinn"`` (curriculum weights, no GMM); each value is a
[`Method`][cgmpinn_jax.Method]."""


def get_method(name: str | Method) -> Method:
    """The method called ``name`` (a key of [`METHODS`][cgmpinn_jax.METHODS]).

    Args:
        name: a registry name, or a [`Method`][cgmpinn_jax.Method], which is returned as is.

    Returns:
        The [`Method`][cgmpinn_jax.Method].

    Raises:
        ValueError: an unknown name (the message lists the valid ones).

    Examples:
        >>> get_method("cgmpinn").settings(
        ...     __import__("cgmpinn_jax").get_problem("fisher_kpp")
        ... ).k_upd
        100
    """
    if isinstance(name, Method):
        return name
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown method {name!r}; valid names: {', '.join(METHODS)}") from None
