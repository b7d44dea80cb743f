"""Networks (equinox): the paper's MLP (torch-default or Xavier initialisation), LNN-PINN and
STAR-PINN, and the Taylor-mode fast path that propagates a point's value and derivative
lanes through them in one pass (used by `cgmpinn_jax.derivatives`)."""

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

__all__ = ["Linear", "MLP", "LNNPINN", "STARPINN", "mlp", "lnn_pinn", "star_pinn", "count_params", "fast_path",
           "fast_path_enabled"]
