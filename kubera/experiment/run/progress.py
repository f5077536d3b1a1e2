"""What `kubera experiment run` shows while it runs.

On a terminal: a rich Live panel, redrawn twice a second — the run (n of N), the current
phase (the op running, or `kubera up`/`down`), pods created/bound/Running, the bind rate
over the last second, faults injected so far and the elapsed time. When stdout is not a
terminal, or `CI` is set, no live display: one plain line every few seconds instead, so logs
stay readable. `Progress(enabled=False)` says nothing at all (tests, library use).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

#: Seconds between plain progress lines.
PLAIN_EVERY = 5.0


def live_wanted(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("CI")


class Progress:
    """The progress display of one experiment (a context manager around the runs)."""

    def __init__(self, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stdout
        self.live_mode = enabled and live_wanted(self.stream)
        # Off a terminal rich assumes 80 columns: too narrow for the summary table.
        self.console = Console(file=self.stream, width=None if self.stream.isatty() else 160)
        self._live: Live | None = None
        self.run_id = ""
        self.position = ""
        self.current = ""
        self.created = self.bound = self.running = 0
        self.rate = 0.0
        self.faults = 0
        self.warnings: list[str] = []
        self.started = time.monotonic()
        self._last_line = 0.0

    def __enter__(self) -> Progress:
        if self.live_mode:
            self._live = Live(self._render(), console=self.console, refresh_per_second=2)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    # ---------------------------------------------------------------- events

    def say(self, line: str) -> None:
        if self.enabled:
            self.console.print(line, markup=False, highlight=False)

    def start_run(self, run_id: str, n: int, total: int) -> None:
        self.run_id, self.position = run_id, f"{n}/{total}"
        self.created = self.bound = self.running = self.faults = 0
        self.warnings = []
        self.rate = 0.0
        self.started = time.monotonic()
        self.say(f"run {self.position}: {run_id}")
        self._refresh()

    def phase(self, name: str) -> None:
        self.current = name
        self._refresh(plain=True)

    def update(self, collector: Any, faults: int, warnings: list[str] | None = None) -> None:
        pods = collector.pods
        self.created, self.bound, self.running = (
            len(pods.pods),
            pods.bound_count,
            pods.running_count,
        )
        now = collector.now()
        self.rate = float(
            sum(1 for p in pods.pods.values() if p.bound is not None and now - p.bound <= 1.0)
        )
        self.faults = faults
        self.warnings = list(warnings or ())
        self._refresh()

    def end_run(self, run: Any) -> None:
        outcome = f"error: {run.error}" if run.error else "done"
        self.say(f"run {self.position}: {self.run_id} {outcome} ({self._elapsed():.0f}s)")

    # ------------------------------------------------------------- rendering

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def line(self) -> str:
        return (
            f"[{self.position}] {self.run_id} · {self.current} · pods created {self.created}, "
            f"bound {self.bound}, running {self.running} · {self.rate:.0f} binds/s · "
            f"faults {self.faults}{self._warned()} · {self._elapsed():.0f}s"
        )

    def _warned(self) -> str:
        return f" · warning: {self.warnings[-1]}" if self.warnings else ""

    def _render(self) -> Table:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("run", f"{self.run_id} ({self.position})")
        t.add_row("phase", self.current)
        t.add_row("pods", f"created {self.created}  bound {self.bound}  running {self.running}")
        t.add_row("bind rate", f"{self.rate:.0f} pods/s")
        t.add_row("faults", str(self.faults))
        for warning in self.warnings:
            t.add_row("warning", warning, style="yellow")
        t.add_row("elapsed", f"{self._elapsed():.0f}s")
        return t

    def _refresh(self, *, plain: bool = False) -> None:
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(self._render())
            return
        now = time.monotonic()
        if plain or now - self._last_line >= PLAIN_EVERY:
            self._last_line = now
            print(self.line(), file=self.stream, flush=True)
