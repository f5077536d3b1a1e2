"""kubera: a Kubernetes control plane in Python for scheduling research (CLI, launcher, API)."""

__version__ = "0.1.0"
