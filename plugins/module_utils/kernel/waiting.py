# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): every wait of a run - polls, retries, drains - paced, reported and bounded in one place.

A run has one time budget (``wait_timeout``, from the start of the run) shared by all its waits: a run never waits
longer than the user allowed, however many resources it waits for. A :class:`Wait` is one of them:

* **pacing** (:class:`Backoff`): the first pause is short and each next one longer, up to a cap - an answer that
  comes quickly is seen quickly (a node that joins in seconds, a pod that leaves at once), and a slow one costs no
  more requests than polling at the cap would (one request per pause; the few short pauses at the start add a
  handful per wait);
* **progress**: every :data:`PROGRESS_EVERY` seconds the wait says what it waits for, how long it has waited and
  how much of the budget is left (to the module's log as it happens, and the last lines in the result);
* **bounds**: the run's budget, and a limit of its own when the wait has one (``node_drain_timeout``);
* **time** comes from the run's :class:`~.context.Context` (``clock``, ``sleep``): unit tests drive a wait with a
  fake clock and never sleep.

:func:`wait_until` is the poll (read until a predicate holds); loops whose body acts (a drain evicting pods, a
delete refused while dependants go away) hold a :class:`Wait` and call :meth:`Wait.pause` between rounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .errors import ReconcileError

if TYPE_CHECKING:
    from .context import Context

# A wait reports where it stands this often (the module's log, and the last lines in its result).
PROGRESS_EVERY = 30.0


@dataclass(frozen=True)
class Backoff:
    """Pauses between polls: ``first``, then each ``factor`` times the last, never more than ``cap``."""

    first: float = 0.5
    cap: float = 5.0
    factor: float = 2.0

    def pauses(self) -> Iterator[float]:
        pause = min(self.first, self.cap)
        while True:
            yield pause
            pause = min(pause * self.factor, self.cap)


# How AWS is polled for a resource to settle (CAPA polls its waits every few seconds).
POLL = Backoff()


@dataclass
class Wait:
    """One wait of a run (see the module docstring). ``remaining`` is the run's budget left, ``report`` where
    progress goes; ``limit`` a bound of its own (0: none)."""

    what: str
    remaining: Callable[[], float]
    report: Callable[[str], None]
    limit: float = 0.0
    backoff: Backoff = POLL
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    started: float = field(init=False)
    _last_report: float = field(init=False)
    _pauses: Iterator[float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.started = self._last_report = self.clock()
        self._pauses = self.backoff.pauses()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def over_limit(self) -> bool:
        """The wait's own limit has passed (never, without one)."""
        return bool(self.limit) and self.elapsed >= self.limit

    def budget_left(self, margin: float = 0.0) -> bool:
        """More than ``margin`` seconds of the run's budget are left."""
        return self.remaining() > margin

    def pause(self) -> None:
        """Sleep the next pause (never past the run's budget or the wait's limit), reporting progress when due."""
        now = self.clock()
        if now - self._last_report >= PROGRESS_EVERY:
            self._last_report = now
            self.report(
                f"waiting for {self.what}: {int(now - self.started)}s so far, "
                f"{int(self.remaining())}s of wait_timeout left"
            )
        pause = min(next(self._pauses), max(self.remaining(), 0.1))
        if self.limit:
            pause = min(pause, max(self.limit - self.elapsed, 0.1))
        self.sleep(pause)


def wait_until(
    describe: Callable[[], Any],
    done: Callable[[Any], bool],
    ctx: Context,
    what: str,
    delay: float = POLL.cap,
    failed: Callable[[Any], str | None] | None = None,
) -> Any:
    """Poll ``describe`` until ``done`` holds, within the run's remaining budget; ``delay`` is the longest pause
    between two polls (the first ones are shorter: :class:`Backoff`). ``failed`` names a state that will never
    become done (the wait fails at once, with that reason)."""
    waiting = ctx.wait_for(what, backoff=Backoff(cap=delay))
    while True:
        observed = describe()
        if done(observed):
            return observed
        if failed is not None:
            reason = failed(observed)
            if reason:
                raise ReconcileError(f"{what}: {reason}")
        if not waiting.budget_left():
            raise ReconcileError(f"timed out after {ctx.wait_timeout}s waiting for {what}")
        waiting.pause()
