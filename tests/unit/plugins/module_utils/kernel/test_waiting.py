# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kernel/waiting.py: every wait of a run, on a fake clock (no test here sleeps)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_time import FakeTime

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import PROGRESS_LISTENERS, Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.waiting import Backoff, duration, wait_until


def context(fake: FakeTime, wait_timeout: int = 600) -> Context:
    return fake.context(wait_timeout)


def test_backoff_starts_short_and_grows_to_its_cap():
    assert list(itertools.islice(Backoff().pauses(), 4)) == pytest.approx([0.5, 0.55, 0.605, 0.6655])
    assert list(itertools.islice(Backoff().pauses(), 24, 28)) == [pytest.approx(4.925, abs=1e-3), 5.0, 5.0, 5.0]
    assert list(itertools.islice(Backoff(factor=2.0).pauses(), 7)) == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert list(itertools.islice(Backoff(first=2.0, cap=15.0, factor=1.7).pauses(), 6)) == [
        2.0,
        3.4,
        pytest.approx(5.78),
        pytest.approx(9.826),
        15.0,
        15.0,
    ]
    assert list(itertools.islice(Backoff(first=9, cap=3).pauses(), 2)) == [3, 3]


@pytest.mark.parametrize("cap", [5.0, 15.0])
@pytest.mark.parametrize("settled", [0.3, 2.0, 7.0, 20.0, 75.0, 600.0])
def test_a_poll_sees_a_change_at_most_a_tenth_of_its_time_late_or_one_pause_at_the_cap(settled, cap):
    """Whenever a resource settles, the next poll comes within a tenth of the time it took (plus the first half
    second), or one pause at the cap: an EKS control plane ACTIVE after 20 s is seen by 22.5 s, where doubling
    pauses (0.5, 1, 2, 4, 8, 15 s) saw it at 30.5 s."""
    polled_at, pauses = 0.0, Backoff(cap=cap).pauses()
    while polled_at < settled:
        polled_at += next(pauses)
    assert polled_at - settled <= min(0.1 * settled + 0.5, cap) + 1e-9
    doubling_at, pauses = 0.0, Backoff(cap=15.0, factor=2.0).pauses()
    while doubling_at < 20.0:
        doubling_at += next(pauses)
    assert doubling_at == 30.5


def test_wait_until_polls_until_done_and_says_where_it_stands_every_30_seconds():
    fake = FakeTime()
    ctx = context(fake)
    answers: list[Any] = ["pending"] * 24 + ["available"]
    polls = iter(answers)
    got = wait_until(lambda: next(polls), lambda state: state == "available", ctx, "vpc-1 to be available")
    assert got == "available"
    # 24 pauses for 25 polls, each a tenth longer than the last; the 21st, which would have slept past 30 s, ends
    # there, when the report is due, and the pauses grow on from where they were.
    assert fake.slept[:4] == pytest.approx([0.5, 0.55, 0.605, 0.6655], abs=1e-3)
    assert sum(fake.slept[:20]) == pytest.approx(28.64, abs=0.01) and fake.slept[20] < 0.5 * 1.1**20
    assert sum(fake.slept[:21]) == pytest.approx(30.0, abs=0.01)
    assert fake.slept[21:] == pytest.approx([0.5 * 1.1**n for n in (21, 22, 23)], abs=1e-3)
    assert fake.elapsed == pytest.approx(42.25, abs=0.01)
    assert ctx.progress_log == ["30s: waiting for vpc-1 to be available: 30s waited, up to 9m30s left"]


@pytest.mark.parametrize("cap", [15.0, 20.0])
def test_a_long_wait_reports_every_30_seconds_of_it_whatever_its_pauses_and_polls_take(cap):
    """An EKS control plane polled every 15 s (and a wait polled every 20 s, whose pauses do not divide 30) reports
    at 30 s and every 30 s after, with what it saw: a poll's own time (0.4 s here) does not push the reports back."""
    fake = FakeTime()
    ctx = context(fake, wait_timeout=1800)
    fake.now += 12  # the run did something else first: the budget is the run's, the age the wait's
    said: list[float] = []

    def describe() -> str:
        fake.now += 0.4  # the answer takes time to come
        return "ACTIVE" if fake.elapsed >= 12 + 135 else "CREATING"

    with listening(lambda _message: said.append(fake.elapsed - 12)):
        wait_until(describe, lambda s: s == "ACTIVE", ctx, "EKS cluster demo to be ACTIVE", delay=cap, state=str)
    assert len(said) == 4 and all(30 * n <= at <= 30 * n + 0.41 for n, at in enumerate(said, 1)), said
    assert [line.split(": ", 1)[1] for line in ctx.progress_log] == [
        "waiting for EKS cluster demo to be ACTIVE (CREATING): 30s waited, up to 29m17s left",
        "waiting for EKS cluster demo to be ACTIVE (CREATING): 1m0s waited, up to 28m47s left",
        "waiting for EKS cluster demo to be ACTIVE (CREATING): 1m30s waited, up to 28m17s left",
        "waiting for EKS cluster demo to be ACTIVE (CREATING): 2m0s waited, up to 27m47s left",
    ]


