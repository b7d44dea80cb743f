"""The paper's six benchmark problems, one module each, registered by name in
[`PROBLEMS`][cgmpinn_jax.PROBLEMS]: `Poisson1D` (``poisson1d``), `Poisson2D` (``poisson2d``),
`Heat` (``heat``), `DampedWave` (``damped_wave``), `AdvectionDiffusion`
(``advection_diffusion``) and `FisherKPP` (``fisher_kpp``). Each is written through the
[`Problem`][cgmpinn_jax.Problem] interface and has a closed-form solution.
"""

from __future__ import annotations

from .advection_diffusion import AdvectionDiffusion
from .damped_wave import DampedWave
from .fisher_kpp import FisherKPP
from .heat import Heat
from .poisson1d import Poisson1D
from .poisson2d import Poisson2D

__all__ = ["Poisson1D", "Poisson2D", "Heat", "DampedWave", "AdvectionDiffusion", "FisherKPP"]
