"""A fake clock for unit tests of waits (``Context(clock=..., sleep=...)``): time moves only when the code under
test sleeps, so pacing, limits and budgets are asserted in seconds without any test sleeping."""

from __future__ import annotations

from typing import Any


class FakeTime:
    START = 1000.0

    def __init__(self) -> None:
        self.now = self.START
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds

    @property
    def elapsed(self) -> float:
        return self.now - self.START

    def context(self, wait_timeout: int = 600, check_mode: bool = False, **options: Any) -> Any:
        """A run's Context on this clock (cluster ``demo``, no AWS session: the paths under test make no AWS call, or
        their reads are replaced); ``options`` are Context's other ones (``wait``)."""
        from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context

        return Context(
            session=None,  # type: ignore[arg-type]
            cluster="demo",
            check_mode=check_mode,
            wait_timeout=wait_timeout,
            clock=self.clock,
            sleep=self.sleep,
            **options,
        )
