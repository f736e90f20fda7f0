"""Conducting a run: the experiment as loaded and checked, the session (open or resume the run
directory, plan the trials not yet stored, play them with the chosen executor — ``executor.py``,
or ``run/ray/``: the same on a Ray cluster — summarize, write the report, the exit code), the
budget and time estimates, the smoke check, the progress line, the doctor's targets of an
experiment, the silent-truncation watch across trials (``truncation.py``) and the resampling of
stored decisions (``resample.py``, ``agentrig instability``)."""
