# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): every wait of a run - polls, retries, drains - paced, reported and bounded in one place.

A run has one time budget (``wait_timeout``, from the start of the run) shared by all its waits: a run never waits
longer than the user allowed, however many resources it waits for. A :class:`Wait` is one of them:

* **pacing** (:class:`Backoff`): the first pause is short and each next one a tenth longer, up to a cap - an
  answer that comes quickly is seen quickly (a node that joins in seconds, a pod that leaves at once), a slow one
  costs no more requests than polling at the cap would (one request per pause; the short pauses at the start add
  about fifteen per wait, twenty-five at an EKS wait's 15 s cap), and a resource is seen settled at most a tenth of
  its time (plus half a second) after it did, at any scale: a pause is never longer than a tenth of the time waited
  before it. Doubling pauses saw a 20-second settle 10 seconds late (the next poll after 15.5 s came at 30.5 s);
  pauses growing by a quarter saw an EKS cluster's 6-second deletion (3 minutes on AWS, at the bench's 1/30) 1.5 s
  late, where a tenth sees it 0.8 s late;
* **progress**: every :data:`PROGRESS_EVERY` seconds of the wait (the first at that age, the next ones on the same
  grid, a pause never sleeping past the next one) the wait says what it waits for, the state it last saw, how long
  it has waited and how long it may still wait - through :meth:`.context.Context.progress`: the module's log and the
  controller's display as it happens, the last lines in the result;
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

# A wait reports where it stands this often (at the latest: a pause ends when a report is due).
PROGRESS_EVERY = 30.0


def duration(seconds: float) -> str:
    """``90`` -> ``1m30s``, ``3725`` -> ``1h2m5s``, ``42`` -> ``42s`` (whole seconds, as Go and kubectl write them)."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


@dataclass(frozen=True)
class Backoff:
    """Pauses between polls: ``first``, then each ``factor`` times the last, never more than ``cap``. Each pause is
    then at most ``factor - 1`` times the time waited before it, plus ``first``: how late a poll sees a change."""

    first: float = 0.5
    cap: float = 5.0
    factor: float = 1.1

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
    _report_due: float = field(init=False)
    _pauses: Iterator[float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()
        self._report_due = self.started + PROGRESS_EVERY
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

    def time_left(self) -> float:
        """How long this wait may still last: the run's budget left, or the wait's own limit if that ends first."""
        left = self.remaining()
        return min(left, self.limit - self.elapsed) if self.limit else left

    def pause(self, state: str | None = None) -> None:
        """Sleep the next pause (never past the run's budget, the wait's limit or the next progress report),
        reporting progress when due; ``state`` is what the wait last saw (``CREATING``), for the report."""
        now = self.clock()
        if now >= self._report_due:
            self._report(now, state)
            # The next report on the same grid (started + n * PROGRESS_EVERY): the time each poll takes does not
            # add up into longer gaps between reports.
            self._report_due = now + PROGRESS_EVERY - (now - self.started) % PROGRESS_EVERY
        pause = min(next(self._pauses), max(self.remaining(), 0.1), self._report_due - now)
        if self.limit:
            pause = min(pause, max(self.limit - self.elapsed, 0.1))
        self.sleep(pause)

    def _report(self, now: float, state: str | None) -> None:
        seen = f" ({state})" if state else ""
        self.report(
            f"waiting for {self.what}{seen}: {duration(now - self.started)} waited, "
            f"up to {duration(self.time_left())} left"
        )


def watched_sleep(ctx: Context, seconds: float, watch: Callable[[float], bool]) -> None:
    """A pause that a watch may end early: ``watch(seconds)`` follows what the wait is for and says whether it saw
    it; if not (its time ran out, or it could not watch), the rest of the pause is slept."""
    started = ctx.clock()
    if watch(seconds):
        return
    left = seconds - (ctx.clock() - started)
    if left > 0:
        ctx.sleep(left)


def wait_until(
    describe: Callable[[], Any],
    done: Callable[[Any], bool],
    ctx: Context,
    what: str,
    delay: float = POLL.cap,
    failed: Callable[[Any], str | None] | None = None,
    state: Callable[[Any], str | None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> Any:
    """Poll ``describe`` until ``done`` holds, within the run's remaining budget; ``delay`` is the longest pause
    between two polls (the first ones are shorter: :class:`Backoff`). ``failed`` names a state that will never
    become done (the wait fails at once, with that reason); ``state`` says in a word or two what a poll saw, for
    the progress reports (``CREATING``); ``sleep`` pauses between polls instead of the run's own sleep (one that
    returns early when a watch sees a change: the next poll then comes at once)."""
    waiting = ctx.wait_for(what, backoff=Backoff(cap=delay), sleep=sleep)
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
        waiting.pause(state(observed) if state else None)