def test_the_time_left_is_the_waits_own_limit_when_that_ends_first():
    fake = FakeTime()
    ctx = context(fake)
    waiting = ctx.wait_for("node n1 to drain", limit=100.0, backoff=Backoff(first=10.0, cap=10.0))
    while not waiting.over_limit():
        waiting.pause("2 pods left")
    assert ctx.progress_log == [
        "30s: waiting for node n1 to drain (2 pods left): 30s waited, up to 1m10s left",
        "60s: waiting for node n1 to drain (2 pods left): 1m0s waited, up to 40s left",
        "90s: waiting for node n1 to drain (2 pods left): 1m30s waited, up to 10s left",
    ]


def test_no_report_for_a_wait_shorter_than_30_seconds():
    fake = FakeTime()
    ctx = context(fake)
    answers = iter([False] * 20 + [True])
    wait_until(lambda: next(answers), bool, ctx, "an answer")
    assert fake.elapsed == pytest.approx(28.64, abs=0.01) and ctx.progress_log == []


@pytest.mark.parametrize(
    "seconds, written",
    [(0, "0s"), (42.9, "42s"), (60, "1m0s"), (90, "1m30s"), (1710, "28m30s"), (3725, "1h2m5s"), (-3, "0s")],
)
def test_durations_read_as_go_and_kubectl_write_them(seconds, written):
    assert duration(seconds) == written


def test_every_progress_line_goes_to_the_log_the_listeners_and_the_result():
    fake = FakeTime()
    logged: list[str] = []
    ctx = Context(
        session=None, cluster="demo", check_mode=False, clock=fake.clock, sleep=fake.sleep, reporter=logged.append
    )  # type: ignore[arg-type]
    heard: list[str] = []
    fake.now += 7
    with listening(heard.append):
        ctx.progress("waiting for something: 30s waited, up to 9m23s left")
    ctx.progress("after the run: nobody listens")
    assert heard == ["waiting for something: 30s waited, up to 9m23s left"]
    assert (
        logged
        == ctx.progress_log
        == [
            "7s: waiting for something: 30s waited, up to 9m23s left",
            "7s: after the run: nobody listens",
        ]
    )
    assert PROGRESS_LISTENERS == []


@contextlib.contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    PROGRESS_LISTENERS.append(listener)
    try:
        yield
    finally:
        PROGRESS_LISTENERS.remove(listener)


def test_a_failed_state_ends_the_wait_at_once_with_its_reason():
    fake = FakeTime()
    ctx = context(fake)
    states = iter(["pending", "failed"])
    with pytest.raises(ReconcileError, match="^NAT gateway nat-1: it failed$"):
        wait_until(
            lambda: next(states),
            lambda s: s == "available",
            ctx,
            "NAT gateway nat-1",
            failed=lambda s: f"it {s}" if s == "failed" else None,
        )
    assert fake.slept == [0.5]


def test_the_run_budget_bounds_every_wait_and_the_last_pause():
    fake = FakeTime()
    ctx = context(fake, wait_timeout=9)
    with pytest.raises(ReconcileError, match="^timed out after 9s waiting for nodes to join$"):
        wait_until(lambda: None, lambda _x: False, ctx, "nodes to join")
    # 0.5 + 0.55 + ... + 1.18 = 7.97 s, then only the 1.03 s left of the budget (never past it), not 1.3 s
    assert len(fake.slept) == 11 and sum(fake.slept[:10]) == pytest.approx(7.97, abs=0.01)
    assert fake.slept[-1] == pytest.approx(9 - sum(fake.slept[:10]))
    assert ctx.remaining() == 0


def test_a_wait_with_a_limit_of_its_own_stops_at_it_and_never_sleeps_past_it():
    fake = FakeTime()
    ctx = context(fake)
    waiting = ctx.wait_for("node n1 to drain", limit=3.0, backoff=Backoff(first=1.0, cap=5.0, factor=2.0))
    rounds = 0
    while not waiting.over_limit():
        rounds += 1
        waiting.pause()
    assert fake.slept == [1.0, 2.0]  # 1 + 2 = 3 s: the limit, not 1 + 2 + 4
    assert rounds == 2 and waiting.elapsed == 3.0
    assert waiting.budget_left(596.0) and not waiting.budget_left(597.0)


def test_no_limit_is_never_over():
    fake = FakeTime()
    waiting = context(fake).wait_for("anything")
    fake.now += 10_000
    assert not waiting.over_limit()


def test_operations_retries_sleep_on_the_runs_clock():
    """A call retried on a condition (IAM's eventual consistency) pauses through the context's sleep too."""
    fake = FakeTime()
    ctx = context(fake)
    assert ctx.ops.sleep == fake.sleep
