"""Chaos and its proof: the partition relay a replica's traffic goes through, the control
service `kubera chaos` drives, and the checker that replays etcd's history of a run."""
