#!/bin/bash
cd /app
python3 -m unittest discover -s tests_app || true
sed -i 's/if quantity > have + 1:/if quantity > have:/' inventory/stock.py
sed -i 's/if level <= threshold)/if level < threshold)/' inventory/stock.py
python3 -m unittest discover -s tests_app
