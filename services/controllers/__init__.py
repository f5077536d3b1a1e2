"""Controllers of kube-controller-manager, as plain asyncio classes."""
