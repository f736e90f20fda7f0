"""Printing reports for people in the terminal (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from agentrig.channel.doctor.diagnose import DoctorReport

_MARK = {"pass": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[red]✗[/]"}
NO_MODEL = "(none given)"


def _model(ep) -> str:
    return ep.model or NO_MODEL


def print_doctor(report: DoctorReport, console: Console) -> None:
    if len(report.endpoints) > 1 or any(ep.uses for ep in report.endpoints):
        console.print(f"[bold]{len(report.endpoints)} (endpoint, model, wire) to check:[/]", highlight=False)
        for ep in report.endpoints:
            used = f"  used by {', '.join(ep.uses)}" if ep.uses else f"  roles {', '.join(ep.roles)}"
            console.print(f"  {escape(ep.base_url)}  {escape(_model(ep))}  {ep.wire}{escape(used)}", highlight=False)
    for ep in report.endpoints:
        wire = f"  wire {ep.wire}" if ep.wire != "chat" else ""
        console.print(
            f"\n[bold]{escape(ep.base_url)}[/]  model [cyan]{escape(_model(ep))}[/]{wire}  roles {escape(', '.join(ep.roles))}",
            highlight=False,
        )
        for c in ep.checks:
            latency = f" [dim]({c.latency_ms:g} ms)[/]" if c.latency_ms is not None else ""
            code = f"[bold]{c.code}[/] " if c.code else ""
            console.print(f"  {_MARK[c.status]} {c.name:<9} {code}{escape(c.message)}{latency}", highlight=False)
            if c.fix:
                console.print(f"      [dim]fix:[/] {escape(c.fix)}", highlight=False)
        for s in ep.skipped:
            console.print(f"  [dim]· not run: {escape(s)}[/]", highlight=False)
    verdict = "[green]all endpoints ready[/]" if report.ok else "[red]some checks failed[/]"
    warns = sum(c.status == "warn" for ep in report.endpoints for c in ep.checks)
    console.print(f"\n{verdict}" + (f" ([yellow]{warns} warning(s)[/])" if warns else ""))


def print_from_doctor(report, console: Console) -> None:
    """``agentrig doctor --from``: the file's values, its own findings, then the usual checks."""
    f = report.file
    console.print(f"[bold]{escape(f.format)}[/] file {escape(f.path)}", highlight=False)
    console.print(f"  [dim]base URL rule:[/] {escape(f.base_url_rule)}", highlight=False)
    for v in f.values:
        console.print(f"  {escape(v.name)}: {escape(v.value)}", highlight=False)
    for n in f.notes:
        console.print(f"  [dim]note: {escape(n)}[/]", highlight=False)
    for c in report.checks:
        code = f"[bold]{c.code}[/] " if c.code else ""
        console.print(f"  {_MARK[c.status]} {c.name:<9} {code}{escape(c.message)}", highlight=False)
        if c.fix:
            console.print(f"      [dim]fix:[/] {escape(c.fix)}", highlight=False)
    if report.endpoint is not None:
        print_doctor(DoctorReport(ok=report.ok, endpoints=[report.endpoint]), console)
    else:
        console.print("\n[red]some checks failed[/]" if not report.ok else "\n[green]ready[/]")
