"""Grades /app/service/app.ini item by item and writes Harbor's reward.json."""

import configparser
import json
import os
import sys

cfg = configparser.ConfigParser()
try:
    cfg.read("/app/service/app.ini")
    parsed = True
except configparser.Error:
    parsed = False


def get(section, key):
    return cfg.get(section, key, fallback=None) if parsed else None


checks = {
    "port": get("server", "port") == os.environ.get("EXPECTED_PORT", "9443"),
    "debug_off": (get("server", "debug") or "").lower() == "false",
    "logging": get("logging", "level") == "warning" and get("logging", "file") == "/var/log/app.log",
    "kept": get("server", "host") == "0.0.0.0" and get("storage", "path") == "/srv/data"
    and get("storage", "max_mb") == "512",
}
scores = {name: 1.0 if ok else 0.0 for name, ok in checks.items()}
# the "kept" check guards the others: rewriting the whole file from scratch earns nothing
reward = sum(scores[n] for n in ("port", "debug_off", "logging")) / 3 if checks["kept"] else 0.0
os.makedirs("/logs/verifier", exist_ok=True)
with open("/logs/verifier/reward.json", "w") as fh:
    json.dump({"reward": round(reward, 4), **scores}, fh)
print(json.dumps({"reward": reward, **scores}))
sys.exit(0)
