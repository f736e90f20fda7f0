#!/bin/bash
head -5 /app/orders.csv
python3 - <<'PY'
import csv
from collections import defaultdict
from decimal import Decimal

totals = defaultdict(Decimal)
with open("/app/orders.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        if not row["quantity"].strip().isdigit():
            continue
        totals[row["region"]] += int(row["quantity"]) * Decimal(row["unit_price"])
with open("/app/region_totals.csv", "w", newline="") as out:
    out.write("region,revenue\n")
    for region in sorted(totals):
        out.write(f"{region},{totals[region]:.2f}\n")
PY
cat /app/region_totals.csv
