"""Running a task's test scripts offline with agentrig's own Python and pytest.

Most Terminal-Bench tasks ship the template ``run-tests.sh`` (or ``tests/setup-uv-pytest.sh`` +
``tests/run-uv-pytest.sh``), and Harbor tasks a ``tests/test.sh``, that install curl with apt,
download uv from the internet, add pytest with uv and then run ``uv run pytest ... -rA`` (or
``uvx ... pytest ...``). Under a sandbox without network that bootstrap cannot run. We read each
script line by line (by what the commands do, not by byte equality with one template):

- bootstrap commands that only fetch the test tool chain (``apt-get update``, ``apt-get install
  curl``, the astral.sh uv installer, ``source $HOME/.local/bin/env``, ``uv init``, ``uv venv``,
  activating that venv, installing pytest or packages agentrig's verifier Python already has)
  become ``:`` (no-op), keeping the script's structure (``if``/``fi``) intact;
- every pytest invocation (``uv run pytest``, ``uvx [opts] pytest``, ``pytest``, ``python -m
  pytest``) becomes agentrig's interpreter running pytest (``-s``: no user site-packages, where
  the agent could have left a ``usercustomize``; ``-P`` for the forms that do not put the current
  directory on ``sys.path``, like the ``pytest`` command); ``uv run python`` becomes that
  interpreter too;
- everything else stays as written (the working-directory check, ``cd``, reward writing).

Each line is read as the shell splits it (``shellread``: ``||``, ``&&``, ``;``, ``|``,
redirections, ``$(…)`` are syntax, never a package name), and each command for what it fetches
(``fetches``: a package registry this machine reaches, a host beyond them, or only what is
missing). If a command still needs the network after this (another package, ``npm install``,
``curl`` of something else, ``uv sync`` ...) and the script does not tolerate its failure (``||
true``, an ``if`` condition), the plan says ``needs_network`` with what it reaches and the line;
a fetch of only what is missing (``cargo test``, ``npx``) never decides: the trial plays. With
the network the line runs as written (the registries through the host's settings), and without
it the verifier never fakes it.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
from pathlib import Path

from pydantic import BaseModel, Field

from ..core.fetches import PYPI, fetch_of
from ..core.shellread import Unit, units

# The packages pytest brings along: always present where pytest is.
_PYTEST_FAMILY = {"pytest", "iniconfig", "packaging", "pluggy", "pygments", "exceptiongroup", "tomli"}
# Report plugins whose flags we drop (their report is not used for the verdict).
_DROPPED_PLUGINS = {"pytest-json-ctrf": ("--ctrf",), "pytest-json-report": ("--json-report", "--json-report-file")}
_APT_BOOTSTRAP = {"curl", "ca-certificates"}
_HARMLESS = {":", "true"}  # what a fallback of an install may be that changes nothing (`pip install x || true`)


class ScriptRewrite(BaseModel):
    """One shell script rewritten for the offline verifier."""

    text: str
    changed: bool
    needs_network: str | None = None  # the first line that still needs the network
    bootstrap: list[str] = Field(default_factory=list)  # the tool-chain lines made no-ops
    notes: list[str] = Field(default_factory=list)
    provided: list[str] = Field(default_factory=list)  # packages installed by the script, taken from ours
    fetch: dict[str, list[str]] = Field(default_factory=dict)  # with the network: host directory -> requirements to fetch
    in_venv: bool = False  # a rewritten call ran in a uv-managed environment (`uv run`, `uvx`): its `python` is first on PATH


def _logical_lines(text: str) -> list[str]:
    """Physical lines with backslash continuations joined (one logical command per item)."""
    out: list[str] = []
    buf = ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\") and not raw.lstrip().startswith("#"):
            buf += raw.rstrip()[:-1] + " "
            continue
        out.append(buf + raw)
        buf = ""
    if buf:
        out.append(buf)
    return out


def _strip_redirects(cmd: str) -> str:
    cmd = re.sub(r"\s*(\d?>>?|&>)\s*/dev/null", "", cmd)
    cmd = re.sub(r"\s*2>&1", "", cmd)
    cmd = re.sub(r"\s*\|\|\s*true\s*$", "", cmd)
    return cmd.strip().rstrip(";").strip()


def _req_name(req: str) -> str:
    return re.split(r"[<>=!~\[;@ ]", req.strip().strip("'\""), maxsplit=1)[0].lower().replace("_", "-")


def _available(req: str, notes: list[str], provided: list[str] | None = None) -> str | None:
    """None when the verifier Python provides `req` (a note when it is not pytest's), else why not."""
    if req.startswith("<"):  # a requirements file or an editable project: what it pulls is unknown here
        return f"installs {req.strip('<>')} (its requirements are fetched from a package index)"
    name = _req_name(req)
    if not name:
        return f"installs {req!r}, which is not a requirement agentrig can check"
    if name in _PYTEST_FAMILY or name in _DROPPED_PLUGINS:
        return None
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return f"installs {req!r}, which agentrig's verifier Python does not provide"
    notes.append(f"{req} is taken from agentrig's verifier Python ({name} {version})")
    if provided is not None:
        provided.append(name)
    return None


def _install_reqs(words: list[str]) -> list[str] | None:
    """The requirements of an install command (uv add / uv pip install / pip install), else None."""
    w = list(words)
    if w[:2] == ["uv", "run"] and len(w) > 2 and w[2] in ("pip", "pip3"):
        w = w[2:]
    if w[:2] == ["uv", "add"]:
        args = w[2:]
    elif w[:3] == ["uv", "pip", "install"]:
        args = w[3:]
    elif w and w[0] in ("pip", "pip3") and w[1:2] == ["install"]:
        args = w[2:]
    elif w[:4] in (["python", "-m", "pip", "install"], ["python3", "-m", "pip", "install"]):
        args = w[4:]
    else:
        return None
    for i, a in enumerate(args):
        flag, _, inline = a.partition("=")
        if flag in ("-r", "--requirement", "-e", "--editable") or re.fullmatch(r"-[re]\S+", a):
            target = inline or (a[2:] if re.fullmatch(r"-[re]\S+", a) else (args[i + 1] if i + 1 < len(args) else ""))
            kind = "a requirements file" if flag.startswith(("-r", "--req")) else "an editable project"
            return [f"<{kind} {target}>".replace(" >", ">")]
    return [a for a in args if not a.startswith("-")]


# Tool-chain bootstrap steps a test script may run that fetch nothing the tests need (or only what
# agentrig's own test runner provides): apt's index, uv's installer and its env files, a venv.
_BOOTSTRAP_STEPS = tuple(re.compile(p) for p in (
    r"(sudo\s+)?apt(-get)?\s+(-\S+\s+)*update(\s+-\S+)*",
    r"rm\s+-rf\s+/var/lib/apt/lists/\*",
    r"curl\s+(-\S+\s+)*https://astral\.sh/uv/(\S+/)?install\.sh\s*\|\s*(ba)?sh(\s+-s\s+.*)?",
    r"(source|\.)\s+\"?\$(HOME|\{HOME\})/\.(local|cargo)/bin/env\"?",
    r"(export\s+)?PATH=\"?\$(HOME|\{HOME\})/\.(local|cargo)/bin:\$PATH\"?",
    r"uv\s+(init|venv)(\s+\S+)*",
    r"(source|\.)\s+\S+/bin/activate",
    r"python3?\s+-m\s+venv\s+\S+",
))


def _is_bootstrap(cmd: str, notes: list[str], provided: list[str] | None = None,
                  words: list[str] | None = None) -> bool | str:
    """True: a tool-chain bootstrap step to drop; a str: a reason it needs the network; False: other.
    `cmd`: one pipeline's text (``shellread.Unit.text``); `words`: its one command's words."""
    c = _strip_redirects(cmd)
    if not c:
        return False
    m = re.fullmatch(r"(sudo\s+)?apt(-get)?\s+(-\S+\s+)*install\s+(.*)", c)
    if m:
        pkgs = [p for p in m.group(4).split() if not p.startswith("-")]
        extra = [p for p in pkgs if p not in _APT_BOOTSTRAP]
        return True if not extra else f"installs {' '.join(extra)} with apt"
    if any(step.fullmatch(c) for step in _BOOTSTRAP_STEPS):
        return True
    if words is None:
        try:
            words = shlex.split(c)
        except ValueError:
            return False
    reqs = _install_reqs(words)
    if reqs is not None:
        for req in reqs:
            why = _available(req, notes, provided)
            if why:
                return why
        return True
    return False


_UVX_OPTIONS = r"(?:(?:-p|--python|-w|--with|--from)\s+\S+\s+|--\S+\s+)*"  # uvx's options before `pytest`
_PYTEST_CALL = re.compile(
    r"(?P<pre>^|[;&|(]\s*|\b(?:if|then|else|do|!|time|exec)\s+)"
    r"(?P<call>uv\s+run\s+(?:--\S+\s+)*(?:python3?\s+-m\s+)?pytest"
    r"|uvx\s+" + _UVX_OPTIONS + r"pytest"
    r"|(?:\S*/)?python3?\s+-m\s+pytest"
    r"|(?:\S*/)?py\.?test)(?=\s|$|;)"
)
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_PYTHON_CALL = re.compile(r"(?P<pre>^|[;&|(]\s*|\b(?:if|then|else|do|!|exec)\s+)(?P<call>uv\s+run\s+python3?)(?=\s)")


_UVX_PYTEST = re.compile(r"uvx\s+(" + _UVX_OPTIONS + r")pytest")


def _uvx_with(line: str) -> list[str]:
    """The packages a ``uvx … pytest`` call of `line` runs pytest with (``-w``/``--with``, comma lists
    too), beside pytest itself: the tests import them (TB2's ``-w numpy==2.3.1``)."""
    found: list[str] = []
    for call in _UVX_PYTEST.finditer(line):
        for value in re.findall(r"(?:-w|--with)\s+(\S+)", call.group(1)):
            found += [r for r in (p.strip("'\"") for p in value.split(",")) if r and r not in found]
    return found


def _drop_plugin_flags(line: str, notes: list[str]) -> str:
    for plugin, flags in _DROPPED_PLUGINS.items():
        for flag in flags:
            pat = re.compile(rf"\s{re.escape(flag)}(=\S+|\s+(?!-)\S+)?")
            if pat.search(line):
                line = pat.sub("", line)
                notes.append(f"dropped {flag} ({plugin}'s report is not used for the verdict)")
    return line


def _fetch_line(top: list[Unit], stripped: str, indent: str, notes: list[str],
                fetch: dict[str, list[str]]) -> str | None:
    """With the network: a line whose commands install packages agentrig's verifier Python lacks
    (``pip3 install x 2>/dev/null || pip install x`` alike) becomes those packages on PYTHONPATH,
    from a directory the verifier fetches them into once (``fetch``: directory → requirements;
    ``test_packages``); None when the line does more than that, or installs a requirements file
    or an editable project (left to the script as written)."""
    reqs: list[str] = []
    for unit in top:
        words = unit.commands[0] if len(unit.commands) == 1 else []
        found = _install_reqs(words)
        if found is None and words and words[0] in _HARMLESS:
            continue
        if not found or any(r.startswith("<") for r in found):
            return None
        reqs += [r for r in found if r not in reqs]
    missing = [r for r in reqs if _req_name(r) not in _PYTEST_FAMILY and _req_name(r) not in _DROPPED_PLUGINS
               and _available(r, []) is not None]
    if not missing:
        return None
    target = packages_dir(missing)
    fetch[target] = missing
    notes.append(f"{' '.join(missing)} fetched for the tests from the package index (once, into {target})")
    return f"{indent}export PYTHONPATH={shlex.quote(target)}${{PYTHONPATH:+:$PYTHONPATH}}  # agentrig: {stripped[:120]}"


def packages_dir(reqs: list[str]) -> str:
    """Where the verifier keeps the packages `reqs` fetched for the tests (by their hash and this
    interpreter's version): $AGENTRIG_TEST_PACKAGES_DIR or the user cache's agentrig/test-packages."""
    import hashlib
    import os
    import sys

    root = os.environ.get("AGENTRIG_TEST_PACKAGES_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "agentrig", "test-packages")
    key = hashlib.sha256(json_dumps([sys.version_info[:2], sorted(reqs)]).encode()).hexdigest()[:16]
    return os.path.join(os.path.realpath(root), key)


def json_dumps(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True)


# `uv add`/`uv sync` in a directory holding a packaged project (a pyproject.toml with a [build-system])
# install that project into uv's environment: its packages import from anywhere, as from site-packages
_PROJECT_SYNC = re.compile(r"uv\s+(add|sync)(\s|$)")
_PROJECT_PATH = ("if [ -f pyproject.toml ] && grep -qs '^\\[build-system\\]' pyproject.toml; then "
                 "export PYTHONPATH=\"$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}\"; fi")


def rewrite_script(text: str, pytest_cmd: str, pytest_m_cmd: str, python: str, fetch: bool = False,
                   packaged_project: bool = False) -> ScriptRewrite:
    """Rewrite one test script for the offline verifier (see the module docstring).

    `pytest_cmd` replaces ``pytest``/``uv run pytest``/``uvx … pytest`` (no current directory on
    the import path, like the ``pytest`` command); `pytest_m_cmd` replaces ``python -m pytest``
    (which puts it there); `python` replaces ``uv run python``. `fetch` (the sandbox has the
    network): the tool chain is still agentrig's, but an install of packages agentrig lacks
    has them fetched once into a directory put on PYTHONPATH (``_fetch_line``) and other network steps (``apt-get install`` of a test tool,
    ``curl`` of data) stay as written and run — instead of the whole script running as written,
    whose tool-chain download (uv from astral.sh) may be out of reach. `packaged_project` (the
    task's files hold a pyproject.toml with a [build-system]): a ``uv add``/``uv sync`` also makes
    the project in the directory it runs from importable (``$PWD/src`` and ``$PWD`` on
    PYTHONPATH, when that directory still holds it), as uv installs it into its environment."""
    py = shlex.quote(python)

    in_venv = False

    def _pytest(m: re.Match) -> str:
        nonlocal in_venv
        call = m.group("call")
        in_venv = in_venv or call.startswith(("uv ", "uvx"))
        as_module = re.match(r"(?:\S*/)?python3?\s+-m\s+pytest$", call) or re.search(r"python3?\s+-m\s+pytest$", call)
        return f"{m.group('pre')}{pytest_m_cmd if as_module else pytest_cmd}"
    out: list[str] = []
    notes: list[str] = []
    needs: str | None = None
    changed = False
    heredoc: str | None = None
    bootstrap: list[str] = []
    provided: list[str] = []
    fetches: dict[str, list[str]] = {}
    # with the network, an `apt-get install` of a test tool runs as written: keep the `apt-get update` it needs
    apt_runs = fetch and any(str(_is_bootstrap(u.text, [], None, u.commands[0])).endswith("with apt")
                             for ln in _logical_lines(text) for u in units(ln) if len(u.commands) == 1)
    for line in _logical_lines(text):
        stripped = line.strip()
        if heredoc is not None:  # a here-document's body is data, not commands
            out.append(line)
            if stripped == heredoc:
                heredoc = None
            continue
        doc = _HEREDOC.search(stripped)
        if doc and not stripped.startswith("#"):
            heredoc = doc.group(1)
        if not stripped or stripped.startswith("#"):
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        top = [u for u in units(stripped) if not u.nested]
        read = []  # (unit, True: bootstrap / str: an install that needs the network / False, its notes, provided)
        for u in top:
            u_notes: list[str] = []
            u_provided: list[str] = []
            boot = _is_bootstrap(u.text, u_notes, u_provided, u.commands[0] if len(u.commands) == 1 else None)
            if boot is True and apt_runs and re.search(r"\bapt(-get)?\b.*\bupdate\b", u.text):
                boot = False  # stays: the apt-get install after it needs the package lists
            read.append((u, boot, u_notes, u_provided))
        boots = [r for r in read if r[1] is True]
        rest = [r for r in read if r[1] is not True and not (r[1] is False and r[0].commands[0][:1]
                                                              and r[0].commands[0][0] in _HARMLESS)]
        for _, _, u_notes, u_provided in boots:
            notes.extend(u_notes)
            provided.extend(u_provided)
        if boots and not rest:  # the whole line is tool-chain bootstrap (`pip3 install pytest || pip install pytest`)
            bootstrap.append(stripped)
            out.append(f"{indent}: # agentrig offline verifier: {stripped}")
            if packaged_project and any(_PROJECT_SYNC.match(u.text) for u, *_ in boots):
                out.append(f"{indent}{_PROJECT_PATH}  # agentrig: uv installs the packaged project here")
                notes.append(f"the packaged project of the directory `{stripped[:60]}` runs from is importable, "
                             "as uv installs it")
            changed = True
            continue
        installs = [(u, boot) for u, boot, *_ in read if isinstance(boot, str)]
        if installs and fetch:
            fetched = _fetch_line(top, stripped, indent, notes, fetches)
            if fetched is not None:
                out.append(fetched)
                changed = True
                continue
        for u, why in installs:
            if fetch and "its requirements are fetched" not in why:  # a requirements file / editable project: as written
                notes.append(f"runs as written, with the network: {stripped[:160]}")
            elif u.tolerated and not fetch:
                notes.append(f"may fail without the network, which the script tolerates: {stripped[:160]}")
            else:
                found = fetch_of(u.commands[0])
                source = f", from {found.where()}" if found and found.registry and found.registry != PYPI else ""
                needs = needs or f"{why}{source}: {stripped[:160]}"
        kept = stripped
        for u, *_ in sorted(boots, key=lambda r: -r[0].start):  # beside other commands: only it becomes `:`
            bootstrap.append(u.text)
            kept = f"{kept[:u.start]}:{kept[u.end:]}"
            changed = True
        trailing = line[len(line.rstrip()):]
        line = indent + kept + trailing
        extra = [r for r in _uvx_with(line) if _available(r, notes, provided) is not None]
        if extra and fetch:  # `uvx -w torch==2.7.0 pytest`: the packages beside pytest, fetched once
            target = packages_dir(extra)
            fetches[target] = extra
            notes.append(f"{' '.join(extra)} (uvx --with) fetched for the tests from the package index (once, into {target})")
            out.append(f"{indent}export PYTHONPATH={shlex.quote(target)}${{PYTHONPATH:+:$PYTHONPATH}}  # agentrig: uvx --with")
        elif extra:
            needs = needs or (f"installs {extra[0]!r} (uvx --with), which agentrig's verifier Python does not provide: "
                              f"{stripped[:160]}")
        new = _PYTEST_CALL.sub(_pytest, line)
        if _PYTHON_CALL.search(new):
            in_venv = True
            new = _PYTHON_CALL.sub(lambda m: f"{m.group('pre')}{py} -s", new)
        if new != line:
            new = _drop_plugin_flags(new, notes)
            changed = True
        if not installs:
            needs = _network_use(new.strip(), stripped, fetch, notes) if needs is None else needs
        out.append(new)
    return ScriptRewrite(text="\n".join(out) + "\n", changed=changed, needs_network=needs, bootstrap=bootstrap,
                         notes=notes, provided=provided, fetch=fetches, in_venv=in_venv)


def _network_use(line: str, original: str, online: bool, notes: list[str]) -> str | None:
    """Why `line` (after the rewrite) needs the network the sandbox lacks, else None: a command that
    fetches (``fetches.fetch_of``) and whose failure the script does not tolerate. With the
    network (`online`) it runs as written — through the host's settings for the registries.
    A fetch of only what is missing (``npx``, ``cargo test``) never decides: the trial plays."""
    noted = False
    for unit in units(line):
        for words in unit.commands:
            found = fetch_of(words)
            if found is None or found.maybe:
                continue
            if not online and not unit.tolerated:
                reach = ", which a sandbox with the network reaches here" if found.registry else ""
                return f"needs the network: {found.what} fetches from {found.where()}{reach}: {original[:160]}"
            if not noted:
                notes.append(f"runs as written, with the network, fetching from {found.where()}: {original[:160]}" if online else
                             f"{found.what} may fail without the network, which the script tolerates: {original[:160]}")
                noted = True
    return None


def is_shell_script(path: Path) -> bool:
    if path.suffix == ".sh":
        return True
    try:
        head = path.read_bytes()[:64]
    except OSError:
        return False
    return head.startswith(b"#!") and b"sh" in head.split(b"\n", 1)[0]
