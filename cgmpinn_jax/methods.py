"""Methods: a network factory + loss terms + a sample weighting + a loss balancing.

Every method, CGMPINN and the baselines alike, is a frozen :class:`Method` record that
:func:`cgmpinn_jax.train.train` interprets; nothing else differs between them.

==========  =============  ===========  =============  ==========================================
name        network        weighting    ReLoBRaLo      loss
==========  =============  ===========  =============  ==========================================
cgmpinn     MLP            CGM (§1.5)   both stages    lambda_pde mean(w r^2) + lambda_c L_c
pinn        MLP            uniform      off            PDE + IC + BC (§4.1)
lbpinn      MLP            uniform      off            sum 0.5 exp(-s_c) L_c + 0.5 sum softplus(s_c),
                                                       concatenated-residual means (§4.2)
gpinn       MLP            uniform      off            PDE + IC + BC + 0.01 sum_j mean((dr/dz_j)^2)
lnn_pinn    LNN-PINN       uniform      off            PINN loss (§4.4)
star_pinn   STAR-PINN      uniform      off            PINN loss (§4.5)
gmmpinn     MLP            GMM (§5.1)   per problem    ablation: exp(+beta d) v_m, no tau
clpinn      MLP            CL (§5.2)    per problem    ablation: per-point min-max of r^2
==========  =============  ===========  =============  ==========================================

Problem-specific settings (REFERENCE §1.2, §5.3): only CGMPINN and its ablation use the
Fisher-KPP input map (x/5, t-1), Xavier-normal init and (CGMPINN only) k_upd = 100 with the
refit before the L-BFGS step; the baselines use raw inputs and PyTorch's default init on
every problem, as in the reference code. The ablation runs use k_upd = 200 everywhere and
ReLoBRaLo as the reference's ablation script did: off for 1D Poisson, Adam stage only for
Fisher-KPP, both stages elsewhere.
"""

from __future__ import annotations

import dataclasses

from .problems import Problem

__all__ = ["Method", "METHODS", "get_method"]


@dataclasses.dataclass(frozen=True)
class Method:
    """A training method, declaratively.

    Attributes:
        name: registry name.
        network: "mlp", "lnn" (LNN-PINN) or "star" (STAR-PINN).
        weighting: per-point PDE weights: "uniform", "cgm", "gmm" (GMMPINN) or "cl" (CLPINN).
        relobralo: which stages use ReLoBRaLo: "both", "adam", "none", or "ablation" (the
            problem's ``defaults.ablation_relobralo``).
        aggregation: "sum" of per-piece MSEs (reference PINN/CGMPINN) or "concat" (one MSE
            over the concatenated residuals of a term, lbPINN).
        learnable_balance: lbPINN's trainable log-variances.
        grad_weight: gPINN's weight of the residual-gradient term (0 = off).
        problem_settings: "cgm" to use the problem's CGMPINN input map / init / k_upd /
            refit order, "ablation" for its input map / init with the ablation k_upd, or "none".
    """

    name: str
    network: str = "mlp"
    weighting: str = "uniform"
    relobralo: str = "none"
    aggregation: str = "sum"
    learnable_balance: bool = False
    grad_weight: float = 0.0
    problem_settings: str = "none"

    def __post_init__(self):
        allowed = {
            "network": ("mlp", "lnn", "star"),
            "weighting": ("uniform", "cgm", "gmm", "cl"),
            "relobralo": ("both", "adam", "none", "ablation"),
            "aggregation": ("sum", "concat"),
            "problem_settings": ("cgm", "ablation", "none"),
        }
        for field, values in allowed.items():
            if getattr(self, field) not in values:
                raise ValueError(f"Method.{field} must be one of {values}, got {getattr(self, field)!r}")
        if self.grad_weight < 0:
            raise ValueError(f"Method.grad_weight must be >= 0, got {self.grad_weight}")

    def relobralo_stages(self, problem: Problem) -> str:
        """"both", "adam" or "none" for this problem."""
        if self.relobralo == "ablation":
            return problem.defaults.ablation_relobralo
        return self.relobralo

    def input_map(self, problem: Problem):
        return problem.defaults.cgm_input_map if self.problem_settings != "none" else None

    def init(self, problem: Problem) -> str:
        return problem.defaults.cgm_init if self.problem_settings != "none" else "torch"

    def k_upd(self, problem: Problem) -> int:
        d = problem.defaults
        if self.problem_settings == "cgm" and d.cgm_k_upd is not None:
            return d.cgm_k_upd
        if self.problem_settings == "ablation":
            return d.ablation_k_upd
        return d.k_upd

    def refit_before_lbfgs_step(self, problem: Problem) -> bool:
        # The Fisher-KPP CGMPINN and its ablation refit before the L-BFGS step (§1.6, §5).
        return self.problem_settings != "none" and problem.defaults.cgm_refit_before_lbfgs_step


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("cgmpinn", weighting="cgm", relobralo="both", problem_settings="cgm"),
        Method("pinn"),
        Method("lbpinn", aggregation="concat", learnable_balance=True),
        Method("gpinn", grad_weight=0.01),
        Method("lnn_pinn", network="lnn"),
        Method("star_pinn", network="star"),
        Method("gmmpinn", weighting="gmm", relobralo="ablation", problem_settings="ablation"),
        Method("clpinn", weighting="cl", relobralo="ablation", problem_settings="ablation"),
    )
}


def get_method(name: str | Method) -> Method:
    """The method called ``name`` (one of :data:`METHODS`); a Method is returned as is."""
    if isinstance(name, Method):
        return name
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; valid names: {', '.join(METHODS)}") from None
