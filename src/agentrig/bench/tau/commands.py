"""``agentrig tasks ...`` and ``agentrig data ...``: typer sub-apps mounted by ``cli.py``.

    app.add_typer(tasks_app, name="tasks")
    app.add_typer(data_app, name="data")

Thin: parse, call ``data`` / ``pull``, print (rich for people, ``--json`` for programs). A user
error (any AgentrigError) is one message on stderr and exit code 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from ...cli_errors import user_errors
from ...errors import AgentrigError
from ...tables import FitTable, output_console
from . import data as tau_data
from .taskmodel import Task

if TYPE_CHECKING:
    from .pull import FileOutcome

tasks_app = typer.Typer(help="Browse the tasks of a τ²-bench domain.", no_args_is_help=True,
                        pretty_exceptions_enable=False, add_completion=False)
data_app = typer.Typer(help="Fetch benchmark data.", no_args_is_help=True,
                       pretty_exceptions_enable=False, add_completion=False)
pull_app = typer.Typer(help="Fetch upstream benchmark data files.", no_args_is_help=True,
                       pretty_exceptions_enable=False, add_completion=False)
data_app.add_typer(pull_app, name="pull")


def _out() -> Console:
    return output_console()


def _err() -> Console:
    return Console(stderr=True, highlight=False)


_user_errors = user_errors


DataOpt = typer.Option(None, "--data", help=f"tau2-bench data root (default: ${tau_data.ENV_VAR})")
DomainOpt = typer.Option(..., "--domain", "-d", help="airline, retail, telecom, mock, …")
JsonOpt = typer.Option(False, "--json", help="print JSON instead of a table")


def _root(data: Optional[Path], domain: str) -> Path | None:
    """The data root; None when there is none but the domain ships inside the package."""
    try:
        return tau_data.resolve_data_root(data)
    except AgentrigError:
        if data is None and tau_data.builtin_domain_dir(domain) is not None:
            return None
        raise


# ------------------------------------------------------------------------------------- tasks list


@tasks_app.command("list")
@_user_errors
def tasks_list(
    domain: str = DomainOpt,
    data: Optional[Path] = DataOpt,
    split: Optional[str] = typer.Option(None, "--split", "-s", help="only the tasks of this split (all: every task)"),
    json_out: bool = JsonOpt,
) -> None:
    """List a domain's tasks: id, what it tests, number of gold actions, reward basis."""
    root = _root(data, domain)
    tasks = tau_data.select_tasks(root, domain, split=split)
    rows = [
        {"id": t.id, "summary": t.summary(), "gold_actions": len(t.gold_actions),
         "reward_basis": [str(r) for r in t.reward_basis]}
        for t in tasks
    ]
    if json_out:
        print(json.dumps({"domain": domain, "split": split, "count": len(rows), "tasks": rows}, ensure_ascii=False))
        return
    title = f"{domain}" + (f" · split {split}" if split else "") + f" · {len(rows)} task(s)"
    table = FitTable(Text(title), boxed=True)
    table.add_column("id")  # never wrapped: too long an id (telecom) turns the table into records
    table.add_column("summary", wrap=True)
    table.add_column("gold", "right")
    table.add_column("reward basis", wrap=True)
    for r in rows:
        table.add_row(Text(r["id"]), Text(r["summary"]), str(r["gold_actions"]), Text(", ".join(r["reward_basis"])))
    table.print(_out())


# ------------------------------------------------------------------------------------- tasks show


