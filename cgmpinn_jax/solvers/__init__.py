"""The stages' solvers behind one protocol (``init`` / ``step`` with a :class:`StageStatus`):
optax and jaxopt L-BFGS, dense (self-scaled) BFGS / Broyden with a strong-Wolfe line search,
and the Gauss-Newton (Levenberg-Marquardt) member on the objective's residual rows.
``make_second_stage(config, ...)`` picks the member ``config.second_stage`` names."""

from ._gauss_newton import GaussNewton as GaussNewton
from ._gauss_newton import GNState as GNState
from ._gauss_newton import lm_solve_form as lm_solve_form
from ._gauss_newton import memory_bytes as memory_bytes
from ._linesearch import LineSearchResult as LineSearchResult
from ._linesearch import line_search as line_search
from ._second_stage import DenseQuasiNewton as DenseQuasiNewton
from ._second_stage import JaxoptLBFGS as JaxoptLBFGS
from ._second_stage import OptaxLBFGS as OptaxLBFGS
from ._protocol import SecondStage as SecondStage
from ._protocol import StepResult as StepResult
from ._second_stage import make_second_stage as make_second_stage
from ._ssbfgs import SSBFGS as SSBFGS
from ._ssbfgs import ssbfgs as ssbfgs
from ._protocol import StageStatus as StageStatus

__all__ = ["StageStatus", "SecondStage", "StepResult", "OptaxLBFGS", "JaxoptLBFGS", "DenseQuasiNewton", "GaussNewton",
           "GNState", "make_second_stage", "lm_solve_form", "memory_bytes", "SSBFGS", "ssbfgs", "line_search",
           "LineSearchResult"]
