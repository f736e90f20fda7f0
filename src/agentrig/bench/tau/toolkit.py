"""The @tool registry: a domain's tools are methods of a Toolkit subclass.

    class AirlineTools(Toolkit):
        @tool(write=True)
        def cancel_reservation(self, reservation_id: str) -> dict:
            '''Cancel the whole reservation.

            Args:
                reservation_id: The reservation ID, such as 'ZFA04Y'.
            '''

The JSON schema of each tool is derived from the signature (types, defaults) and the Google-style
docstring (first paragraph = description, ``Args:`` lines = parameter descriptions). A tool
signals a failure by raising any exception (``ToolError`` preferred); ``Toolkit.call`` never
raises: an unknown tool, bad arguments or a tool failure come back as a ``ToolOutcome`` whose
text starts with ``Error:``.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model


class ToolError(Exception):
    """Raised by a tool for a business-rule failure; its text becomes ``Error: <text>``."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object
    write: bool
    func_name: str
    args_model: type[BaseModel] = field(repr=False, compare=False)

    def openai_schema(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    error: bool
    result: Any = None  # the tool's return value (None on error)


def tool(func: Callable | None = None, *, write: bool = False, name: str | None = None):
    """Mark a Toolkit method as a tool. ``write=True`` for tools that change state."""

    def mark(f: Callable) -> Callable:
        f.__agentrig_tool__ = {"write": write, "name": name or f.__name__}
        return f

    return mark(func) if func is not None else mark


_ARGS_RE = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$", re.MULTILINE)
_SECTION_RE = re.compile(r"^\s*(Returns|Raises|Yields|Examples?|Notes?):\s*$", re.MULTILINE)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description})."""
    doc = inspect.cleandoc(doc or "")
    m = _ARGS_RE.search(doc)
    head = doc[: m.start()] if m else doc
    end = _SECTION_RE.search(head)
    description = (head[: end.start()] if end else head).strip()
    params: dict[str, str] = {}
    if m:
        body = doc[m.end():]
        stop = _SECTION_RE.search(body)
        body = body[: stop.start()] if stop else body
        current = None
        for line in body.splitlines():
            pm = re.match(r"^\s{0,8}(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", line)
            if pm and (current is None or len(line) - len(line.lstrip()) <= indent):
                current, indent = pm.group(1), len(line) - len(line.lstrip())
                params[current] = pm.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    return description, params


def _spec_for(func: Callable, meta: dict) -> ToolSpec:
    sig = inspect.signature(func)
    hints = typing.get_type_hints(func)
    description, param_docs = parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    for pname, p in sig.parameters.items():
        if pname == "self":
            continue
        ann = hints.get(pname, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        from pydantic import Field

        fields[pname] = (ann, Field(default, description=param_docs.get(pname)))
    model = create_model(
        f"{meta['name']}_args", __config__=ConfigDict(extra="forbid"), **fields
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return ToolSpec(meta["name"], description, schema, meta["write"], func.__name__, model)


def to_text(result: Any) -> str:
    """How a tool's return value is shown to the caller (string as is, everything else as JSON)."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(result, default=_json_default)


def _json_default(o: Any) -> Any:
    if isinstance(o, BaseModel):
        return o.model_dump(mode="json")
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


class Toolkit:
    """Base of a domain's tools. Subclasses hold their state (usually ``self.db``)."""

    _specs: ClassVar[dict[str, ToolSpec]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                meta = getattr(value, "__agentrig_tool__", None)
                if meta is not None:
                    specs[meta["name"]] = _spec_for(value, meta)
        cls._specs = specs

    @classmethod
    def tool_specs(cls) -> list[ToolSpec]:
        return list(cls._specs.values())

    @classmethod
    def has_tool(cls, name: str) -> bool:
        return name in cls._specs

    @classmethod
    def is_write(cls, name: str) -> bool:
        spec = cls._specs.get(name)
        return bool(spec and spec.write)

    @classmethod
    def openai_tools(cls) -> list[dict]:
        return [s.openai_schema() for s in cls._specs.values()]

    def call(self, name: str, arguments: dict | None) -> ToolOutcome:
        """Dispatch by name with argument validation; never raises."""
        spec = self._specs.get(name)
        if spec is None:
            return ToolOutcome(f"Error: Tool '{name}' not found.", True)
        if not isinstance(arguments, dict):
            return ToolOutcome(f"Error: arguments of '{name}' must be a JSON object.", True)
        try:
            parsed = spec.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            return ToolOutcome(f"Error: invalid arguments for '{name}': {problems}", True)
        kwargs = {k: getattr(parsed, k) for k in spec.args_model.model_fields}
        try:
            result = getattr(self, spec.func_name)(**kwargs)
        except Exception as exc:  # a tool failure is data for the agent, not a crash
            return ToolOutcome(f"Error: {exc}", True)
        return ToolOutcome(to_text(result), False, result)
