"""A run's stages: each one an object that holds its solver's options, its budget and its stop
rule, and builds the solver that runs it.

``TrainConfig(stages=(Adam(steps=5000), LBFGS(steps=10000)))`` is the reference's run;
``(Adam(), GaussNewton(steps=1500))`` the accurate preset's; a third stage is a third element.
The classes: [`Adam`][cgmpinn_jax.stages.Adam], [`LBFGS`][cgmpinn_jax.stages.LBFGS] (optax or
jaxopt), the dense quasi-Newton family [`BFGS`][cgmpinn_jax.stages.BFGS],
[`SSBFGS`][cgmpinn_jax.stages.SSBFGS], [`SSBroyden`][cgmpinn_jax.stages.SSBroyden], and
[`GaussNewton`][cgmpinn_jax.stages.GaussNewton] (Levenberg-Marquardt on the residual rows).
Each builds its solver with ``stage.solver(...)``; every solver follows one protocol,
[`Stage`][cgmpinn_jax.stages.Stage] (``init`` / ``step`` / ``terminate``), and ends with a
[`StageStatus`][cgmpinn_jax.StageStatus].

Examples:
    >>> from cgmpinn_jax.stages import Adam, GaussNewton
    >>> [st.name for st in (Adam(steps=200), GaussNewton(steps=20))]
    ['adam', 'gauss_newton']
"""

from ._options import BFGS as BFGS
from ._options import LBFGS as LBFGS
from ._options import SSBFGS as SSBFGS
from ._options import STAGES as STAGES
from ._options import Adam as Adam
from ._options import GaussNewton as GaussNewton
from ._options import SSBroyden as SSBroyden
from ._options import StageOptions as StageOptions
from ._options import StopRule as StopRule
from ._options import stage_from_dict as stage_from_dict
from ._protocol import Stage as Stage
from ._stopping import Guards as Guards
from ._stopping import accepts as accepts
from ._protocol import StageStatus as StageStatus
from ._protocol import StepResult as StepResult

__all__ = [
    "Adam",
    "LBFGS",
    "BFGS",
    "SSBFGS",
    "SSBroyden",
    "GaussNewton",
    "StageOptions",
    "StopRule",
    "STAGES",
    "stage_from_dict",
    "Stage",
    "StageStatus",
    "StepResult",
    "Guards",
    "accepts",
]
