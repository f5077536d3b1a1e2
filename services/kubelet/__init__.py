"""The hollow kubelet: pod stages, per-pod usage model and the node-pressure eviction manager."""
