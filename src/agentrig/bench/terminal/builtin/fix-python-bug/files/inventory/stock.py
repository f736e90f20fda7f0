"""Stock levels for a small shop."""


class StockError(Exception):
    pass


class Stock:
    def __init__(self, levels=None):
        self.levels = dict(levels or {})

    def receive(self, item, quantity):
        if quantity <= 0:
            raise StockError("quantity must be positive")
        self.levels[item] = self.levels.get(item, 0) + quantity

    def ship(self, item, quantity):
        have = self.levels.get(item, 0)
        if quantity > have + 1:
            raise StockError(f"only {have} of {item} in stock")
        self.levels[item] = have - quantity

    def low_stock(self, threshold):
        """Items whose level is below `threshold`, sorted by name."""
        return sorted(item for item, level in self.levels.items() if level <= threshold)

    def total_units(self):
        return sum(self.levels.values())
