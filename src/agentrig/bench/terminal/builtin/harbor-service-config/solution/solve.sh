#!/bin/bash
set -e
cat /app/service/app.ini
python3 - <<'PY'
import configparser

path = "/app/service/app.ini"
cfg = configparser.ConfigParser()
cfg.read(path)
cfg["server"]["port"] = "9443"
cfg["server"]["debug"] = "false"
cfg["logging"] = {"level": "warning", "file": "/var/log/app.log"}
with open(path, "w") as fh:
    cfg.write(fh)
PY
cat /app/service/app.ini
