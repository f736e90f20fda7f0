"""No message, docstring or doc page says a word twice in a row ("at at", "the the"): every string
literal of the package (f-strings with their placeholders as ``{}``; implicitly joined pieces as
one string) and every Markdown page is scanned for a doubled function word."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "no", "not", "of",
         "on", "or", "that", "the", "this", "to", "was", "with")
# "plug-in in" is not a doubled word: the first "in" ends a hyphenated word
DOUBLED = re.compile(r"(?<![-\w])(" + "|".join(WORDS) + r")\s+\1\b", re.I)


def _texts(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)


def test_the_pattern_finds_what_it_should():
    assert DOUBLED.search("connection refused at at 127.0.0.1") and DOUBLED.search("see The the docs")
    assert DOUBLED.search("ends at\n  at the end")
    assert not DOUBLED.search("a plug-in in the snapshot") and not DOUBLED.search("that at least one")


def test_no_doubled_words_in_the_package_strings():
    found = [f"{path.relative_to(ROOT)}:{line}: …{text[max(0, m.start() - 30):m.end() + 30]!r}…"
             for path in sorted((ROOT / "src" / "agentrig").rglob("*.py"))
             for line, text in _texts(path) for m in DOUBLED.finditer(text)]
    assert not found, "\n".join(found)


def test_no_doubled_words_in_the_docs():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.relative_to(ROOT)}: …{m.group(0)!r}…" for p in pages if p.is_file()
             for m in DOUBLED.finditer(p.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
