"""Planning and executing a run: the experiment as loaded and checked, the plan of trials not yet
stored, the executor that plays them (``run/ray/``: the same on a Ray cluster), the budget and
time estimates, the smoke check, the progress line, the doctor's targets of an experiment and the
silent-truncation watch across trials (``truncation.py``)."""
