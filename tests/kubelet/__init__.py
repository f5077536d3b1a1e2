"""Tests of the hollow kubelet's pure logic: eviction thresholds, ranking, manager, usage model."""
