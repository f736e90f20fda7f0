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

Fidelity to τ²-bench (``tau2.environment``):

- the text of a result is what tau2's ``Environment.to_json_str`` makes of the tool's return value
  (see ``to_text``); tools return plain dicts / lists that stand for tau2's pydantic model dumps;
- a failure is ``"Error: " + str(exception)``; an unknown tool is ``Error: Tool '<name>' not found.``;
- tau2 calls the tool method with the raw keyword arguments, so a missing or unexpected argument
  fails with Python's own ``TypeError`` text (``AirlineTools.get_user_details() missing 1 required
  positional argument: 'user_id'``); we do the same. Arguments that are present are coerced to the
  annotated types first (pydantic lax mode), where tau2 passes them through unchecked: a value
  that cannot be coerced is an ``Error:`` result here.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model

from agentrig.errors import Signal


class ToolError(Signal):
    """Raised by a tool for a business-rule failure; its text becomes ``Error: <text>``."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object
    write: bool
    func_name: str
    args_model: type[BaseModel] = field(repr=False, compare=False)
    # per-parameter validators used by Toolkit.call (coercion of the arguments that are present)
    adapters: dict[str, TypeAdapter] = field(default_factory=dict, repr=False, compare=False)

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


def _unwrap(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph (list items keep their own lines)."""
    paragraphs = []
    for para in re.split(r"\n\s*\n", text):
        lines: list[str] = []
        for line in para.splitlines():
            line = line.strip()
            if lines and not re.match(r"^([-*•]|\d+[.)])\s", line):
                lines[-1] = f"{lines[-1]} {line}"
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(p for p in paragraphs if p)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description})."""
    doc = inspect.cleandoc(doc or "")
    m = _ARGS_RE.search(doc)
    head = doc[: m.start()] if m else doc
    end = _SECTION_RE.search(head)
    description = _unwrap((head[: end.start()] if end else head).strip())
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
    adapters: dict[str, TypeAdapter] = {}
    for pname, p in sig.parameters.items():
        if pname == "self":
            continue
        ann = hints.get(pname, Any)
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (ann, Field(default, description=param_docs.get(pname)))
        # a parameter defaulting to None also takes an explicit null (the schema keeps the type)
        adapters[pname] = TypeAdapter(typing.Optional[ann] if p.default is None else ann)
    # like tau2's ``create_model("parameters", ...)``: default config, titles kept
    model = create_model("parameters", **fields)
    schema = model.model_json_schema()
    schema.setdefault("properties", {})
    return ToolSpec(meta["name"], description, schema, meta["write"], func.__name__, model, adapters)


class PlainResult:
    """Wrap a tool's return value that tau2 returns as a plain dict/list (not a pydantic model).

    tau2's ``to_json_str`` turns every int, float and bool *inside* such a plain container into a
    string (``{"count": 3}`` is shown as ``{"count": "3"}``); values inside model dumps keep their
    JSON types. Plain dicts/lists returned without this wrapper are taken to be model dumps.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _tau2_process(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, list):
        return [_tau2_process(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_tau2_process(v) for v in value)
    if isinstance(value, dict):
        return {k: _tau2_process(v) for k, v in value.items()}
    return value  # left to json's default=str


def to_text(result: Any) -> str:
    """How a tool's return value is shown to the caller, exactly as tau2's ``to_json_str``.

    - a string is shown as is;
    - a bare int / float / bool becomes a JSON string of its ``str()`` (``3`` -> ``"3"``,
      ``True`` -> ``"True"``), ``None`` becomes ``null``;
    - a pydantic model, or a dict / list / tuple standing for model dumps, becomes
      ``json.dumps(...)`` with the default separators (``", "``, ``": "``), ASCII escapes and
      ``default=str``;
    - ``PlainResult(x)`` becomes ``json.dumps`` of ``x`` with every number and bool stringified.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, PlainResult):
        return json.dumps(_tau2_process(result.value), default=_json_default)
    if isinstance(result, (bool, int, float)):
        return json.dumps(str(result))
    if isinstance(result, BaseModel):
        return json.dumps(result.model_dump(), default=_json_default)
    return json.dumps(result, default=_json_default)


def _json_default(o: Any) -> Any:
    if isinstance(o, BaseModel):
        return o.model_dump()
    return str(o)


class Toolkit:
    """Base of a domain's tools. Subclasses hold their state (usually ``self.db``)."""

    _specs: ClassVar[dict[str, ToolSpec]]

    def __init__(self, db: Any = None) -> None:
        self.db = db

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
        """Dispatch by name with argument coercion; never raises."""
        spec = self._specs.get(name)
        if spec is None:
            return ToolOutcome(f"Error: Tool '{name}' not found.", True)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return ToolOutcome(f"Error: arguments of '{name}' must be a JSON object.", True)
        kwargs: dict[str, Any] = {}
        problems: list[str] = []
        for key, value in arguments.items():
            adapter = spec.adapters.get(key)
            if adapter is None:  # unexpected: Python's TypeError tells, as in tau2
                kwargs[key] = value
                continue
            try:
                kwargs[key] = adapter.validate_python(value)
            except ValidationError as exc:
                for e in exc.errors():
                    loc = ".".join(str(x) for x in (key, *e["loc"]))
                    problems.append(f"{loc}: {e['msg']}")
        if problems:
            return ToolOutcome(f"Error: invalid arguments for '{name}': " + "; ".join(problems), True)
        try:
            result = getattr(self, spec.func_name)(**kwargs)
        except Exception as exc:  # a tool failure is data for the agent, not a crash
            return ToolOutcome(f"Error: {exc}", True)
        return ToolOutcome(to_text(result), False, result)
