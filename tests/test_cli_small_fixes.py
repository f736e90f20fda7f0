"""The command line's small promises (issue 31, item 9), through the real console script:
``--version``; a user error under ``--json`` is one JSON object on stdout and exit 1, for every
command that has ``--json``; ``tasks list --help`` / ``audit --help`` show each option once and
one description; ``tasks list --split all``; ``--dump-dir DIR``; a data error's fix names only what
works; the domains a data root offers include the built-in ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig import __version__
from agentrig.bench.tau.data import builtin_domain_dir
from agentrig.bench.tau.domains import available_domains
from agentrig.benchmark import playable_kinds

AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def agentrig(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("AGENTRIG_TAU2_DATA", "APPWORLD_ROOT", "COLUMNS")}
    return subprocess.run([AGENTRIG, *args], capture_output=True, text=True, env={**base, **(env or {})},
                          timeout=120, cwd=cwd)


def test_version_option():
    p = agentrig("--version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == __version__
    assert agentrig("version").stdout.strip() == __version__  # the command stays


# ------------------------------------------------------------------------------ --json errors


def _json_error(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    doc = json.loads(p.stdout)  # the whole of stdout: one JSON object
    assert isinstance(doc, dict) and isinstance(doc["error"], str) and doc["error"], doc
    assert "fix" in doc
    return doc


def test_json_user_errors_are_json(tmp_path):
    nothing = str(tmp_path / "no-such-run")
    missing_toml = str(tmp_path / "missing.toml")
    cases = [
        ("run", missing_toml, "--json"),
        ("analyze", nothing, "--json"),
        ("usage", nothing, "--json"),
        ("compare", nothing, nothing, "--json"),
        ("instability", nothing, "--json"),
        ("doctor", "--config", missing_toml, "--json"),
        ("tasks", "list", "--domain", "no_such_domain", "--json"),
        ("tasks", "show", "x", "--domain", "bikeshop", "--json"),
        ("tasks", "replay-gold", "--domain", "bikeshop", "--split", "nope", "--json"),
        ("audit", "--domain", "bikeshop", "--split", "nope", "--json"),
        ("tasks", "list", "--bench", "terminal", "--tasks", nothing, "--json"),
        ("tasks", "list", "--bench", "no-such-bench", "--json"),
        ("audit", "--bench", "appworld", "--data", nothing, "--json"),
    ]
    for args in cases:
        doc = _json_error(agentrig(*args))
        assert "\n  fix:" not in doc["error"], (args, doc)  # the fix is its own field
    # the fix, when the message has one, is split out
    doc = _json_error(agentrig("tasks", "list", "--domain", "bikeshop", "--split", "nope", "--json"))
    assert "unknown split 'nope'" in doc["error"] and "--split" in (doc["fix"] or "")
    # without --json: the same error in words on stderr, nothing on stdout
    p = agentrig("tasks", "list", "--domain", "bikeshop", "--split", "nope")
    assert p.returncode == 1 and p.stdout == "" and "error: unknown split 'nope'" in p.stderr


# -------------------------------------------------------------------------- help of --bench


@pytest.mark.parametrize("path", [("tasks", "list"), ("tasks", "show"), ("tasks", "replay-gold"), ("audit",)])
def test_bench_dispatcher_help_shows_each_thing_once(path):
    generic = agentrig(*path, "--help", env={"COLUMNS": "100"})
    assert generic.returncode == 0, generic.stderr
    out = generic.stdout
    assert out.count("Usage:") == 1 and out.count("  --bench KIND  ") == 1
    assert "[required]" not in out and "-d, --domain" not in out  # no benchmark's own options here
    kinds = ["tau2"] if path[-1] == "replay-gold" else playable_kinds()  # the benchmarks that have it
    for kind in playable_kinds():  # where each benchmark's own options are shown
        assert (f"agentrig {' '.join(path)} --bench {kind} --help" in out) == (kind in kinds), (kind, out)
    own = agentrig(*path, "--bench", "tau2", "--help", env={"COLUMNS": "100"})
    assert own.returncode == 0, own.stderr
    text = own.stdout
    assert text.count("Usage:") == 1 and text.count("--bench KIND") == 1 and text.count("--help") == 1
    options = text.split("\nOptions:\n", 1)[1]  # --bench among the command's own options, not in a block of its own
    assert "--bench KIND" in options and "--domain" in options
    # one description: the benchmark's own (the dispatcher's is not appended below the options)
    assert text.rstrip().splitlines()[-1].lstrip().startswith("--help")


def test_dump_dir_metavar():
    text = agentrig("tasks", "replay-gold", "--bench", "tau2", "--help", env={"COLUMNS": "100"}).stdout
    assert "--dump-dir DIR" in text and "--dump-dir PATH" not in text


# ------------------------------------------------------------------------------- tau2 data


def test_split_all_lists_every_task():
    every = json.loads(agentrig("tasks", "list", "--domain", "bikeshop", "--json").stdout)
    p = agentrig("tasks", "list", "--domain", "bikeshop", "--split", "all", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["count"] == every["count"] == 16 and [t["id"] for t in doc["tasks"]] == [t["id"] for t in every["tasks"]]
    audit = agentrig("audit", "--domain", "bikeshop", "--split", "all", "--json")
    assert audit.returncode == 0, audit.stderr
    # an unknown split names "all" among the choices
    bad = agentrig("tasks", "list", "--domain", "bikeshop", "--split", "nope")
    assert "all (16)" in bad.stderr


def _fix_of(stderr: str) -> str:
    assert "fix:" in stderr, stderr
    return stderr.split("fix:", 1)[1]


def test_data_error_fix_names_what_works(tmp_path):
    """`run` has no --data option: the fix tells it the experiment's [benchmark] data or the
    variable; the commands that have --data may be told --data."""
    exp = tmp_path / "e.toml"
    exp.write_text('[benchmark]\ndomains = ["airline"]\n[[arms]]\nname = "g"\nagent = { kind = "gold" }\n')
    run_help = agentrig("run", "--help").stdout
    assert "--data" not in run_help
    for args in (("run", str(exp)), ("run", str(exp), "--smoke"), ("run", str(exp), "--estimate")):
        p = agentrig(*args, cwd=tmp_path)
        text = p.stdout + p.stderr
        assert p.returncode == 1 and "tau2-bench data root" in text, (args, text)
        assert "pass --data" not in text and "run`" in text, (args, text)
        assert "AGENTRIG_TAU2_DATA" in text and "[benchmark]" in text, (args, text)
    for args in (("tasks", "list", "--domain", "airline"), ("audit", "--domain", "airline"),
                 ("tasks", "replay-gold", "--domain", "airline"), ("tasks", "show", "0", "--domain", "airline")):
        p = agentrig(*args)
        assert p.returncode == 1
        fix = _fix_of(p.stderr)
        assert "AGENTRIG_TAU2_DATA" in fix and "--data DIR" in fix, (args, fix)
        assert "--data" in agentrig(*args[:-2], "--bench", "tau2", "--help").stdout  # the option it names exists


def test_domains_here_include_the_builtin_ones(tmp_path):
    root = tmp_path / "data"
    (root / "domains" / "airline").mkdir(parents=True)
    p = agentrig("tasks", "list", "--domain", "bikeshopp", "--data", str(root))
    assert p.returncode == 1
    here = next(line for line in p.stderr.splitlines() if "domains here:" in line)
    for name in ("airline", "bikeshop"):
        assert name in here, here
    builtin = [d for d in available_domains() if builtin_domain_dir(d) is not None]
    assert builtin and all(d in here for d in builtin), (builtin, here)
    assert "'bikeshop'" in p.stderr.split("domains here")[0]  # did you mean 'bikeshop'?
