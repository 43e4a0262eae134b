"""Health from the Node (Cluster API's MachineHealthCheck targets): conditions held past their timeouts, no Node after
node_startup_timeout, the short-circuit counting machines still starting, unhealthy_range, and the options' rules
(the cluster spec's use of them: tests/unit/plugins/module_utils/cluster/test_spec.py, BAD_MORE).

The same verdicts drive a real run through ``GroupWorkload.node_health``; tests/integration/test_machine_health.py
shows them on the workload-cluster simulator (a kubelet that stops, a machine that never registers).
"""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.lifecycle import NodeHealth, node_health
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.plan import (
    HealthCheck,
    Machine,
    UnhealthyCondition,
    parse_unhealthy_range,
    plan_remediation,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.observe import NodeView

NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)
READY_UNKNOWN_300 = UnhealthyCondition("Ready", "Unknown", 300)
READY_FALSE_300 = UnhealthyCondition("Ready", "False", 300)


def node(ready: str = "True", seconds_ago: int = 1000, **others: tuple[str, int]) -> NodeView:
    """A Node as the API returns it: Ready (status, since seconds ago) plus other conditions."""
    conditions = [("Ready", ready, seconds_ago), *((kind, status, ago) for kind, (status, ago) in others.items())]
    return NodeView.from_api(
        {
            "metadata": {"name": "ip-10-0-1-5.ec2.internal"},
            "spec": {"providerID": "aws:///us-east-1a/i-a"},
            "status": {
                "conditions": [
                    {
                        "type": kind,
                        "status": status,
                        "lastTransitionTime": (NOW - datetime.timedelta(seconds=ago))
                        .isoformat()
                        .replace("+00:00", "Z"),
                    }
                    for kind, status, ago in conditions
                ]
            },
        }
    )


def judge(found: NodeView | None, check: HealthCheck, launched_ago: int = 60) -> NodeHealth:
    launched = NOW - datetime.timedelta(seconds=launched_ago)
    return node_health(found, node_name="ip-10-0-1-5.ec2.internal", launched=launched, check=check, now=NOW)


CHECK = HealthCheck(unhealthy_node_conditions=(READY_UNKNOWN_300, READY_FALSE_300))


@pytest.mark.parametrize(
    "found, reason",
    [
        (node("True"), ""),
        (node("Unknown", 299), ""),  # not yet held for its timeout
        (node("Unknown", 300), "Node ip-10-0-1-5.ec2.internal Ready=Unknown for 300s (timeout 300s)"),
        (node("False", 4000), "Node ip-10-0-1-5.ec2.internal Ready=False for 4000s (timeout 300s)"),
        (node("True", DiskPressure=("True", 9000)), ""),  # a condition nobody listed
    ],
)
def test_a_node_condition_held_past_its_timeout_makes_the_machine_unhealthy(found, reason):
    assert judge(found, CHECK) == NodeHealth(reason)


def test_any_listed_condition_is_enough():
    check = HealthCheck(unhealthy_node_conditions=(READY_UNKNOWN_300, UnhealthyCondition("DiskPressure", "True", 60)))
    verdict = judge(node("True", DiskPressure=("True", 61)), check)
    assert verdict.reason == "Node ip-10-0-1-5.ec2.internal DiskPressure=True for 61s (timeout 60s)"


def test_without_conditions_listed_a_node_is_never_judged_by_them():
    assert judge(node("Unknown", 100_000), HealthCheck()) == NodeHealth()


@pytest.mark.parametrize(
    "launched_ago, timeout, verdict",
    [
        (599, 600, NodeHealth(starting=True)),
        (600, 600, NodeHealth("no Node ip-10-0-1-5.ec2.internal 600s after launch (node_startup_timeout 600s)")),
        (100_000, 0, NodeHealth(starting=True)),  # 0 turns the check off; the machine is still not healthy
    ],
)
def test_no_node_after_node_startup_timeout_is_unhealthy(launched_ago, timeout, verdict):
    assert judge(None, HealthCheck(node_startup_timeout=timeout), launched_ago) == verdict


def machines(*names: str) -> list[Machine]:
    return [Machine(id=f"i-{n}", name=n, zone="a", state="running", launch_time=n) for n in names]


def test_machines_still_starting_count_towards_max_unhealthy_as_capi_counts_them():
    group = machines("a", "b", "c", "d")
    # 1 unhealthy + 1 starting = 2 of 4 not healthy: 25% allows 1, so remediation is held back.
    held = plan_remediation(group, {"i-a": "x"}, HealthCheck(max_unhealthy="25%"), starting=["i-b"])
    assert not held.allowed and held.remediate == []
    assert held.reason == (
        "1 of 4 machines are unhealthy and 1 still starting, more than max_unhealthy 25% (1): remediation is held back"
    )
    # The starting machine is not itself remediated, and without it the one unhealthy machine is.
    assert plan_remediation(group, {"i-a": "x"}, HealthCheck(max_unhealthy="25%")).remediate == ["i-a"]


@pytest.mark.parametrize(
    "unhealthy, starting, allowed",
    [(["a"], [], True), (["a", "b", "c"], [], True), (["a", "b", "c"], ["d"], False), ([], [], True)],
)
def test_unhealthy_range_takes_precedence_over_max_unhealthy(unhealthy, starting, allowed):
    check = HealthCheck(max_unhealthy="0", unhealthy_range="[1-3]")
    result = plan_remediation(
        machines("a", "b", "c", "d", "e"),
        {f"i-{n}": "x" for n in unhealthy},
        check,
        starting=[f"i-{n}" for n in starting],
    )
    assert result.allowed is allowed
    assert result.remediate == ([f"i-{n}" for n in unhealthy] if allowed else [])
    if not allowed:
        assert "outside unhealthy_range [1-3]" in result.reason


@pytest.mark.parametrize("value, parsed", [("[1-3]", (1, 3)), (" [0-0] ", (0, 0)), ("[2-10]", (2, 10))])
def test_unhealthy_range_parses(value, parsed):
    assert parse_unhealthy_range(value) == parsed


@pytest.mark.parametrize("value", ["1-3", "[3-1]", "[a-b]", "[-1-2]", "[1-2-3]", "[]"])
def test_a_bad_unhealthy_range_is_refused(value):
    with pytest.raises(ValueError):
        parse_unhealthy_range(value)


@pytest.mark.parametrize(
    "check, field",
    [
        (HealthCheck(unhealthy_range="[3-1]"), "unhealthy_range"),
        (HealthCheck(node_startup_timeout=-1), "node_startup_timeout"),
        (
            HealthCheck(unhealthy_node_conditions=(UnhealthyCondition("Ready", "False", -5),)),
            "unhealthy_node_conditions[0].timeout",
        ),
        (
            HealthCheck(unhealthy_node_conditions=(UnhealthyCondition("", "False", 5),)),
            "unhealthy_node_conditions[0].type",
        ),
        (HealthCheck(max_unhealthy="101%"), "max_unhealthy"),
    ],
)
def test_the_checks_rules_name_the_field(check, field):
    with pytest.raises(SpecError) as e:
        check.validate()
    assert e.value.field == field
    with pytest.raises(SpecError) as e:
        check.validate("capa_cluster.machine_deployments[0]")
    assert e.value.field == f"capa_cluster.machine_deployments[0].{field}"
