"""``agentrig doctor``: the endpoints of an experiment (or one endpoint) checked before a run; another
client's file (``--from``); the terminal sandboxes (``--sandbox [KIND]``); or a benchmark's own
environment (``--bench appworld``: its venv, its data, a world opened). Exit 0 when every check
that matters passed, 1 otherwise."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agentrig.errors import AgentrigError


def doctor_command(*, config: Path | None, base_url: str | None, model: str | None, api_key_env: str,
                   timeout_s: float | None, wire: str | None, as_json: bool, from_file: str | None,
                   sandbox: bool, kind: str | None, out: Console, bench: str | None = None) -> int:
    if sandbox and bench is None:
        bench = "terminal"  # `--sandbox [KIND]`: the terminal benchmark's own check, KIND a sandbox kind
    elif kind is not None and not sandbox and bench is None:
        raise AgentrigError(f"unexpected argument {kind!r}; to check a sandbox kind write `agentrig doctor --sandbox {kind}`")
    if bench is not None:
        from agentrig.benchmark import get_benchmark

        return get_benchmark(bench).doctor(kind, as_json, out)
    if from_file is not None:
        if config is not None or base_url:
            raise AgentrigError("give either --from or --config/--base-url, not both")
        from agentrig.channel.clients.doctor import doctor_from_command

        return doctor_from_command(from_file, model=model, timeout_s=timeout_s, as_json=as_json, console=out)
    from agentrig.channel.doctor.console import print_doctor
    from agentrig.channel.doctor.diagnose import run_doctor
    from agentrig.config import WIRES, ChannelConfig, ChannelSettings

    shapes = targets = None
    if config is not None:
        if base_url or model:
            raise AgentrigError("give either --config or --base-url/--model, not both")
        from agentrig.run.doctor_targets import doctor_targets
        from agentrig.run.request_shape import first_request_shapes

        cfg = None
        targets, why = doctor_targets(config, timeout_s=timeout_s)  # every (endpoint, model, wire) of every arm
        if why and not as_json:
            out.print(f"[dim]note: {escape(why)}[/]", highlight=False)

        shapes, note = first_request_shapes(config)  # the doctor sends what the experiment's agent sends
        if note and not as_json:
            out.print(f"[dim]note: {escape(note)}[/]", highlight=False)
    else:
        if wire is not None and wire not in WIRES:
            *most, last = WIRES
            raise AgentrigError(f"--wire {wire!r}: expected {', '.join(most)} or {last} (docs/channel.md, Wire formats)")
        cfg = ChannelConfig(channel=ChannelSettings(base_url=base_url, model=model, api_key_env=api_key_env,
                                                    timeout_s=timeout_s, wire=wire))
    report = asyncio.run(run_doctor(cfg, shapes=shapes, targets=targets))
    if as_json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    else:
        print_doctor(report, out)
    return 0 if report.ok else 1
