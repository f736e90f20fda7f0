"""The HTML page: jinja2 with autoescape, the CSS and the script inlined, and a Content Security
Policy that lets only the report's own script run (by its hash) and loads nothing from anywhere.

The policy is a second wall behind the escaping: even if some text did reach the page as markup,
an injected ``<script>`` or ``onerror=`` handler would be refused by the browser."""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2

from .safe import Markup


def _asset(name: str) -> str:
    return resources.files("agentrig.report").joinpath("templates", name).read_text(encoding="utf-8")


class _Cache(jinja2.FileSystemBytecodeCache):
    """The compiled page template, kept between processes (compiling it is a good part of a small
    report's time). jinja2's per-user temporary directory (created 0700 and checked to be the
    user's own); a template whose text changed is recompiled (the entry holds the source's
    checksum). A cache that cannot be written is no error: the page is compiled again."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except OSError:
            pass


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return _Cache()
    except (OSError, RuntimeError):  # no safe temporary directory here
        return None


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FunctionLoader(lambda name: _asset(name)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=False, lstrip_blocks=False, bytecode_cache=_bytecode_cache())
    return env


def script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def csp(script: str) -> str:
    return ("default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
            f"style-src 'unsafe-inline'; script-src '{script_hash(script)}'")


def render(context: dict[str, Any]) -> str:
    script = _asset("report.js")
    if "</script" in script.lower():  # pragma: no cover - a guard for whoever edits report.js
        raise RuntimeError("report.js must not contain '</script'")
    page = _env().get_template("report.html")
    return page.render(**context, script=Markup(script), css=Markup(_asset("report.css")), csp=csp(script))
