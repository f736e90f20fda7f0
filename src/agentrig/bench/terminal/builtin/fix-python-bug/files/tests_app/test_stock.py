import unittest

from inventory import Stock, StockError


class StockTest(unittest.TestCase):
    def test_receive_adds(self):
        s = Stock({"bolt": 2})
        s.receive("bolt", 3)
        self.assertEqual(s.levels["bolt"], 5)

    def test_cannot_ship_more_than_in_stock(self):
        s = Stock({"nut": 4})
        with self.assertRaises(StockError):
            s.ship("nut", 5)
        self.assertEqual(s.levels["nut"], 4)

    def test_low_stock_is_strictly_below(self):
        s = Stock({"a": 1, "b": 5, "c": 4})
        self.assertEqual(s.low_stock(5), ["a", "c"])


if __name__ == "__main__":
    unittest.main()
