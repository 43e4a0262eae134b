# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kernel/waiting.py: every wait of a run, on a fake clock (no test here sleeps)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from fake_time import FakeTime

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.waiting import Backoff, wait_until


def context(fake: FakeTime, wait_timeout: int = 600) -> Context:
    return Context(
        session=None, cluster="demo", check_mode=False, wait_timeout=wait_timeout, clock=fake.clock, sleep=fake.sleep
    )  # type: ignore[arg-type]


def test_backoff_starts_short_and_grows_to_its_cap():
    assert list(itertools.islice(Backoff().pauses(), 7)) == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert list(itertools.islice(Backoff(first=2.0, cap=15.0, factor=1.7).pauses(), 6)) == [
        2.0,
        3.4,
        pytest.approx(5.78),
        pytest.approx(9.826),
        15.0,
        15.0,
    ]
    assert list(itertools.islice(Backoff(first=9, cap=3).pauses(), 2)) == [3, 3]


def test_wait_until_polls_until_done_and_says_where_it_stands_every_30_seconds():
    fake = FakeTime()
    ctx = context(fake)
    answers: list[Any] = ["pending"] * 12 + ["available"]
    polls = iter(answers)
    got = wait_until(lambda: next(polls), lambda state: state == "available", ctx, "vpc-1 to be available")
    assert got == "available"
    assert fake.slept == [0.5, 1.0, 2.0, 4.0] + [5.0] * 8  # 12 pauses for 13 polls
    assert fake.now - 1000.0 == pytest.approx(47.5)
    assert [line.split(": ", 1)[1] for line in ctx.progress_log] == [
        "waiting for vpc-1 to be available: 32s so far, 567s of wait_timeout left"
    ]


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
    ctx = context(fake, wait_timeout=8)
    with pytest.raises(ReconcileError, match="^timed out after 8s waiting for nodes to join$"):
        wait_until(lambda: None, lambda _x: False, ctx, "nodes to join")
    # 0.5 + 1 + 2 + 4 = 7.5, then only the 0.5 s left of the budget (never past it)
    assert fake.slept == [0.5, 1.0, 2.0, 4.0, 0.5]
    assert ctx.remaining() == 0


def test_a_wait_with_a_limit_of_its_own_stops_at_it_and_never_sleeps_past_it():
    fake = FakeTime()
    ctx = context(fake)
    waiting = ctx.wait_for("node n1 to drain", limit=3.0, backoff=Backoff(first=1.0, cap=5.0))
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
