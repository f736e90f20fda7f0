from .stock import Stock, StockError

__all__ = ["Stock", "StockError"]
