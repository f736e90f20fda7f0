"""Pure functions from stored verdicts to figures (pass^k, consistency, A/B)."""
