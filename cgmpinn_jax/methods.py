"""Methods: a record of behaviour -- network factory, weighting factory, balancing, loss.

Every method, CGMPINN and the baselines alike, is a frozen [`Method`][cgmpinn_jax.Method] whose fields are
the pieces the engine calls; nothing is interpreted from strings elsewhere. The section
numbers (§) below are those of ``docs/reference-code.md``.

==========  =============  ===========  =============  ==========================================
name        network        weighting    ReLoBRaLo      loss
==========  =============  ===========  =============  ==========================================
cgmpinn     MLP            CGM (§5)     both stages    lambda_pde mean(w r^2) + lambda_c L_c
pinn        MLP            uniform      off            PDE + IC + BC (§10.1)
lbpinn      MLP            uniform      off            sum 0.5 exp(-s_c) L_c + 0.5 sum softplus(s_c),
                                                       concatenated-residual means (§10.2)
gpinn       MLP            uniform      off            PDE + IC + BC + 0.01 sum_j mean((dr/dz_j)^2)
lnn_pinn    LNN-PINN       uniform      off            PINN loss (§10.4)
star_pinn   STAR-PINN      uniform      off            PINN loss (§10.5)
gmmpinn     MLP            GMM (§11.1)  per problem    ablation: exp(+beta d) v_m, no tau
clpinn      MLP            CL (§11.2)   per problem    ablation: per-point min-max of r^2
==========  =============  ===========  =============  ==========================================

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
from typing import Any, Callable, Literal, Optional

import jax

from .nn import _nets as nets
from . import weighting as weighting_lib
from .problems import Problem

__all__ = [
    "Method", "MethodSettings", "LossSpec", "METHODS", "get_method", "build_model",
    "mlp_network", "lnn_network", "star_network", "plain_settings", "cgm_settings", "ablation_settings",
]

InputMap = Optional[tuple[tuple[float, ...], tuple[float, ...]]]
Stages = Literal["both", "adam", "none"]


@dataclasses.dataclass(frozen=True)
class MethodSettings:
    """How a method is set up on one problem.

    Attributes:
        relobralo: stages with ReLoBRaLo: "both", "adam" or "none".
        k_upd: steps between weight refreshes; ``None`` = the problem's ``defaults.k_upd``.
        init: network init, "torch" (PyTorch's default) or "xavier" (Xavier normal).
        input_map: static affine input map ``(scale, shift)`` or ``None``.
        refit_before_lbfgs_step: the L-BFGS refresh comes before the step (Fisher-KPP CGMPINN).
    """

    relobralo: Stages = "none"
    k_upd: Optional[int] = None
    init: str = "torch"
    input_map: InputMap = None
    refit_before_lbfgs_step: bool = False


@dataclasses.dataclass(frozen=True)
class LossSpec:
    """How the loss terms are formed (the method's loss transform).

    Attributes:
        aggregation: "sum" of per-piece MSEs (reference PINN/CGMPINN) or "concat" (one MSE
            over the concatenated residuals of a term, lbPINN).
        learnable_balance: lbPINN's trainable log-variances s_c.
        grad_weight: gPINN's weight of the residual-gradient term (0 = off).
    """

    aggregation: Literal["sum", "concat"] = "sum"
    learnable_balance: bool = False
    grad_weight: float = 0.0

    def __post_init__(self):
        if self.aggregation not in ("sum", "concat"):
            raise ValueError(f"LossSpec.aggregation must be 'sum' or 'concat', got {self.aggregation!r}")
        if not self.grad_weight >= 0:
            raise ValueError(f"LossSpec.grad_weight must be >= 0, got {self.grad_weight}")


# ---- network factories: (key, in_dim, width, depth, init, input_map[, out_dim=]) -> eqx.Module --
# (``out_dim`` is passed only for a system, a problem with several fields)


def mlp_network(key, in_dim, width, depth, init, input_map, out_dim=1):
    return nets.mlp(key, in_dim, width, depth, init=init, input_map=input_map, out_dim=out_dim)


def lnn_network(key, in_dim, width, depth, init, input_map, out_dim=1):
    return nets.lnn_pinn(key, in_dim, width, depth, init=init, input_map=input_map, out_dim=out_dim)


def star_network(key, in_dim, width, depth, init, input_map, out_dim=1):
    """STAR-PINN: 3 blocks of 2 hidden layers whatever ``depth`` (as the reference)."""
    return nets.star_pinn(key, in_dim, width, init=init, input_map=input_map, out_dim=out_dim)


# ---- weighting factories: (config, hyper) -> weighting.Weighting ----------------------------


def uniform_weights(cfg, hyper):
    return weighting_lib.uniform_weighting()


def cgm_weights(cfg, hyper):
    return weighting_lib.cgm_weighting(n_components=cfg.cgm.n_components, beta=hyper.beta, eps=hyper.eps,
                                       variance_factor=cfg.cgm.variance_factor)


def gmm_weights(cfg, hyper):
    return weighting_lib.gmmpinn_weighting(n_components=cfg.cgm.n_components, beta=hyper.beta, eps=hyper.eps)


def cl_weights(cfg, hyper):
    return weighting_lib.clpinn_weighting(beta=hyper.beta, eps=hyper.eps)


# ---- per-problem settings -----------------------------------------------------------------

#: The reference's Fisher-KPP CGMPINN script normalises its inputs to (x/5, t-1), uses
#: Xavier-normal init, refreshes every 100 steps and refits before each L-BFGS step
#: (docs/reference-code.md §2, §6).
_CGM_FISHER_KPP = dict(input_map=((0.2, 1.0), (0.0, -1.0)), init="xavier", refit_before_lbfgs_step=True)
#: ReLoBRaLo in the reference's ablation script (docs/reference-code.md §11.3): elsewhere both
#: stages.
_ABLATION_RELOBRALO = {"poisson1d": "none", "fisher_kpp": "adam"}


def plain_settings(problem: Problem) -> MethodSettings:
    """The baselines: raw inputs, PyTorch's init, the problem's k_upd, no ReLoBRaLo."""
    return MethodSettings()


def cgm_settings(problem: Problem) -> MethodSettings:
    if problem.name == "fisher_kpp":
        return MethodSettings(relobralo="both", k_upd=100, **_CGM_FISHER_KPP)
    return MethodSettings(relobralo="both")


def ablation_settings(problem: Problem) -> MethodSettings:
    relo = _ABLATION_RELOBRALO.get(problem.name, "both")
    # the ablation refits before the step too (docs/reference-code.md §11)
    extra = _CGM_FISHER_KPP if problem.name == "fisher_kpp" else {}
    return MethodSettings(relobralo=relo, k_upd=200, **extra)


@dataclasses.dataclass(frozen=True)
class Method:
    """A training method as a record of behaviour.

    Attributes:
        name: registry name.
        network: ``(key, in_dim, width, depth, init, input_map) -> eqx.Module`` (one point to
            a scalar).
        weighting: ``(TrainConfig, Hyper) -> weighting.Weighting``, the per-point PDE weights.
        loss: `LossSpec` (aggregation, lbPINN's learnable balance, gPINN's term).
        settings: ``problem -> MethodSettings`` (ReLoBRaLo stages, k_upd, init, input map).
        label: the name the paper uses.
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


def build_model(problem: Problem, method: Method, key: jax.Array, *, width: int, depth: int):
    """The method's network for ``problem`` (with the method's init and input map there), with
    one output per field of the problem (``problem.fields``)."""
    s = method.settings(problem)
    n_out = len(getattr(problem, "fields", ("u",)))
    extra = {} if n_out == 1 else {"out_dim": n_out}
    return method.network(key, problem.dim, width, depth, s.init, s.input_map, **extra)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("cgmpinn", weighting=cgm_weights, settings=cgm_settings, label="CGMPINN"),
        Method("pinn", label="PINN"),
        Method("lbpinn", loss=LossSpec(aggregation="concat", learnable_balance=True), label="lbPINN"),
        Method("gpinn", loss=LossSpec(grad_weight=0.01), label="gPINN"),
        Method("lnn_pinn", network=lnn_network, label="LNN-PINN"),
        Method("star_pinn", network=star_network, label="STAR-PINN"),
        Method("gmmpinn", weighting=gmm_weights, settings=ablation_settings, label="GMMPINN"),
        Method("clpinn", weighting=cl_weights, settings=ablation_settings, label="CLPINN"),
    )
}


def get_method(name: str | Method) -> Method:
    """The method called ``name`` (one of `METHODS`); a Method is returned as is.

    Examples:
        >>> get_method("cgmpinn").settings(__import__("cgmpinn_jax").get_problem("fisher_kpp")).k_upd
        100
    """
    if isinstance(name, Method):
        return name
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown method {name!r}; valid names: {', '.join(METHODS)}") from None
