# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""machines/instance.py's write half (``GroupRun``): scale-out, rolling replacement, scale-in order, check mode.

capa_instance's tier runs as the module runs it (its argument spec, parse, validate, reconcile with one
``Context``) against in-process moto, so every request is validated by botocore against AWS's model and answered
by moto's EC2; the requests the run makes are recorded at botocore's parameter boundary, in order. No Kubernetes
API answers here (the machines' readiness is the instance state: ``kubernetes_api``'s ``auto`` fallback); the
Kubernetes side of a rollout (nodes joining, drains, etcd) is ``test_node_lifecycle.py`` at the workload boundary
and ``tests/integration/test_machine_lifecycle.py`` end to end. Each run takes about a second.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest
from moto import mock_aws
from test_golden_machines import CLUSTER, CREDENTIALS, REGION, Account, machine_args, run_tier

MUTATING = ("ec2:RunInstances", "ec2:TerminateInstances", "ec2:StopInstances", "ec2:CreateTags")


class Run:
    """One capa_instance run: its result, the plan it reported, and the EC2 writes that reached the wire."""

    def __init__(self, args: dict[str, Any], check_mode: bool = False) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.ctx, self.result = run_tier("capa_instance", args, record=self._record, check_mode=check_mode)

    def _record(self, call: str, params: dict[str, Any]) -> None:
        if call in MUTATING:
            self.sent.append((call, params))

    @property
    def calls(self) -> list[str]:
        return [call for call, _params in self.sent if call != "ec2:CreateTags"]

    @property
    def planned(self) -> list[str]:
        return [p.call for p in self.ctx.ops.plan if p.call in MUTATING]

    def terminated(self) -> list[str]:
        return [i for call, params in self.sent if call == "ec2:TerminateInstances" for i in params["InstanceIds"]]


@pytest.fixture
def account(tmp_path: Path) -> Iterator[Account]:
    with mock_aws(), Account(tmp_path) as account:
        yield account


def group(account: Account, **extra: Any) -> dict[str, Any]:
    # three private subnets, one per zone
    return machine_args(account, name="md-0", **extra)


def live(account: Account) -> list[dict[str, Any]]:
    ec2 = boto3.client("ec2", region_name=REGION, **CREDENTIALS)
    return [
        i
        for r in ec2.describe_instances(Filters=[{"Name": "tag:Name", "Values": [f"{CLUSTER}-md-0-*"]}])["Reservations"]
        for i in r["Instances"]
        if i["State"]["Name"] not in ("terminated", "shutting-down")
    ]


def test_scale_out_spreads_over_the_failure_domains_and_a_second_run_sends_nothing(account):
    first = Run(group(account, replicas=3))
    assert first.calls == ["ec2:RunInstances"] * 3
    assert Counter(i["Placement"]["AvailabilityZone"] for i in live(account)) == {
        "us-east-1a": 1,
        "us-east-1b": 1,
        "us-east-1c": 1,
    }
    # every launch carries its tags and an idempotency token (no CreateTags afterwards)
    for _call, params in first.sent:
        assert params["ClientToken"] and params["TagSpecifications"]
    again = Run(group(account, replicas=3))
    assert again.sent == [] and again.ctx.ops.plan == []


def test_a_rollout_surges_one_machine_at_a_time_and_replaces_every_old_one(account):
    Run(group(account, replicas=3))
    old = {i["InstanceId"] for i in live(account)}
    rollout = Run(group(account, replicas=3, instance_type="t3.xlarge"))
    # max_surge 1, max_unavailable 0 (the defaults): a new machine first, then an old one goes - three times
    assert rollout.calls == ["ec2:RunInstances", "ec2:TerminateInstances"] * 3
    assert set(rollout.terminated()) == old
    now = live(account)
    assert len(now) == 3 and {i["InstanceType"] for i in now} == {"t3.xlarge"}
    assert Counter(i["Placement"]["AvailabilityZone"] for i in now) == {
        "us-east-1a": 1,
        "us-east-1b": 1,
        "us-east-1c": 1,
    }
    assert {m["instance_type"] for m in rollout.result["machines"]} == {"t3.xlarge"}


def test_max_surge_0_takes_one_machine_away_before_its_replacement_comes(account):
    Run(group(account, replicas=2))
    rollout = Run(group(account, replicas=2, instance_type="t3.xlarge", rollout={"max_surge": 0, "max_unavailable": 1}))
    assert rollout.calls == ["ec2:TerminateInstances", "ec2:RunInstances"] * 2
    assert {i["InstanceType"] for i in live(account)} == {"t3.xlarge"}


class Timeline(Run):
    """A Run that also records the DescribeInstances naming instances (launch and termination waits)."""

    def _record(self, call: str, params: dict[str, Any]) -> None:
        if call in MUTATING or (call == "ec2:DescribeInstances" and params.get("InstanceIds")):
            self.sent.append((call, params))


def test_a_worker_rollout_launches_the_replacement_before_it_waits_for_the_old_machine_to_go(account):
    """A MachineSet counts no deleting machine: once the old machine's termination is asked for, its replacement
    is launched, and only then does the run wait for the old instance to be terminated - so the pending and running
    instances stay within replicas + max_surge while the termination and the boot overlap."""
    Run(group(account, replicas=2))
    rollout = Timeline(
        group(account, replicas=2, instance_type="t3.xlarge", rollout={"max_surge": 0, "max_unavailable": 1})
    )
    sent = [(call, params) for call, params in rollout.sent if call != "ec2:CreateTags"]
    for index, (call, params) in enumerate(sent):
        if call != "ec2:TerminateInstances":
            continue
        (old,) = params["InstanceIds"]
        assert sent[index + 1][0] == "ec2:RunInstances"
        first_wait = next(
            i for i, (c, p) in enumerate(sent) if c == "ec2:DescribeInstances" and old in p["InstanceIds"]
        )
        assert first_wait > index + 1
    assert {i["InstanceType"] for i in live(account)} == {"t3.xlarge"}


def test_scale_in_removes_a_machine_that_is_not_available_first_whatever_the_policy(account):
    Run(group(account, replicas=3))
    ec2 = boto3.client("ec2", region_name=REGION, **CREDENTIALS)
    stopped = sorted(i["InstanceId"] for i in live(account))[1]
    ec2.stop_instances(InstanceIds=[stopped])
    scale_in = Run(group(account, replicas=2, rollout={"deletion_policy": "Newest"}))
    assert scale_in.calls == ["ec2:TerminateInstances"] and scale_in.terminated() == [stopped]
    assert len(live(account)) == 2


def test_check_mode_plans_the_rollout_call_for_call_and_sends_nothing(account):
    Run(group(account, replicas=2))
    before = sorted(i["InstanceId"] for i in live(account))
    planned = Run(group(account, replicas=2, instance_type="t3.xlarge"), check_mode=True)
    assert planned.sent == []
    assert sorted(i["InstanceId"] for i in live(account)) == before
    applied = Run(group(account, replicas=2, instance_type="t3.xlarge"))
    assert planned.planned == applied.planned == ["ec2:RunInstances", "ec2:TerminateInstances"] * 2
