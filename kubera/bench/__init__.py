"""`kubera bench …`: one module per bench; none imports another."""
