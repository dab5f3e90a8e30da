"""Stand-in for hydra.utils.instantiate: imports `_target_`, instantiates nested configs that
have a `_target_` first (recursive), passes other nested configs as they are (hydra's default
_convert_="none"), lets keyword arguments override config keys, and `_partial_: true` gives a
functools.partial."""

import functools
import importlib

from omegaconf import DictConfig, ListConfig

_META = ("_target_", "_partial_", "_recursive_", "_convert_", "_args_")


def _locate(path):
    module, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:
        return getattr(_locate(module), name)


def _node(value):
    if isinstance(value, DictConfig) and "_target_" in value:
        return instantiate(value)
    if isinstance(value, ListConfig):
        return [_node(v) for v in value]
    return value


def instantiate(config, *args, **kwargs):
    if config is None:
        return None
    if not isinstance(config, DictConfig) or "_target_" not in config:
        return config
    recursive = config.get("_recursive_", True)
    params = {}
    for key in config.keys():
        if key in _META or key in kwargs:
            continue
        value = config[key]
        params[key] = _node(value) if recursive else value
    params.update(kwargs)
    target = _locate(config["_target_"])
    if config.get("_partial_", False):
        return functools.partial(target, *args, **params)
    return target(*args, **params)
