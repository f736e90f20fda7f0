"""Hidden tests for csv-region-totals."""

from pathlib import Path

OUT = Path("/app/region_totals.csv")
EXPECTED = {
    "East": "116.50",
    "North": "47.19",
    "South": "91.97",
    "West": "137.75",
}


def _rows():
    return OUT.read_text().strip().splitlines()


def test_header():
    assert _rows()[0].strip() == "region,revenue"


def test_regions_sorted():
    regions = [r.split(",")[0] for r in _rows()[1:]]
    assert regions == sorted(EXPECTED)


def test_revenues():
    got = dict(r.strip().split(",", 1) for r in _rows()[1:])
    assert got == EXPECTED


def test_invalid_quantity_left_out():
    # the South order with quantity "two" would add 14.50 when read as 2
    got = dict(r.strip().split(",", 1) for r in _rows()[1:])
    assert got.get("South") != "106.47"
