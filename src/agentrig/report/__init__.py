"""The HTML report: ``write_report(run_dirs, out_path)`` and the CLI's ``report_command``."""

from .command import REPORT_FILE, report_command, write_report

__all__ = ["REPORT_FILE", "report_command", "write_report"]
