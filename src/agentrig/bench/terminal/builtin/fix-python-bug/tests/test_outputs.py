"""Hidden tests for fix-python-bug: the visible tests pass untouched, and more cases hold."""

import hashlib
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, "/app")

VISIBLE_SHA256 = "a66fd1f74339b0d25c863a79613751c5cb3a03e03eaca8ecd35835ba79f64c30"


def test_visible_tests_untouched():
    files = sorted(p.name for p in Path("/app/tests_app").iterdir() if p.is_file())
    assert files == ["test_stock.py"]
    digest = hashlib.sha256(Path("/app/tests_app/test_stock.py").read_bytes()).hexdigest()
    assert digest == VISIBLE_SHA256


def test_visible_tests_pass():
    proc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests_app"],
                          cwd="/app", capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_ship_exact_amount_empties():
    from inventory import Stock

    s = Stock({"washer": 3})
    s.ship("washer", 3)
    assert s.levels["washer"] == 0


def test_ship_one_too_many_refused():
    from inventory import Stock, StockError

    s = Stock({"washer": 3})
    try:
        s.ship("washer", 4)
    except StockError:
        pass
    else:
        raise AssertionError("shipping 4 of 3 was allowed")
    assert s.levels["washer"] == 3


def test_low_stock_threshold():
    from inventory import Stock

    s = Stock({"x": 0, "y": 2, "z": 3})
    assert s.low_stock(3) == ["x", "y"]
    assert s.low_stock(0) == []
