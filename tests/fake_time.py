"""A fake clock for unit tests of waits (``Context(clock=..., sleep=...)``): time moves only when the code under
test sleeps, so pacing, limits and budgets are asserted in seconds without any test sleeping."""

from __future__ import annotations


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
