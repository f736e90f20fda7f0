"""The run's storage: the SQLite store of trials, its schema and shared blobs, the run directory
(its place and owner lock: owner.py), the replay cache, the generic exports and the instability
tables. The bottom floor of a run."""
