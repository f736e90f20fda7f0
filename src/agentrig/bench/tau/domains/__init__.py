"""The domains, by name: each ``domains/<name>.py`` (or package) exposes ``DOMAIN: DomainSpec``.

Modules are imported lazily, on first ``get_domain(name)``: airline's tools are not loaded to play
retail. Besides the τ²-bench domains, any module of this package that exposes ``DOMAIN`` is a
domain (our own built-in one among them).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from agentrig.errors import ConfigError, did_you_mean

from ..domain import DomainSpec

TAU2_DOMAINS = ("airline", "retail", "telecom", "mock")


def _module_names() -> list[str]:
    names = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    return sorted(set(names))


@lru_cache(maxsize=None)
def _load(name: str) -> DomainSpec | None:
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{name}":
            return None
        raise
    spec = getattr(module, "DOMAIN", None)
    return spec if isinstance(spec, DomainSpec) else None


def available_domains() -> list[str]:
    """Names of every domain that can be played: the τ²-bench ones first, then the others."""
    present = set(_module_names())
    names = [n for n in TAU2_DOMAINS if n in present and _load(n) is not None]
    names += [n for n in sorted(present - set(TAU2_DOMAINS)) if _load(n) is not None]
    return names


def get_domain(name: str) -> DomainSpec:
    """The DomainSpec of a domain by name; an unknown name is a ConfigError listing the domains."""
    spec = None
    if name and name.isidentifier() and not name.startswith("_"):
        spec = _load(name)
    if spec is None:
        known = available_domains()
        hint = did_you_mean(str(name), known)
        raise ConfigError(f"unknown domain {name!r}; {hint}available domains: {', '.join(known) or '(none)'}")
    return spec
