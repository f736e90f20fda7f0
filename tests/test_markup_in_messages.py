"""Messages that name TOML tables reach people as written (issue 23 item 6): rich reads ``[name]`` as
markup and swallows it — `agentrig usage` printed "add  to the experiment" for ``[prices."<model>"]``.
Every ``.print(…)`` of a plain or f-string that names a table must go through ``Text`` or ``escape``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "agentrig"
TABLE = re.compile(r"\[\[?(prices|roles|channel|run|benchmark|sandbox|judge|user|analysis|arms|memory|guidelines)\b")


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


def offenders(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "print"
                    and node.args):
                text = _literal_text(node.args[0])
                if text is not None and TABLE.search(text):
                    out.append(f"{path.relative_to(root)}:{node.lineno}: {text[:80]!r}")
    return out


def test_the_check_finds_a_swallowed_table(tmp_path):
    (tmp_path / "m.py").write_text('out.print(f"add [prices.\\"{m}\\"] to it")\nout.print(Text("[prices] ok"))\n')
    assert len(offenders(tmp_path)) == 1


def test_no_message_hands_a_table_name_to_rich_as_markup():
    assert offenders(SRC) == []
