"""``kubera experiment``: scheduler_perf-style experiment files run on kubera, with reports."""
