"""Networks (equinox): the paper's MLP (torch-default or Xavier initialisation), LNN-PINN and
STAR-PINN, and the Taylor-mode fast path that propagates a point's value and derivative
lanes through them in one pass (used by `cgmpinn_jax.derivatives`); and the network choices
of [`NETWORKS`][cgmpinn_jax.nn.NETWORKS]: an MLP with a choice of activation, random Fourier
features, SIREN, an exactly periodic MLP and adaptive activations (LAAF, GAAF)."""

from ._nets import LNNPINN as LNNPINN
from ._nets import MLP as MLP
from ._nets import STARPINN as STARPINN
from ._nets import Linear as Linear
from ._nets import count_params as count_params
from ._nets import lnn_pinn as lnn_pinn
from ._nets import mlp as mlp
from ._nets import star_pinn as star_pinn
from ._taylor import fast_path as fast_path
from ._taylor import fast_path_enabled as fast_path_enabled
from ._taylor import operator_values as operator_values
from ._taylor import stacking as stacking
from ._taylor_systems import system_operator_values as system_operator_values
from ._zoo import NETWORKS as NETWORKS
from ._zoo import FourierMLP as FourierMLP
from ._zoo import PeriodicMLP as PeriodicMLP
from ._zoo import Siren as Siren
from ._zoo import fourier_mlp as fourier_mlp
from ._zoo import periodic_mlp as periodic_mlp
from ._zoo import siren as siren
from ._zoo_core import ActivationMLP as ActivationMLP
from ._zoo_core import AdaptiveMLP as AdaptiveMLP
from ._zoo_core import activation_mlp as activation_mlp
from ._zoo_core import adaptive_mlp as adaptive_mlp

__all__ = [
    "Linear",
    "MLP",
    "LNNPINN",
    "STARPINN",
    "mlp",
    "lnn_pinn",
    "star_pinn",
    "count_params",
    "fast_path",
    "fast_path_enabled",
    "activation_mlp",
    "ActivationMLP",
    "fourier_mlp",
    "FourierMLP",
    "siren",
    "Siren",
    "periodic_mlp",
    "PeriodicMLP",
    "adaptive_mlp",
    "AdaptiveMLP",
    "NETWORKS",
]
