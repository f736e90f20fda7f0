"""A run directory on disk: its file names, and opening one that `agentrig run` wrote.

A low-level service next to the store: ``analysis`` (analyze, compare) and ``report`` read run
directories through ``open_run_dir``; the run's driver (``runner``) creates them. This module
imports nothing from the driver, the analysis or the report, so that imports flow one way
(``tests/test_import_layers.py`` checks it).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentrig.errors import DataError

from agentrig.store.store import Store

STORE_FILE = "trials.sqlite"
CONFIG_FILE = "config.json"


def open_run_dir(run_dir: Path) -> tuple[Store, dict]:
    """A run directory's store (read-only use) and its configuration snapshot."""
    run_dir = Path(run_dir).expanduser()
    path = run_dir / STORE_FILE
    if not path.is_file():
        if (run_dir / "smoke" / STORE_FILE).is_file():
            raise DataError(f"{run_dir}: no trials played yet, only a smoke check (`agentrig run --smoke`); "
                            f"its trials are a run directory of their own: {run_dir / 'smoke'}")
        raise DataError(f"{run_dir}: not a run directory (no {STORE_FILE}); give the directory "
                        "`agentrig run` printed")
    store = Store.open(path, create=False)
    config = store.get_meta("config")
    if config is None:
        cfg_file = run_dir / CONFIG_FILE
        if not cfg_file.is_file():
            smoke = (store.get_meta("run") or {}).get("smoke")
            store.close()
            if smoke:
                raise DataError(f"{run_dir}: a smoke check's store written by an older agentrig, without the "
                                "configuration snapshot a reader needs; run `agentrig run EXPERIMENT --smoke` again")
            raise DataError(f"{run_dir}: the run's configuration snapshot is missing ({CONFIG_FILE})")
        config = json.loads(cfg_file.read_text(encoding="utf-8"))
    return store, config
