"""docs/architecture.md is true where the code can say so (issue 34, item 7).

Read from the doc, checked against the tree (nothing is imported):
- every file or folder it names exists: a name in backticks that looks like a path (it has a ``/``
  or ends in ``.py``), a module path in the drawing of a run's flow, a link to another doc. Paths are
  relative to ``src/agentrig/`` unless they are the repository's (``tests/``, ``docs/``, ``perf/``…);
  in a row of the layout table a bare name is looked for under that row's folders, and a bare
  identifier there (``fake_endpoint``, ``serve_main``) must be a module or a name defined there;
- the layout table has a row for every top-level folder and module of the package, and its core row
  lists the core floor's modules of ``tests/test_import_layers.py``;
- the drawing of the floors is the ``FLOORS`` table of ``tests/test_import_layers.py``;
- every package under ``src/agentrig`` has an ``__init__.py`` whose docstring says what it holds.

A failure lists every wrong claim with its line, so a move is followed in the doc in one pass.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.test_import_layers import FLOORS

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "src" / "agentrig"
DOC = REPO / "docs" / "architecture.md"

TICKED = re.compile(r"`([^`]+)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
FLOW_PATH = re.compile(r"(?<![\w./-])(?:[a-z_]+(?:/[a-z_]+)+/?(?:\.py)?|[a-z_]+/|[a-z_]+\.py)(?![\w-])")
IDENT = re.compile(r"[a-z_][a-z0-9_]*")


def sections(text: str) -> dict[str, list[tuple[int, str]]]:
    """The doc's lines by ``## `` section, with their line numbers."""
    out: dict[str, list[tuple[int, str]]] = {}
    current = ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            current = line[3:].strip()
        out.setdefault(current, []).append((n, line))
    return out


