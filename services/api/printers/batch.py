"""What `kubectl get` shows for the batch/v1 kinds, Job and CronJob.

The columns and cells are upstream's printJob and printCronJob
(pkg/printers/internalversion/printers.go): a Job prints NAME STATUS COMPLETIONS DURATION
AGE, where STATUS is the first of Complete, Failed, Terminating (being deleted), Suspended,
FailureTarget that holds, else Running; COMPLETIONS is `succeeded/completions`, or
`succeeded/1` (`succeeded/1 of parallelism` when parallelism > 1) for a Job without
completions; DURATION runs from status.startTime to completionTime (to now while running,
empty before the Job starts). A CronJob prints NAME SCHEDULE TIMEZONE SUSPEND ACTIVE
LAST SCHEDULE AGE, SUSPEND `<unset>` when the field is not set. Both have `-o wide`'s
CONTAINERS IMAGES SELECTOR of the pod template.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.api.printers.columns import (
    AGE,
    INT,
    NAME,
    NONE,
    Column,
    Columns,
    S,
    age,
    format_label_selector,
    human_duration,
    parse_time,
    wide_columns,
)


def _true(conditions: Any, type_: str) -> bool:
    return any(c.type == type_ and c.status == "True" for c in conditions)


def job_status(job: Any) -> str:
    """upstream's printJob STATUS cell."""
    conds = job.status.conditions
    if _true(conds, "Complete"):
        return "Complete"
    if _true(conds, "Failed"):
        return "Failed"
    if job.metadata.deletion_timestamp:
        return "Terminating"
    if _true(conds, "Suspended"):
        return "Suspended"
    if _true(conds, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_completions(job: Any) -> str:
    succeeded = job.status.succeeded
    if job.spec.HasField("completions"):
        return f"{succeeded}/{job.spec.completions}"
    parallelism = job.spec.parallelism if job.spec.HasField("parallelism") else 0
    if parallelism > 1:
        return f"{succeeded}/1 of {parallelism}"
    return f"{succeeded}/1"


def job_duration(job: Any, now: float) -> str:
    start = parse_time(job.status.start_time)
    if start is None:
        return ""
    end = parse_time(job.status.completion_time)
    return human_duration((now if end is None else end) - start)


def _template_cells(template: Any, selector: Any) -> list[str]:
    cs = template.spec.containers
    names = ",".join(c.name for c in cs) or NONE
    images = ",".join(c.image for c in cs) or NONE
    return [names, images, format_label_selector(selector)]


def _job_row(obj: Message, now: float, wide: bool) -> list[str]:
    job: Any = obj
    row = [
        job.metadata.name,
        job_status(job),
        job_completions(job),
        job_duration(job, now),
        age(job.metadata.creation_timestamp, now),
    ]
    if wide:
        selector = job.spec.selector if job.spec.HasField("selector") else None
        row += _template_cells(job.spec.template, selector)
    return row


def _cronjob_row(obj: Message, now: float, wide: bool) -> list[str]:
    cj: Any = obj
    spec = cj.spec
    last = cj.status.last_schedule_time
    row = [
        cj.metadata.name,
        spec.schedule,
        spec.time_zone if spec.HasField("time_zone") else NONE,
        ("True" if spec.suspend else "False") if spec.HasField("suspend") else "<unset>",
        str(len(cj.status.active)),
        age(last, now) if last else NONE,
        age(cj.metadata.creation_timestamp, now),
    ]
    if wide:
        jt = spec.job_template.spec
        selector = jt.selector if jt.HasField("selector") else None
        row += _template_cells(jt.template, selector)
    return row


_WIDE = wide_columns(
    Column("Containers", S, "Names of each container in the template."),
    Column("Images", S, "Images referenced by each container in the template."),
    Column("Selector", S, "Query over pods that should match the replica count."),
)

#: kind -> table, merged into printers.COLUMNS.
BATCH_COLUMNS: dict[str, Columns] = {
    "Job": Columns(
        (
            NAME,
            Column("Status", S, "Status of the job."),
            Column("Completions", S, "The desired number of successfully finished pods."),
            Column("Duration", S, "Time required to complete the job."),
            AGE,
            *_WIDE,
        ),
        _job_row,
    ),
    "CronJob": Columns(
        (
            NAME,
            Column("Schedule", S, "The schedule in Cron format."),
            Column("Timezone", S, "The time zone name for the given schedule."),
            Column("Suspend", "boolean", "Whether the controller suspends executions."),
            Column("Active", INT, "The number of currently running jobs."),
            Column("Last Schedule", S, "When the job was last successfully scheduled."),
            AGE,
            *_WIDE,
        ),
        _cronjob_row,
    ),
}
