"""Training: a run's resolved settings and refresh schedule, the objective (scalar and
least-squares views), the jittable engine, the host driver (``train``) with its compile
cache, records and results, the float64 scope, sweeps, checkpoints and resuming."""

from ._checkpoint import SUBDIR as CHECKPOINT_SUBDIR
from ._checkpoint import CheckpointError as CheckpointError
from ._checkpoint import TrainingInterrupted as TrainingInterrupted
from ._disk_cache import enable as enable_compile_cache
from ._disk_cache import resolve as compile_cache_folder
from ._compile import COMPILE_CACHE as COMPILE_CACHE
from ._compile import CompileCache as CompileCache
from ._driver import train as train
from ._infer import infer as infer
from ._precision import precision_scope as precision_scope
from ._recorder import Progress as Progress
from ._records import ChunkHistory as ChunkHistory
from ._records import History as History
from ._records import StageRecord as StageRecord
from ._records import StageStatus as StageStatus
from ._records import TrainResult as TrainResult
from ._resuming import recorded_run as recorded_run
from ._resuming import resume as resume
from ._schedule import refresh_schedule as refresh_schedule
from ._sweep import SWEEPABLE as SWEEPABLE
from ._sweep import SweepResult as SweepResult
from ._sweep import sweep as sweep

__all__ = [
    "train",
    "infer",
    "sweep",
    "resume",
    "SweepResult",
    "SWEEPABLE",
    "CompileCache",
    "COMPILE_CACHE",
    "TrainResult",
    "StageRecord",
    "History",
    "ChunkHistory",
    "StageStatus",
    "refresh_schedule",
    "precision_scope",
    "CheckpointError",
    "TrainingInterrupted",
    "enable_compile_cache",
    "compile_cache_folder",
    "Progress",
    "recorded_run",
    "CHECKPOINT_SUBDIR",
]