@tasks_app.command("show")
@_user_errors
def tasks_show(
    task_id: str = typer.Argument(..., help="the task id (`agentrig tasks list` shows them)"),
    domain: str = DomainOpt,
    data: Optional[Path] = DataOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Show one task: scenario, initial state, gold actions, assertions, what must be said."""
    root = _root(data, domain)
    (task,) = tau_data.select_tasks(root, domain, task_ids=[task_id])
    if json_out:
        print(json.dumps(task.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    out = _out()
    for part in render_task(task, domain):
        if isinstance(part, FitTable):
            part.print(out)
        else:  # a line of text is never wrapped inside the task id
            out.print(part, soft_wrap=isinstance(part, Text))


def render_task(task: Task, domain: str) -> list[Text | Panel | FitTable]:
    parts: list[Text | Panel | FitTable] = [Text(f"{domain} · task {task.id}", style="bold")]
    d = task.description
    if d is not None and (d.purpose or d.relevant_policies or d.notes):
        parts.append(_section("Description", [("purpose", d.purpose), ("relevant policies", d.relevant_policies),
                                              ("notes", d.notes)]))
    us = task.user_scenario
    ins = us.instructions
    fields = [("persona", us.persona)]
    if isinstance(ins, str):
        fields.append(("instructions", ins))
    else:
        fields += [("domain", ins.domain), ("reason for call", ins.reason_for_call), ("known info", ins.known_info),
                   ("unknown info", ins.unknown_info), ("task instructions", ins.task_instructions)]
    if task.user_tools is not None:
        fields.append(("user tools", ", ".join(task.user_tools) or "(none)"))
    parts.append(_section("User scenario", fields))
    if task.ticket:
        parts.append(_section("Ticket", [("", task.ticket)]))
    st = task.initial_state
    if st is not None:
        lines = []
        if st.initialization_data is not None:
            for side, val in (("agent data", st.initialization_data.agent_data),
                              ("user data", st.initialization_data.user_data)):
                if val is not None:
                    lines.append((side, json.dumps(val, ensure_ascii=False)))
        for i, call in enumerate(st.initialization_actions or [], 1):
            lines.append((f"action {i}", call.call_text()))
        if st.message_history:
            lines.append(("message history", f"{len(st.message_history)} message(s)"))
            for m in st.message_history:
                lines.append((f"  {m.get('role', '?')}", _message_text(m)))
        if lines:
            parts.append(_section("Initial state", lines))
    ec = task.evaluation_criteria
    parts.append(Text("reward basis: " + ", ".join(str(r) for r in task.reward_basis), style="bold"))
    if ec is not None:
        if ec.actions:
            table = FitTable(Text(f"Gold actions ({len(ec.actions)})"), boxed=True)
            for col in ("#", "by", "call", "compare"):
                table.add_column(col, wrap=col in ("call", "compare"))
            for i, a in enumerate(ec.actions, 1):
                cmp = "all" if a.compare_args is None else (", ".join(a.compare_args) or "(name only)")
                table.add_row(str(i), a.requestor, Text(a.call_text()), Text(cmp))
            parts.append(table)
        if ec.env_assertions:
            parts.append(_section(f"Env assertions ({len(ec.env_assertions)})", [
                ("", a.call_text() + ("" if a.assert_value else "  is False") + (f"  — {a.message}" if a.message else ""))
                for a in ec.env_assertions]))
        if ec.communicate_info:
            parts.append(_section("Must communicate", [("", c) for c in ec.communicate_info]))
        if ec.nl_assertions:
            parts.append(_section("NL assertions", [("", c) for c in ec.nl_assertions]))
    if task.issues:
        parts.append(_section("Issues", [(i.status, f"[{i.id}] {i.title}") for i in task.issues]))
    return parts


def _section(title: str, fields: list[tuple[str, str | None]]) -> Panel:
    body = Text()
    for label, value in fields:
        if value is None:
            continue
        if body:
            body.append("\n")
        if label:
            body.append(f"{label}: ", style="bold cyan")
        body.append(str(value).strip())
    return Panel(body, title=escape(title), title_align="left")


def _message_text(m: dict) -> str:
    if m.get("tool_calls"):
        calls = [f"{c.get('name')}({json.dumps(c.get('arguments', {}), ensure_ascii=False)})" for c in m["tool_calls"]]
        return "calls " + "; ".join(calls)
    text = " ".join(str(m.get("content") or "").split())
    return text if len(text) <= 160 else text[:159] + "…"


# ------------------------------------------------------------------------------ tasks replay-gold


@tasks_app.command("replay-gold")
@_user_errors
def tasks_replay_gold(
    domain: str = DomainOpt,
    data: Optional[Path] = DataOpt,
    split: Optional[str] = typer.Option(None, "--split", "-s", help="only the tasks of this split (all: every task)"),
    task_ids: Optional[list[str]] = typer.Option(None, "--task-id", help="only these tasks (repeatable)"),
    dump_dir: Optional[Path] = typer.Option(None, "--dump-dir", metavar="DIR",
                                                   help="write DIR/<domain>/<task>.agent.json (and .user.json)"),
    json_out: bool = JsonOpt,
) -> None:
    """Play each task's gold actions on a fresh environment: which actions error, which env
    assertions hold, and (with --dump-dir) the final state."""
    from .domains import get_domain
    from .replay import replay_gold

    root = _root(data, domain)
    spec = get_domain(domain)
    ddir = tau_data.domain_dir(root, domain)
    tasks = tau_data.select_tasks(root, domain, split=split, task_ids=task_ids or None)
    rows = []
    for task in tasks:
        r = replay_gold(spec, ddir, task)
        rows.append({"domain": domain, "task_id": task.id,
                     "actions": [{"name": a.name, "requestor": a.requestor, "error": a.error} for a in r.actions],
                     "env_assertions": list(r.env_assertions), "ok": r.ok})
        if dump_dir is not None:
            out_dir = dump_dir / domain
            out_dir.mkdir(parents=True, exist_ok=True)
            safe = "".join(c if c.isalnum() or c in "-_.[]" else "_" for c in task.id)
            (out_dir / f"{safe}.agent.json").write_text(json.dumps(r.agent_state, indent=2, ensure_ascii=False))
            if r.user_state is not None:
                (out_dir / f"{safe}.user.json").write_text(json.dumps(r.user_state, indent=2, ensure_ascii=False))
    if json_out:
        print(json.dumps({"tasks": rows}, ensure_ascii=False))
        return
    table = FitTable(Text(f"{domain} · gold replay of {len(rows)} task(s)"), boxed=True)
    table.add_column("task")
    table.add_column("gold actions", "right")
    table.add_column("errored", wrap=True)
    table.add_column("env assertions", "right")
    table.add_column("ok")
    for r in rows:
        errs = [a["name"] for a in r["actions"] if a["error"]]
        held = sum(r["env_assertions"])
        table.add_row(Text(r["task_id"]), str(len(r["actions"])), Text(", ".join(errs)),
                      f"{held}/{len(r['env_assertions'])}", "[green]yes[/]" if r["ok"] else "[red]no[/]")
    out = _out()
    table.print(out)
    bad = sum(not r["ok"] for r in rows)
    out.print(f"{len(rows) - bad} of {len(rows)} task(s) replay with no error and every env assertion holding")


# ------------------------------------------------------------------------------------------ audit


def audit_command(
    domain: str = DomainOpt,
    data: Optional[Path] = DataOpt,
    split: Optional[str] = typer.Option(None, "--split", "-s", help="only the tasks of this split (all: every task)"),
    json_out: bool = JsonOpt,
) -> None:
    """Leniency audit: the reward of the gold agent and of a do-nothing agent per task; tasks a
    do-nothing agent passes are flagged lenient."""
    from .audit import audit_task
    from .domains import get_domain

    root = _root(data, domain)
    spec = get_domain(domain)
    ddir = tau_data.domain_dir(root, domain)
    rows = [audit_task(spec, ddir, t) for t in tau_data.select_tasks(root, domain, split=split)]
    lenient = [r for r in rows if r.lenient]
    summary = {"domain": domain, "tasks": len(rows), "lenient": len(lenient),
               "lenient_unless_judge": sum(r.undecided for r in rows)}
    if json_out:
        print(json.dumps({"summary": summary, "tasks": [r.model_dump() for r in rows]}, ensure_ascii=False))
        return
    table = FitTable(Text(f"{domain} · leniency audit of {len(rows)} task(s)"), boxed=True)
    for col in ("task", "basis", "gold", "do-nothing", "lenient", "why"):
        table.add_column(col, wrap=col in ("basis", "gold", "do-nothing", "why"))

    def fmt(d: dict, basis: list[str]) -> str:
        return " ".join(f"{c[:3]}={'?' if d[c] is None else f'{d[c]:g}'}" for c in basis if c in d)

    for r in rows:
        flag = ("[yellow]judge decides[/]" if r.undecided else "[red]LENIENT[/]") if r.lenient else ""
        table.add_row(Text(r.task_id), Text(", ".join(r.reward_basis)), fmt(r.gold, r.reward_basis),
                      fmt(r.noop, r.reward_basis), flag, Text(r.reason))
    out = _out()
    table.print(out)
    out.print(f"{domain}: {summary['lenient']} of {summary['tasks']} task(s) lenient to a do-nothing agent "
                 f"({summary['lenient_unless_judge']} of them only the judge can fail)")


# ------------------------------------------------------------------------------------- data pull


@pull_app.command("tau2")
@_user_errors
def pull_tau2_cmd(
    dest: Path = typer.Option(..., "--dest", help="directory to fill (becomes a data root for --data)"),
    ref: Optional[str] = typer.Option(None, "--ref", help="tau2-bench commit (default: the pinned one)"),
    base_url: Optional[str] = typer.Option(None, "--base-url",
                                           help="raw-file base URL ({base}/{ref}/data/tau2/...), or a template "
                                                "with {ref} and {path}"),
    no_verify: bool = typer.Option(False, "--no-verify", help="do not check known sha256 hashes"),
    attempts: int = typer.Option(3, "--attempts", min=1, help="tries per file (each resumes the last)"),
    json_out: bool = JsonOpt,
) -> None:
    """Fetch tau2-bench's data files (airline, retail, telecom, mock, user simulator) into DEST."""
    from .pull import pull_tau2  # httpx: loaded by this command only

    err = _err()

    def report(o: FileOutcome) -> None:
        if json_out:
            return
        mark = {"present": "=", "downloaded": "+", "resumed": "»", "absent": "-"}[o.status]
        note = " (sha256 checked)" if o.checked else ""
        if o.status == "resumed":
            note += f" (resumed at byte {o.resumed_from})"
        if o.status == "absent":
            note = " (optional, not at this ref)"
        err.print(Text(f"{mark} {o.path}{note}"))

    result = pull_tau2(dest, ref=ref, base_url=base_url, verify=not no_verify, attempts=attempts, on_file=report)
    if json_out:
        print(result.model_dump_json(indent=2))
        return
    got = [f for f in result.files if f.status != "absent"]
    checked = sum(f.checked for f in got)
    out = output_console(soft_wrap=True)  # paths whole, never broken across lines
    out.print(Text(f"{len(got)} file(s) in {result.dest} at {result.ref[:12]}; {checked} checked against known sha256"))
    if not result.verified:
        why = "--no-verify" if result.pinned else "--ref is not the pinned commit"
        out.print(Text(f"note: hashes not checked ({why}); the hashes seen are in MANIFEST.sha256"))
    out.print(Text(f"use it with: --data {result.dest}   (or export {tau_data.ENV_VAR}={result.dest})"))
