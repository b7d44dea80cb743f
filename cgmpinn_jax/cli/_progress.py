"""Progress bars for the command line (``tqdm``, on a terminal only)."""

from __future__ import annotations

import sys
from typing import Any, cast

from ..stages import STAGES

__all__: list = []


class _Bars:
    """Progress bars for the command line: one ``tqdm`` bar per stage (steps done / budget,
    elapsed, time left, the loss; an inverse run's coefficients), on a terminal only; the
    library's plain progress lines elsewhere (a log file, CI)."""

    def __init__(self, config):
        self.config, self.bar, self.stage = config, None, None

    @staticmethod
    def wanted(args) -> bool:
        return not args.quiet and sys.stderr.isatty()

    def __call__(self, p) -> None:
        from tqdm import tqdm

        if p.stage != self.stage:
            self.close()
            self.stage = p.stage
            name = cast(Any, STAGES[p.stage]).label
            self.bar = tqdm(
                total=p.total, desc=f"{name:>12}", unit="it", file=sys.stderr, dynamic_ncols=True
            )
        post = {"loss": f"{p.loss:.3e}"}
        if p.coeffs:
            post.update({k: f"{v:.5g}" for k, v in p.coeffs.items()})
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(p.done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
