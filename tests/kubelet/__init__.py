"""Tests of the hollow kubelet: its pool, server, pod stages and usage model; eviction/ holds
the eviction tests (thresholds, ranking, manager), as services/kubelet/eviction/ does."""
