"""``python -m cgmpinn_jax.cli``: the ``cgmpinn-jax`` command."""

import sys

from ._main import main

if __name__ == "__main__":
    sys.exit(main())
