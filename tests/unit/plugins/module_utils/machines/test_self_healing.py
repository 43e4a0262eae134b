# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Self-healing machine groups: health reasons, the max_unhealthy guard (CAPI MachineHealthCheck), the control
plane's quorum rule, and how a remediated machine flows through the rollout step.

moto's DescribeInstanceStatus always answers ``ok`` for a running instance, so the impaired path runs here
against botocore's Stubber (``observe_health``).
"""

from __future__ import annotations

import random

import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import validated
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.instance import (
    GroupSpec,
    group_argument_spec,
    observe_health,
    validate,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.plan import (
    HealthCheck,
    Machine,
    health_reason,
    max_unhealthy_count,
    parse_max_unhealthy,
    plan_remediation,
    plan_step,
)


def m(name: str, state: str = "running", zone: str = "a") -> Machine:
    return Machine(id=f"i-{name}", name=name, zone=zone, state=state, launch_time=name)


IMPAIRED = {"Status": "impaired"}
OK = {"Status": "ok"}


@pytest.mark.parametrize(
    "state, status, reason",
    [
        ("running", None, ""),
        ("running", {"InstanceStatus": OK, "SystemStatus": OK}, ""),
        ("running", {"InstanceStatus": {"Status": "initializing"}, "SystemStatus": OK}, ""),
        ("running", {"InstanceStatus": {"Status": "insufficient-data"}}, ""),
        ("running", {"InstanceStatus": IMPAIRED, "SystemStatus": OK}, "instance status check impaired"),
        ("running", {"InstanceStatus": OK, "SystemStatus": IMPAIRED}, "system status check impaired"),
        (
            "running",
            {"InstanceStatus": IMPAIRED, "SystemStatus": IMPAIRED},
            "system and instance status check impaired",
        ),
        ("stopped", None, "instance stopped"),
        ("stopping", None, "instance stopping"),
        ("pending", None, ""),
    ],
)
def test_health_reason(state, status, reason):
    assert health_reason(state, status) == reason


@pytest.mark.parametrize(
    "value, targets, count",
    [
        ("100%", 3, 3),
        ("40%", 5, 2),
        ("40%", 3, 1),  # CAPI scales a percentage rounding down
        ("0%", 3, 0),
        (1, 3, 1),
        ("2", 3, 2),
        (None, 4, 4),  # default 100%
    ],
)
def test_max_unhealthy_scales_like_capi(value, targets, count):
    assert max_unhealthy_count(value, targets) == count


@pytest.mark.parametrize("value", ["-1", "101%", "abc", "1.5", "%"])
def test_bad_max_unhealthy_is_refused(value):
    with pytest.raises(ValueError):
        parse_max_unhealthy(value)


@pytest.mark.parametrize(
    "unhealthy, max_unhealthy, control_plane, remediate, allowed",
    [
        (["b"], "100%", False, ["i-b"], True),
        (["b", "c"], "100%", False, ["i-b", "i-c"], True),
        (["b", "c"], 1, False, [], False),  # 2 of 3 > 1: held back
        (["b", "c"], "50%", False, [], False),  # 50% of 3 is 1
        (["b"], "34%", False, ["i-b"], True),
        (["b"], 0, False, [], False),
        (["b"], "100%", True, ["i-b"], True),  # 2 healthy of 2 members left: quorum
        (["b", "c"], "100%", True, [], False),  # 1 healthy of 2 members: no quorum
    ],
)
def test_plan_remediation(unhealthy, max_unhealthy, control_plane, remediate, allowed):
    machines = [m("a"), m("b"), m("c")]
    reasons = {f"i-{n}": "instance stopped" for n in unhealthy}
    check = HealthCheck(max_unhealthy=str(max_unhealthy))
    result = plan_remediation(machines, reasons, check, control_plane=control_plane)
    assert result.remediate == remediate and result.allowed is allowed
    assert set(result.unhealthy) == set(reasons)
    assert bool(result.reason) is (not allowed)
    view = result.as_dict({mm.id: mm.name for mm in machines}, check)
    assert view["allowed"] is allowed and [u["name"] for u in view["unhealthy"]] == sorted(unhealthy)


def test_control_plane_heals_one_machine_at_a_time_and_never_a_single_one():
    five = [m(n) for n in "abcde"]
    reasons = {"i-b": "instance stopped", "i-d": "instance stopped"}
    assert plan_remediation(five, reasons, HealthCheck(), control_plane=True).remediate == ["i-b"]
    alone = plan_remediation([m("a", state="stopped")], {"i-a": "instance stopped"}, HealthCheck(), control_plane=True)
    assert alone.remediate == [] and not alone.allowed and "quorum" in alone.reason


def test_held_back_reason_names_the_counts():
    result = plan_remediation([m("a"), m("b"), m("c")], {"i-b": "x", "i-c": "y"}, HealthCheck(max_unhealthy="1"))
    assert result.reason == "2 of 3 machines are unhealthy, more than max_unhealthy 1 (1): remediation is held back"


def test_leaving_machines_are_neither_targets_nor_unhealthy():
    machines = [m("a"), m("b", state="terminated"), m("c", state="stopped")]
    result = plan_remediation(machines, {"i-b": "x", "i-c": "instance stopped"}, HealthCheck(max_unhealthy="50%"))
    # 1 unhealthy of 2 targets, 50% of 2 is 1: allowed.
    assert result.remediate == ["i-c"] and list(result.unhealthy) == ["i-c"]


def test_a_remediated_machine_is_replaced_within_the_rollout_bounds():
    machines = [m("a"), m("b"), m("c")]
    machines[1].unhealthy, machines[1].updated = "system status check impaired", False
    step = plan_step(machines, 3, max_surge=1, max_unavailable=0, policy="Random", rng=random.Random(0))
    # The impaired machine is not available, so it goes at once; one new machine takes its place.
    assert step.create == 1 and [x.name for x in step.delete] == ["b"]


def test_a_remediated_control_plane_machine_goes_then_one_comes():
    machines = [m("a"), m("b", state="stopped"), m("c")]
    machines[1].unhealthy, machines[1].updated = "instance stopped", False
    step = plan_step(machines, 3, 1, 0, "Random", random.Random(0), one_at_a_time=True)
    # KubeadmControlPlane: one change per step - the unhealthy machine goes alone (its etcd member with it) ...
    assert step.create == 0 and [x.name for x in step.delete] == ["b"]
    # ... and its replacement comes in the next step.
    after = plan_step([machines[0], machines[2]], 3, 1, 0, "Random", random.Random(0), one_at_a_time=True)
    assert after.create == 1 and after.delete == []


def test_validation_refuses_a_bad_max_unhealthy_before_any_call():
    params = {
        "state": "present",
        "name": "md-0",
        "role": "node",
        "replicas": 0,
        "subnets": [],
        "max_unhealthy": "150%",
        "rollout": {"max_surge": 1, "max_unavailable": 0, "deletion_policy": "Random"},
    }
    module_spec = {"state": {"type": "str", "default": "present"}, **group_argument_spec()}
    with pytest.raises(SpecError) as e:
        validate(GroupSpec.from_params(validated(module_spec, params)), "us-east-1")
    assert e.value.field == "max_unhealthy"


# DescribeInstanceStatus (Stubber: moto never reports impaired) ----------------------------------------------------
def test_observe_health_reads_impaired_status_in_one_request_for_running_machines_only():
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    ctx = Context(session=session, cluster="heal", check_mode=False)
    machines = [m("a"), m("b"), m("c", state="stopped"), m("d", state="terminated"), m("e", state="pending")]
    with Stubber(session.client("ec2").raw) as stub:
        stub.add_response(
            "describe_instance_status",
            {
                "InstanceStatuses": [
                    {"InstanceId": "i-a", "InstanceStatus": OK, "SystemStatus": OK},
                    {"InstanceId": "i-b", "InstanceStatus": OK, "SystemStatus": IMPAIRED},
                ]
            },
            {"InstanceIds": ["i-a", "i-b"], "IncludeAllInstances": True},
        )
        reasons = observe_health(ctx, machines)
        stub.assert_no_pending_responses()
    assert reasons == {"i-b": "system status check impaired", "i-c": "instance stopped"}


def test_observe_health_makes_no_request_when_nothing_runs():
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    ctx = Context(session=session, cluster="heal", check_mode=False)
    with Stubber(session.client("ec2").raw):  # any request would fail: no response is queued
        assert observe_health(ctx, [m("a", state="stopped"), m("b", state="pending")]) == {"i-a": "instance stopped"}


def test_observe_health_asks_for_at_most_100_ids_per_request():
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    ctx = Context(session=session, cluster="heal", check_mode=False)
    machines = [m(f"{n:03d}") for n in range(150)]
    ids = [x.id for x in machines]
    with Stubber(session.client("ec2").raw) as stub:
        stub.add_response(
            "describe_instance_status",
            {"InstanceStatuses": []},
            {"InstanceIds": ids[:100], "IncludeAllInstances": True},
        )
        stub.add_response(
            "describe_instance_status",
            {"InstanceStatuses": [{"InstanceId": ids[120], "InstanceStatus": IMPAIRED}]},
            {"InstanceIds": ids[100:], "IncludeAllInstances": True},
        )
        assert observe_health(ctx, machines) == {ids[120]: "instance status check impaired"}
        stub.assert_no_pending_responses()


def test_observe_health_asks_for_the_clusters_running_instances_so_every_group_asks_the_same():
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    ctx = Context(session=session, cluster="heal", check_mode=False)
    cluster_running = ["i-a", "i-other-group", "i-z"]
    with Stubber(session.client("ec2").raw) as stub:
        stub.add_response(
            "describe_instance_status",
            {
                "InstanceStatuses": [
                    {"InstanceId": "i-a", "InstanceStatus": IMPAIRED, "SystemStatus": OK},
                    {"InstanceId": "i-other-group", "InstanceStatus": IMPAIRED, "SystemStatus": OK},
                ]
            },
            {"InstanceIds": cluster_running, "IncludeAllInstances": True},
        )
        # only the group's own machines are judged
        assert observe_health(ctx, [m("a")], cluster_running) == {"i-a": "instance status check impaired"}
        stub.assert_no_pending_responses()
    # a running machine the cluster's list does not hold (launched since): its group's own ids are asked
    with Stubber(session.client("ec2").raw) as stub:
        wanted = {"InstanceIds": ["i-new"], "IncludeAllInstances": True}
        stub.add_response("describe_instance_status", {"InstanceStatuses": []}, wanted)
        assert observe_health(ctx, [m("new")], cluster_running) == {}
        stub.assert_no_pending_responses()
