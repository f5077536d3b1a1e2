"""CronJob schedules: parsing them as upstream does and finding their times.

Why this module exists: the apiserver validates a CronJob's schedule and time zone and the
CronJob controller walks its times; both need the same parser. Upstream parses with
robfig/cron/v3's ParseStandard: five fields (minute hour day-of-month month day-of-week),
names (`JAN`, `mon`), `?` for `*`, and the descriptors `@yearly` `@annually` `@monthly`
`@weekly` `@daily` `@midnight` `@hourly` and `@every <duration>`; day-of-month and
day-of-week are OR'ed when both are restricted (Vixie cron). kubera iterates with croniter
(PyPI, the iterator Airflow and Celery's ecosystem rely on, tz-aware, Vixie semantics by
default); cronsim was the other candidate, but it has no iterator backwards (needed for
"the most recent missed time") and accepts fewer descriptors. croniter also takes seconds
as a sixth field, `L`, `#` and `H`: this module refuses those as ParseStandard does
("expected exactly 5 fields"), so a schedule valid here is valid upstream and the other way
round (up to the error wording of exotic inputs). `@every` is computed here, not by croniter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from services.api.machinery.duration import parse_duration

DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
#: A field's characters; words must be three-letter month or day names (robfig has no
#: `L`, `W`, `#` or `H`).
_FIELD = re.compile(r"^(?:[0-9*?/,\-]|[A-Za-z]{3}(?![A-Za-z]))+$")
_TZ_PREFIX = re.compile(r"^(CRON_)?TZ=")


class ScheduleError(ValueError):
    """A schedule upstream's parser refuses; the message is the field error's detail."""


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: a cron expression, or a fixed interval (`@every`)."""

    expr: str = ""
    every: float = 0.0

    def next_after(self, t: datetime) -> datetime:
        """The first time strictly after `t` (tz-aware; the schedule's zone is t's); an
        @every schedule counts from `t`'s whole second, as robfig's does. Raises
        ScheduleError when no date matches (`59 23 31 2 *`, where robfig's Next gives
        the zero time)."""
        if self.every:
            return t.replace(microsecond=0) + timedelta(seconds=self.every)
        try:
            return croniter(self.expr, t).get_next(datetime)  # type: ignore[no-any-return]
        except CroniterBadDateError:
            raise ScheduleError(f"no time matches the schedule [{self.expr}]") from None


def parse(schedule: str) -> Schedule:
    """ParseStandard's rules; raises ScheduleError with a message naming what is wrong."""
    text = schedule.strip()
    if not text:
        raise ScheduleError("empty spec string")
    if _TZ_PREFIX.match(text):
        raise ScheduleError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    if text.startswith("@"):
        if text.startswith("@every "):
            try:
                every = parse_duration(text[len("@every ") :].strip())
            except ValueError:
                raise ScheduleError(f"failed to parse duration {text}") from None
            if every <= 0:
                raise ScheduleError(f"failed to parse duration {text}")
            # robfig rounds @every down to whole seconds, at least one
            return Schedule(every=max(1.0, float(int(every))))
        expr = DESCRIPTORS.get(text)
        if expr is None:
            raise ScheduleError(f"unrecognized descriptor: {text}")
        return Schedule(expr=expr)
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: [{text}]")
    if not all(_FIELD.match(f) for f in fields):
        raise ScheduleError(f"failed to parse schedule: [{text}]")
    expr = " ".join(f.replace("?", "*") for f in fields)
    try:
        croniter(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except (ValueError, KeyError) as e:  # croniter's errors are ValueErrors
        raise ScheduleError(f"failed to parse schedule: {e}") from None
    return Schedule(expr=expr)


def zone(name: str | None) -> tzinfo:
    """The IANA zone `name` (None or empty: the controller's local zone, UTC in kubera,
    as in upstream's containers)."""
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"unknown time zone {name}") from None


def valid_zone(name: str) -> bool:
    if name in ("", "Local") or name.startswith(("/", ".")) or ".." in name:
        return False
    try:
        zone(name)
    except ScheduleError:
        return False
    return True
