"""Streaming passes over the samples for the EM of `cgmpinn_jax.gmm`.

Every pass of the EM over the data reduces ``(K, N)`` arrays to ``(K,)`` sums.  For
``N > _EM_CHUNK`` the passes are streamed in cache-sized chunks of ``_EM_CHUNK`` samples
(``lax.scan``; faster per pass on CPU at large ``N``); the last chunk is zero-padded
and masked.  For smaller ``N`` the data are processed in one block.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

_EM_CHUNK = 8192  # EM sums are streamed in chunks of this many samples when N is larger


class _SampleStream(NamedTuple):
    """Chunked passes over ``n`` samples of dtype ``dtype`` (static shapes only)."""

    n: int
    dtype: Any

    @property
    def chunked(self):
        return self.n > _EM_CHUNK

    @property
    def n_chunks(self):
        return -(-self.n // _EM_CHUNK)

    @property
    def pad(self):
        return self.n_chunks * _EM_CHUNK - self.n

    def split(self, a):
        """``(N,)`` -> ``(n_chunks, _EM_CHUNK)``, zero-padded."""
        return jnp.pad(a, (0, self.pad)).reshape(self.n_chunks, _EM_CHUNK)

    def reduce_sum(self, fn, *arrays):
        """Sum over samples of ``fn(*arrays, mask)`` (a tuple of arrays); mask None = all valid."""
        if not self.chunked:
            return fn(*arrays, None)
        pad = self.pad
        parts = tuple(self.split(a) for a in arrays)
        first = fn(*(p[0] for p in parts), None)
        mask = self.split(jnp.ones((self.n,), self.dtype))[1:] if pad else None

        def body(acc, args):
            out = fn(*args[:-1], args[-1]) if pad else fn(*args, None)
            return tuple(u + v for u, v in zip(acc, out)), None

        rest = tuple(p[1:] for p in parts) + ((mask,) if pad else ())
        acc, _ = lax.scan(body, first, rest)
        return acc

    def map_samples(self, fn, a):
        """``fn`` maps a 1-D block of samples to outputs with a leading sample axis."""
        if not self.chunked:
            return fn(a)
        out = lax.map(fn, self.split(a))
        n, n_chunks = self.n, self.n_chunks
        return jax.tree.map(lambda o: o.reshape((n_chunks * _EM_CHUNK,) + o.shape[2:])[:n], out)
