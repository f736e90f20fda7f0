"""The HTML report: ``write_report(run_dirs, out_path)`` (``agentrig report`` is commands/report.py).

``collect`` reads the runs' light rows (the outcome grid), ``figures`` lays out the core figures
(summary, pass^k, consistency gap), ``drawers`` draws every registered figure of the figure
protocol (``analysis/figure.py``) at the page slot it names — by a drawer registered under its id,
or from its view —, ``findings`` the A/B comparisons, ``embed`` the trajectories, ``render`` the
page (``templates/``: the page and one template per drawn figure or usage part)."""

from .write import REPORT_FILE, build_context, write_report

__all__ = ["REPORT_FILE", "build_context", "write_report"]
