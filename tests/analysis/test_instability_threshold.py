"""The instability threshold (issue 26): `--threshold` on the command, `[analysis]
instability_threshold` in the experiment file (kept in the run's config snapshot), default 0.1;
a bad value is one message naming the setting."""

from __future__ import annotations

import pytest

from agentrig.analysis.instability_report import DEFAULT_THRESHOLD, threshold_of
from agentrig.errors import AgentrigError
from agentrig.run.experiment import load_experiment

EXP = """
name = "t"
[benchmark]
domains = ["bikeshop"]
{analysis}
[[arms]]
name = "a"
"""


def test_the_experiment_file_sets_the_threshold_and_the_snapshot_carries_it(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text(EXP.format(analysis="[analysis]\ninstability_threshold = 0.25"), encoding="utf-8")
    exp, _ = load_experiment(path)
    assert exp.analysis.instability_threshold == 0.25
    assert threshold_of({"experiment": exp.model_dump(mode="json")}) == 0.25
    path.write_text(EXP.format(analysis=""), encoding="utf-8")
    exp, _ = load_experiment(path)
    assert exp.analysis.instability_threshold == DEFAULT_THRESHOLD == 0.1
    assert threshold_of({}) == threshold_of({"experiment": {}}) == DEFAULT_THRESHOLD  # runs stored before


def test_a_bad_threshold_names_the_setting(tmp_path):
    path = tmp_path / "e.toml"
    path.write_text(EXP.format(analysis="[analysis]\ninstability_threshold = 0"), encoding="utf-8")
    with pytest.raises(AgentrigError) as err:
        load_experiment(path)
    assert "instability_threshold" in str(err.value)


def test_the_command_refuses_a_threshold_out_of_range(tmp_path):
    from typer.testing import CliRunner

    from agentrig.cli import app

    result = CliRunner().invoke(app, ["instability", str(tmp_path), "--threshold", "1.5"])
    assert result.exit_code == 1 and "--threshold 1.5" in result.output and "Traceback" not in result.output
