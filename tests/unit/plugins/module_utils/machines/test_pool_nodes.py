"""A pool's wait without the Kubernetes API (machines/pool_nodes.py): the AWS side of it, on a fake clock.

The instance describe is replaced by the instances a poll would find (a pool's instances by tag are read by
``pool_instances_by_tag``, which tests/integration/test_asg.py and test_fleet.py run against moto).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_time import FakeTime

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import pool_nodes


def context(fake: FakeTime, wait_timeout: int = 600, wait: bool = True) -> Context:
    return fake.context(wait_timeout, wait=wait)


def instances(*states: str) -> list[dict]:
    return [{"InstanceId": f"i-{n}", "State": {"Name": state}} for n, state in enumerate(states)]


@pytest.fixture
def polls(monkeypatch):
    """The instances each poll finds, in order; the calls made."""
    seen: list[tuple[str, str]] = []

    def install(*answers: list[dict]) -> list[tuple[str, str]]:
        found: Iterator[list[dict]] = iter(answers)

        def by_tag(_ctx, tag, pool):
            seen.append((tag, pool))
            return next(found)

        monkeypatch.setattr(pool_nodes, "pool_instances_by_tag", by_tag)
        return seen

    return install


def test_without_the_api_the_run_waits_for_the_pools_instances_to_run(polls):
    fake = FakeTime()
    ctx = context(fake)
    seen = polls(
        instances(), instances("pending", "pending"), instances("running", "pending"), instances("running", "running")
    )
    pool_nodes.wait_for_pool_nodes(ctx, None, "the API does not answer", "mp-0", "aws:autoscaling:groupName", 2)
    assert seen == [("aws:autoscaling:groupName", "mp-0")] * 4
    assert ctx.warnings == [
        "pool mp-0: its Nodes were not awaited (the API does not answer); its instances were, until running"
    ]


def test_a_pool_whose_instances_do_not_all_run_in_time_is_a_warning_not_a_failure(polls):
    fake = FakeTime()
    ctx = context(fake, wait_timeout=3)
    polls(*[instances("running", "pending")] * 20)
    pool_nodes.wait_for_pool_nodes(ctx, None, "", "fp-0", "sigs.k8s.io/cluster-api-provider-aws/pool", 2)
    assert ctx.warnings == ["pool fp-0: timed out after 3s waiting for 2 running instances of pool fp-0"]


def test_no_wait_asked_or_nothing_to_wait_for_reads_nothing(polls):
    fake = FakeTime()
    seen = polls()
    pool_nodes.wait_for_pool_nodes(context(fake, wait=False), None, "", "mp-0", "t", 2)
    pool_nodes.wait_for_pool_nodes(context(fake), None, "", "mp-0", "t", 0)
    assert seen == [] and fake.slept == []
