"""The doctor: checks an (endpoint, model, wire) before a run, and prints its report."""
