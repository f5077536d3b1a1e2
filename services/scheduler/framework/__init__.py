"""The scheduling framework's types and plugin protocols (upstream pkg/scheduler/framework)."""
