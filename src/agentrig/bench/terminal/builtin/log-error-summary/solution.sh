#!/bin/bash
ls -la /app/logs
python3 - <<'PY'
import gzip, json
from collections import Counter
from pathlib import Path

lines = []
for path in sorted(Path("/app/logs").iterdir()):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        lines += [l.split(maxsplit=3) for l in fh if l.strip()]
errors = [l for l in lines if l[1] == "ERROR"]
summary = {
    "errors_by_service": dict(Counter(l[2] for l in errors)),
    "first_error": min(l[0] for l in errors),
    "busiest_service": Counter(l[2] for l in lines).most_common(1)[0][0],
}
Path("/app/error_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(summary))
PY
