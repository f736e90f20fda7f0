"""Putting data into the report without letting it become markup or code.

Two ways in, both escaped:

- text in the HTML and the SVG goes through jinja2's autoescape or ``markupsafe.escape``;
- data for the page's script goes into ``<script type="application/json">`` blocks as JSON whose
  ``<``, ``>`` and ``&`` (and the JavaScript line terminators U+2028 / U+2029) are written as
  ``\\uXXXX`` escapes, so no ``</script>`` or ``<!--`` can appear inside; the script reads it with
  ``JSON.parse`` and writes it into the page with ``textContent`` only.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup, escape

__all__ = ["Markup", "escape", "json_for_script"]

_REPLACEMENTS = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def json_for_script(value: Any) -> Markup:
    """``value`` as JSON safe to place between ``<script type="application/json">`` tags."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, esc in _REPLACEMENTS:
        if raw in text:
            text = text.replace(raw, esc)
    return Markup(text)
