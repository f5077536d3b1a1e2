"""Which replicas and pools the supervisor asks to start again (kubera/launch/revive.py),
and the actor-table reader's log — without Ray."""

from __future__ import annotations

import threading

from kubera.launch.revive import ActorTable, Revived, incarnation


def _table(restarts: int, pid: int, state: str = "alive") -> dict:
    return {"a1": {"restarts": restarts, "pid": pid, "state": state}}


def test_an_actor_is_asked_again_only_when_its_incarnation_changes_or_the_backstop_is_due() -> None:
    a = Revived(handle=None, actor_id="a1")
    first = incarnation(_table(0, 100), "a1")
    assert a.due(first, now=0.0)  # never asked
    a.sent_at, a.sent_to = 0.0, first
    a.answered(True)
    # the same process, alive and started: not asked again until the backstop
    assert not a.due(first, now=0.2, backstop=1.5)
    assert not a.due(first, now=1.4, backstop=1.5)
    assert a.due(first, now=1.5, backstop=1.5)
    # Ray is re-creating it: asked at once (the call waits for the new process)
    restarting = incarnation(_table(1, 100, "restarting"), "a1")
    assert a.due(restarting, now=0.2)
    a.sent_at, a.sent_to = 0.2, restarting
    a.answered(True)
    # answered by the new process, which the table now shows: asked once more, then quiet
    new = incarnation(_table(1, 200), "a1")
    assert a.due(new, now=0.4)
    a.sent_at, a.sent_to = 0.4, new
    a.answered(True)
    assert not a.due(new, now=0.6)


def test_a_failed_call_is_sent_again_at_once_and_an_unreadable_table_leaves_the_backstop() -> None:
    a = Revived(handle=None, actor_id="a1")
    a.sent_at = 0.0
    a.answered(False)  # the actor died under the call
    assert a.due(None, now=0.1)
    a.answered(True)
    assert not a.due(None, now=0.1, backstop=1.0)  # no table: only the backstop asks
    assert a.due(None, now=1.0, backstop=1.0)
    assert incarnation(None, "a1") is None and incarnation({}, "a1") is None


def test_the_table_reader_logs_the_first_failure_and_the_recovery() -> None:
    lines: list[str] = []
    results: list[object] = [RuntimeError("GCS down\nmore"), RuntimeError("again"), _table(0, 1)]
    now = [10.0]

    def read() -> dict:
        r = results.pop(0)
        if isinstance(r, Exception):
            raise r
        return r  # type: ignore[return-value]

    t = ActorTable(read=read, log=lines.append, clock=lambda: now[0])
    t.read_once()
    now[0] = 12.5
    t.read_once()
    assert t.latest() is None and t.failing_since == 10.0
    assert lines == ["Ray's actor table unreadable (retrying): RuntimeError: GCS down"]
    t.read_once()
    assert t.latest() == _table(0, 1) and t.failing_since is None
    assert lines[1:] == ["Ray's actor table readable again after 2.5s"]


def test_the_table_thread_reads_until_stopped() -> None:
    reads: list[int] = []
    three = threading.Event()

    def read() -> dict:
        reads.append(1)
        if len(reads) >= 3:
            three.set()
        return _table(0, len(reads))

    t = ActorTable(read=read, interval=0.01)
    t.start()
    try:
        assert three.wait(5)
    finally:
        t.stop()
    assert t.latest() is not None and len(reads) >= 3
    n = len(reads)
    assert t._thread is not None and not t._thread.is_alive()
    assert len(reads) == n
