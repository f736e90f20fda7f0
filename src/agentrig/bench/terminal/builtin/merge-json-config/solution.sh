#!/bin/bash
cat /app/config/defaults.json /app/config/production.json
python3 - <<'PY'
import json

def merge(base, over):
    out = dict(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out

with open("/app/config/defaults.json") as a, open("/app/config/production.json") as b:
    result = merge(json.load(a), json.load(b))
with open("/app/config/effective.json", "w") as fh:
    json.dump(result, fh, indent=2)
    fh.write("\n")
PY
cat /app/config/effective.json
