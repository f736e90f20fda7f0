"""Pure functions from stored verdicts to figures: the core per scope (``build.py`` into
``summary.py``'s models: pass^k and its intervals, components, terminations, resources), the figure
protocol (``figure.py``: a figure is one module, registered once; ``ArmAnalysis.figures`` holds
every registered figure's typed result) with the core's figures (usage, components, terminations,
durations, reruns, retries, consistency, failures, decision instability) and ``analyze``'s text
helpers (``text.py``); the A/B comparison (``compare``, ``config_diff``, ``sides``) and decision
instability by resampling (``instability*``)."""
