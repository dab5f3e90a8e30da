"""Stand-in for omegaconf: YAML configs as DictConfig/ListConfig views over plain containers,
with attribute and item access, `${a.b}` and `${oc.select:a.b,default}` interpolation resolved
against the root on read, `???` raising MissingMandatoryValue, and open_dict (a no-op: the
stand-in does not enforce struct mode)."""

import contextlib
import copy
import re

import yaml

__version__ = "0-standin"
_INTERP = re.compile(r"\$\{([^}]*)\}")


class MissingMandatoryValue(Exception):
    pass


class ConfigAttributeError(AttributeError):
    pass


class ConfigKeyError(KeyError):
    pass


def _wrap(value, root):
    if isinstance(value, dict):
        return DictConfig(value, root)
    if isinstance(value, list):
        return ListConfig(value, root)
    return value


def _literal(text):
    return yaml.safe_load(text) if text else None


def _select(root, path):
    node = root
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigKeyError(path)
        node = node[part]
    return node


def _resolve(value, root, key):
    if isinstance(value, str):
        if value == "???":
            raise MissingMandatoryValue(f"missing mandatory value: {key}")
        whole = _INTERP.fullmatch(value)
        if whole:
            return _interpolate(whole.group(1), root, key)
        if _INTERP.search(value):
            return _INTERP.sub(lambda m: str(_interpolate(m.group(1), root, key)), value)
    return _wrap(value, root)


def _interpolate(expr, root, key):
    if expr.startswith("oc.select:"):
        path, _, default = expr[len("oc.select:"):].partition(",")
        try:
            return _resolve(_select(root, path.strip()), root, path)
        except (ConfigKeyError, MissingMandatoryValue):
            return _literal(default.strip())
    if ":" in expr:
        raise NotImplementedError(f"omegaconf stand-in: resolver in ${{{expr}}} ({key})")
    return _resolve(_select(root, expr), root, expr)


def _raw(value):
    return copy.deepcopy(value._content) if isinstance(value, (DictConfig, ListConfig)) else value


class DictConfig:
    def __init__(self, content, root=None):
        object.__setattr__(self, "_content", content)
        object.__setattr__(self, "_root", content if root is None else root)

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        try:
            return self[key]
        except ConfigKeyError:
            raise ConfigAttributeError(key) from None

    def __getitem__(self, key):
        if key not in self._content:
            raise ConfigKeyError(key)
        return _resolve(self._content[key], self._root, key)

    def __setattr__(self, key, value):
        self[key] = value

    def __setitem__(self, key, value):
        self._content[key] = _raw(value)

    def __delitem__(self, key):
        del self._content[key]

    def __delattr__(self, key):
        del self._content[key]

    def __contains__(self, key):
        return key in self._content

    def __iter__(self):
        return iter(self._content)

    def __len__(self):
        return len(self._content)

    def keys(self):
        return self._content.keys()

    def items(self):
        return [(k, self[k]) for k in self._content]

    def values(self):
        return [self[k] for k in self._content]

    def get(self, key, default=None):
        return self[key] if key in self._content else default

    def __deepcopy__(self, memo):
        return DictConfig(copy.deepcopy(self._content, memo))

    def __repr__(self):
        return f"DictConfig({self._content!r})"


class ListConfig(list):
    def __init__(self, content, root):
        super().__init__(_resolve(v, root, i) for i, v in enumerate(content))
        self._content = content


class OmegaConf:
    @staticmethod
    def load(path):
        with open(path) as f:
            return DictConfig(yaml.safe_load(f) or {})

    @staticmethod
    def create(obj=None):
        return DictConfig(copy.deepcopy(obj or {}))

    @staticmethod
    def to_container(cfg, resolve=False):
        if not resolve:
            return copy.deepcopy(cfg._content)
        if isinstance(cfg, DictConfig):
            return {k: OmegaConf.to_container(v, True) if isinstance(v, (DictConfig, ListConfig)) else v
                    for k, v in cfg.items()}
        return [OmegaConf.to_container(v, True) if isinstance(v, (DictConfig, ListConfig)) else v for v in cfg]


@contextlib.contextmanager
def open_dict(cfg):
    yield cfg