def code_blocks(lines: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    blocks, block = [], None
    for n, line in lines:
        if line.startswith("```"):
            if block is None:
                block = []
            else:
                blocks.append(block)
                block = None
        elif block is not None:
            block.append((n, line))
    return blocks


def pathlike(name: str) -> bool:
    """A name in backticks that means a file or folder (not a placeholder such as ``bench/NAME/``)."""
    if " " in name or "*" in name or any(part.isupper() for part in name.split("/")):
        return False
    return "/" in name or name.endswith(".py")


def exists(name: str, folders: list[Path], anywhere_below: bool) -> bool:
    """``name`` as a file or folder in one of ``folders`` (a module path may leave out ``.py``);
    with ``anywhere_below``, a bare name also in any folder below them."""
    stem = name.rstrip("/")
    for folder in folders:
        if (folder / stem).exists() or (not stem.endswith(".py") and (folder / f"{stem}.py").is_file()):
            return True
    if anywhere_below and "/" not in stem:
        return any(next(folder.rglob(stem), None) is not None for folder in folders)
    return False


def defines(folders: list[Path], name: str) -> bool:
    """``name`` is a module or package, or a top-level function, class or variable, under ``folders``."""
    for folder in folders:
        if next(folder.rglob(f"{name}.py"), None) is not None or (folder / name / "__init__.py").is_file():
            return True
        for path in folder.rglob("*.py"):
            if "builtin" in path.relative_to(PKG).parts:
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                    return True
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                        return True
    return False


def table_rows(lines: list[tuple[int, str]]) -> list[tuple[int, str, str]]:
    """The layout table's rows: (line, first cell, second cell), header and rule left out."""
    rows = [(n, line) for n, line in lines if line.startswith("|")]
    out = []
    for n, line in rows[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out.append((n, cells[0], "|".join(cells[1:])))
    return out


TEXT = DOC.read_text(encoding="utf-8")
SECTIONS = sections(TEXT)


def wrong_paths() -> list[str]:
    bad: list[str] = []
    root = [PKG, REPO]
    table = {n for n, _, _ in table_rows(SECTIONS["The layout"])}
    for n, first, rest in table_rows(SECTIONS["The layout"]):
        folders = [PKG / f.rstrip("/") for f in TICKED.findall(first) if f.endswith("/")] or [PKG]
        for name in TICKED.findall(first):
            if pathlike(name) and not exists(name, root, False):
                bad.append(f"line {n}: `{name}` (layout table): no such file or folder under src/agentrig/")
        for name in TICKED.findall(rest):
            if pathlike(name):
                if not exists(name, folders + root, True):
                    where = ", ".join(f"{f.relative_to(PKG)}/" for f in folders if f != PKG) or "src/agentrig/"
                    bad.append(f"line {n}: `{name}` (layout table): not found in {where}")
            elif IDENT.fullmatch(name) and not defines(folders, name):
                where = ", ".join(f"{f.relative_to(PKG)}/" for f in folders)
                bad.append(f"line {n}: `{name}` (layout table): no module or name `{name}` in {where}")
    for title, lines in SECTIONS.items():
        in_code = {n for block in code_blocks(lines) for n, _ in block}
        for n, line in lines:
            if n in in_code and title == "The flow of a run":
                for name in FLOW_PATH.findall(line):
                    if not exists(name, root, True):
                        bad.append(f"line {n}: {name} (the flow): no such module or folder under src/agentrig/")
            elif n not in in_code and n not in table:
                for name in TICKED.findall(line):
                    if pathlike(name) and not exists(name, root, False):
                        bad.append(f"line {n}: `{name}`: no such file or folder under src/agentrig/ or the repository")
            for target in LINK.findall(line):
                if "://" not in target and not (DOC.parent / target).exists():
                    bad.append(f"line {n}: link to {target}: no such file in docs/")
    return sorted(bad, key=lambda b: int(b.split(":")[0].removeprefix("line ")))


def test_every_path_the_doc_names_exists():
    bad = wrong_paths()
    assert bad == [], "docs/architecture.md names what is not there:\n" + "\n".join(bad)


def test_the_path_reader_reads_the_doc():
    # a blind reader would find nothing wrong: it must see the names the doc gives
    rows = table_rows(SECTIONS["The layout"])
    assert len(rows) > 15 and any("`channel/wires/`" in first for _, first, _ in rows)
    flow = [name for block in code_blocks(SECTIONS["The flow of a run"]) for _, line in block
            for name in FLOW_PATH.findall(line)]
    assert {"run/executor", "trial/envelope", "store/store", "benchmark.py", "installed.py"} <= set(flow)
    assert not exists("run/no_such_module", [PKG, REPO], True) and exists("run/executor", [PKG, REPO], True)
    assert defines([PKG / "testing"], "fake_endpoint") and not defines([PKG / "testing"], "no_such_name")


def test_the_layout_table_has_every_top_level_folder_and_module():
    named = {name.rstrip("/").split("/")[0].removesuffix(".py")
             for _, first, _ in table_rows(SECTIONS["The layout"]) for name in TICKED.findall(first)}
    tops = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    tops |= {p.stem for p in PKG.glob("*.py") if p.name != "__init__.py"}
    assert sorted(tops - named) == [], "docs/architecture.md's layout table has no row for these"


def test_the_core_row_lists_the_core_floor():
    core_row = next(first for _, first, _ in table_rows(SECTIONS["The layout"]) if "`errors.py`" in first)
    doc = {name.removesuffix(".py") for name in TICKED.findall(core_row)}
    floor = {m.removeprefix("agentrig.") for m in FLOORS["core"][1] if m != "agentrig"}
    assert doc == floor, ("docs/architecture.md's core row and FLOORS['core'] in tests/test_import_layers.py differ: "
                          f"only in the doc {sorted(doc - floor)}, only in FLOORS {sorted(floor - doc)}")


def test_the_floors_drawn_are_the_import_test_s():
    block = code_blocks(SECTIONS["The floors"])[0]
    drawn: dict[int, set[str]] = {}
    for _, line in block:
        found = re.match(r"\s*(\d+)\s+(.*)", line)
        if found:
            words = re.sub(r"\(.*?\)", " ", found.group(2)).replace(",", " ").split()
            drawn[int(found.group(1))] = set(words)
    held: dict[int, set[str]] = {}
    for floor, (level, prefixes) in FLOORS.items():
        held.setdefault(level, set()).add(floor)
        # a module a floor holds besides its own package is drawn by its file name (cli.py on commands')
        held[level] |= {p.removeprefix("agentrig.") + ".py" for p in prefixes
                        if floor != "core" and p != f"agentrig.{floor}"}
    differ = [f"floor {level}: drawn {sorted(drawn.get(level, ()))}, FLOORS {sorted(held.get(level, ()))}"
              for level in sorted(drawn.keys() | held.keys()) if drawn.get(level) != held.get(level)]
    assert len(drawn) > 5
    assert differ == [], ("docs/architecture.md's floors and FLOORS in tests/test_import_layers.py differ:\n"
                          + "\n".join(differ))


def packages() -> list[Path]:
    """Every package folder under src/agentrig (a terminal task's own files under
    ``bench/terminal/builtin/`` are task data, not the package), and every folder of Python files
    beside them that lacks its ``__init__.py``."""
    out, todo = [], [PKG]
    while todo:
        folder = todo.pop()
        out.append(folder)
        for sub in sorted(p for p in folder.iterdir() if p.is_dir() and p.name.isidentifier()
                          and p.name != "__pycache__"):
            if (sub / "__init__.py").is_file() or any(sub.glob("*.py")):
                todo.append(sub)
    return sorted(out)


def test_every_package_says_what_it_holds():
    bad = []
    for folder in packages():
        init = folder / "__init__.py"
        where = folder.relative_to(PKG.parent)
        if not init.is_file():
            bad.append(f"{where}/: no __init__.py")
        elif not (ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or "").strip():
            bad.append(f"{where}/__init__.py: no docstring saying what the folder holds")
    assert len(packages()) > 20
    assert bad == [], "\n".join(bad)
