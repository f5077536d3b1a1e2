"""The Job controller (batch/v1): `controller` runs Jobs' pods, `pods` makes and reads
them, `rules` holds the pure decision rules (intervals, pod failure and success policies,
backoff, conditions). Each imports only the ones after it."""

from services.controllers.job.config import JobConfig
from services.controllers.job.controller import JobController

__all__ = ["JobConfig", "JobController"]
