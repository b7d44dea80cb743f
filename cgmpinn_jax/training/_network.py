"""``train``'s ``network`` argument: a built-in name, a factory or a module, resolved into the
run's config (when it can be saved by name) or into the run's settings (when it cannot)."""

from __future__ import annotations

from typing import Any

import equinox as eqx

from .._importable import importable_path
from ..config import NetworkOptions, TrainConfig

__all__ = ["FixedNetwork", "network_choice", "importable_path"]


class FixedNetwork:
    """A network given to ``train`` as a module: a factory that returns it (the run's key is
    not used), hashed by identity so a run's settings can key the compile cache."""

    def __init__(self, module: eqx.Module):
        self.module = module
        self.__name__ = type(module).__name__

    def __call__(self, key, in_dim, out_dim):  # noqa: ARG002 - the factory signature
        return self.module

    def __hash__(self) -> int:
        return id(self.module)

    def __eq__(self, other) -> bool:
        return isinstance(other, FixedNetwork) and other.module is self.module


def network_choice(network: Any, config: TrainConfig) -> tuple[TrainConfig, Any]:
    """``(config, object)`` for ``train(..., network=network)``: a name, a
    [`NetworkOptions`][cgmpinn_jax.NetworkOptions] or an importable factory goes into the
    config (saved with the model, part of a checkpoint's identity); any other factory, or a
    module, is returned as the run's network object (the model then reloads only when given
    the network again)."""
    if network is None:
        return config, None
    if isinstance(network, NetworkOptions):
        return config.replace(network=network), None
    if isinstance(network, str):
        return config.replace(network=NetworkOptions(network)), None
    if isinstance(network, eqx.Module):
        return config, FixedNetwork(network)
    if callable(network):
        path = importable_path(network)
        return (config.replace(network=NetworkOptions(path)), None) if path else (config, network)
    raise TypeError(
        "train: network must be a built-in network's name, 'package.module:factory', "
        "a NetworkOptions, "
        f"a factory (key, in_dim, out_dim) -> equinox.Module or an equinox Module; got "
        f"{type(network).__name__}"
    )
