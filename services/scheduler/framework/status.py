"""Outcomes as values: every extension point returns a `Status` with Kubernetes' codes.

Exceptions are for bugs and broken infrastructure; a plugin that cannot place a pod says so
with a Status (Unschedulable: another node or a later event may help;
UnschedulableAndUnresolvable: preemption cannot help on this node).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


@dataclass(frozen=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    #: The plugin that returned it (filled in by the framework).
    plugin: str = ""
    error: BaseException | None = field(default=None, compare=False)

    # ----------------------------------------------------------- builders
    @staticmethod
    def success() -> Status:
        return _SUCCESS

    @staticmethod
    def unschedulable(*reasons: str, plugin: str = "") -> Status:
        return Status(Code.UNSCHEDULABLE, reasons, plugin)

    @staticmethod
    def unresolvable(*reasons: str, plugin: str = "") -> Status:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)

    @staticmethod
    def as_error(err: BaseException, plugin: str = "") -> Status:
        return Status(Code.ERROR, (str(err),), plugin, err)

    @staticmethod
    def skip(plugin: str = "") -> Status:
        return Status(Code.SKIP, (), plugin)

    @staticmethod
    def wait(plugin: str = "") -> Status:
        return Status(Code.WAIT, (), plugin)

    # ------------------------------------------------------------ queries
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """The pod cannot go there (as opposed to an error)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error)

    @property
    def code_name(self) -> str:
        """The code as upstream spells it ("Unschedulable", "Skip")."""
        return _NAMES[self.code]

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def __str__(self) -> str:
        who = f" [{self.plugin}]" if self.plugin else ""
        return (
            f"{_NAMES[self.code]}{who}: {self.message}"
            if self.reasons
            else f"{_NAMES[self.code]}{who}"
        )


_SUCCESS = Status()


def merge_statuses(statuses: list[Status]) -> Status:
    """One status for many (the worst code wins; reasons are concatenated)."""
    if not statuses:
        return _SUCCESS
    worst = max(statuses, key=lambda s: s.code if s.code != Code.SKIP else -1)
    reasons: list[str] = []
    for s in statuses:
        reasons.extend(s.reasons)
    return Status(worst.code, tuple(reasons), worst.plugin, worst.error)


class FrameworkError(RuntimeError):
    """An extension point failed with an Error status where the API returns no Status
    (run_score); `status` carries the plugin and the cause."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def rejection_or_error(name: str, point: str, st: Status) -> Status:
    """A plugin's failure as the framework reports it: a rejection keeps its code, anything
    else becomes an Error naming the plugin and the extension point."""
    if st.is_rejected():
        return st.with_plugin(name)
    return plugin_error(name, f"running {point} plugin {name!r}", st)


def plugin_error(name: str, what: str, status: Status) -> Status:
    """An Error status of plugin `name` wrapping a non-rejection status (upstream AsStatus)."""
    err = status.error if status.error is not None else RuntimeError(status.message)
    return Status(Code.ERROR, (f"{what}: {status.message}",), name, err)
