"""The HTML report: ``write_report(run_dirs, out_path)`` (``agentrig report`` is commands/report.py)."""

from .write import REPORT_FILE, build_context, write_report

__all__ = ["REPORT_FILE", "build_context", "write_report"]
