"""The run's storage: the SQLite store of trials, its schema and shared blobs, the run directory,
the replay cache, the generic exports and the instability tables. The bottom floor of a run."""
