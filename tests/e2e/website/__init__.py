"""The checks of tests/e2e/test_website_examples_e2e.py, one function per row of its table:
`run` (what a check gets, and the waits and reads they share), `workloads` (batch and
apps), `configs` (services, ConfigMaps and Secrets, scheduling, quotas and limits)."""
