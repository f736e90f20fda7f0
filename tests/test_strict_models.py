"""One strict base model: every pydantic model of the package that forbids unknown fields gets it
from ``agentrig.types.Strict``, never from a ``model_config`` of its own (which may add other keys,
e.g. ``frozen``)."""

from __future__ import annotations

import ast
import importlib
import inspect

from pydantic import BaseModel

from agentrig.types import Strict

from .support import package_modules


def test_every_strict_model_derives_from_types_strict():
    loose = []
    for name, _ in package_modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (inspect.isclass(obj) and issubclass(obj, BaseModel) and obj.__module__ == name
                    and obj.model_config.get("extra") == "forbid" and not issubclass(obj, Strict)):
                loose.append(f"{name}.{obj.__qualname__}")
    assert not loose, f"strict models not derived from agentrig.types.Strict: {loose}"


def test_no_model_spells_extra_forbid_but_strict():
    spelled = []
    for name, path in package_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "extra" and isinstance(node.value, ast.Constant) \
                    and node.value.value == "forbid":
                spelled.append(f"{name}:{node.lineno}")
    assert spelled == ["agentrig.types:" + str(_strict_line())], (
        f"extra='forbid' is spelled outside types.Strict: {spelled}; derive from agentrig.types.Strict")


def _strict_line() -> int:
    source = inspect.getsource(importlib.import_module("agentrig.types"))
    return next(i for i, line in enumerate(source.splitlines(), 1) if 'extra="forbid"' in line)
