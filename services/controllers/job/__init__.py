"""The Job controller (batch/v1): `controller` runs Jobs' pods, `rules` holds its pure
decision rules (intervals, pod failure and success policies, backoff, conditions)."""

from services.controllers.job.controller import JobConfig, JobController

__all__ = ["JobConfig", "JobController"]
