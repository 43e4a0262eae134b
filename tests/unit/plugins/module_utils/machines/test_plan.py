# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The machine group's pure decisions (plan.py): names, status, placement, deletion order, rollout steps."""

from __future__ import annotations

import datetime
import random

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import plan
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import BOOTSTRAP_TAG, BootstrapRef
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.plan import (
    Machine,
    Step,
    check_placement_inputs,
    choose_zone,
    default_failure_domains,
    instance_ready,
    machine_name,
    order_for_deletion,
    plan_step,
    subnet_for_zone,
)


def m(name: str, zone: str = "a", state: str = "running", launched: str = "", updated: bool = True) -> Machine:
    return Machine(id=f"i-{name}", name=name, zone=zone, state=state, launch_time=launched or name, updated=updated)


# names -------------------------------------------------------------------------------------------------------------
def test_machine_names_are_capi_style_and_avoid_names_in_use():
    first = machine_name("demo", "md-0", [], random.Random(1))
    assert first.startswith("demo-md-0-") and len(first) == len("demo-md-0-") + 5
    assert all(c.isdigit() or c.islower() for c in first[-5:])
    # The same random source gives the same name, unless that name is taken.
    assert machine_name("demo", "md-0", [], random.Random(1)) == first
    assert machine_name("demo", "md-0", [first], random.Random(1)) != first


def test_a_machine_knows_where_its_bootstrap_entries_are():
    ref = BootstrapRef("secrets-manager", "aws.cluster.x-k8s.io/u", 2)
    assert m("1").bootstrap_ref is None
    assert Machine("i-1", "a", "a", "running", tags={BOOTSTRAP_TAG: ref.tag_value()}).bootstrap_ref == ref
    assert Machine("i-1", "a", "a", "running", tags={BOOTSTRAP_TAG: "not-a-ref"}).bootstrap_ref is None


# status ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "state, created, expected",
    [
        ("running", False, (True, "")),
        ("pending", True, (False, "InstanceProvisionStarted")),
        ("pending", False, (False, "InstanceNotReady")),
        ("stopped", False, (False, "InstanceStopped")),
        ("stopping", False, (False, "InstanceStopped")),
        ("shutting-down", False, (False, "InstanceTerminated")),
        ("terminated", False, (False, "InstanceTerminated")),
    ],
)
def test_instance_ready_uses_capas_reasons(state, created, expected):
    ready = instance_ready(state, created)
    assert (ready["status"], ready["reason"]) == expected


# placement -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "machines, domains, expected",
    [
        ([], ["b", "a", "c"], "a"),  # ties: alphabetical
        ([m("1", "a")], ["a", "b"], "b"),
        ([m("1", "a"), m("2", "b")], ["a", "b", "c"], "c"),
        ([m("1", "a"), m("2", "a"), m("3", "b")], ["a", "b"], "b"),
        ([m("1", "a", "shutting-down")], ["a", "b"], "a"),  # leaving machines do not count
        # rollout: fewest up-to-date machines first, so replacements stay spread
        ([m("1", "a", updated=False), m("2", "b", updated=False), m("3", "a")], ["a", "b"], "b"),
        ([m("1", "a", updated=False), m("2", "b"), m("3", "b", updated=False)], ["a", "b"], "a"),
    ],
)
def test_new_machines_go_to_the_zone_with_fewest(machines, domains, expected):
    assert choose_zone(machines, domains) == expected


SUBNETS = [
    {"id": "subnet-pub-a", "availability_zone": "a", "is_public": True},
    {"id": "subnet-priv-a", "availability_zone": "a", "is_public": False, "cidr_block": "10.0.64.0/18"},
    {"id": "subnet-priv-a2", "availability_zone": "a", "is_public": False},
    {"id": "subnet-priv-b", "availability_zone": "b"},
    {"id": "subnet-pub-c", "availability_zone": "c", "is_public": True},
]


@pytest.mark.parametrize(
    "zone, public, expected",
    [("a", False, "subnet-priv-a"), ("a", True, "subnet-pub-a"), ("b", False, "subnet-priv-b"), ("b", True, None)],
)
def test_subnet_for_zone_takes_the_first_of_the_wanted_kind(zone, public, expected):
    found = subnet_for_zone(SUBNETS, zone, public)
    assert (found or {}).get("id") == expected


def test_default_failure_domains():
    assert default_failure_domains(SUBNETS, public=False) == ["a", "b"]
    assert default_failure_domains(SUBNETS, public=True) == ["a", "c"]
    assert default_failure_domains(list(reversed(SUBNETS)), public=True, first_only=True) == ["c"]


# deletion order --------------------------------------------------------------------------------------------------
AGED = [m("m1", launched="2024-01-01"), m("m2", launched="2024-03-01"), m("m3", launched="2024-02-01")]


def test_oldest_and_newest_policies_order_by_launch_time():
    assert [x.name for x in order_for_deletion(AGED, "Oldest", random.Random(0))] == ["m1", "m3", "m2"]
    assert [x.name for x in order_for_deletion(AGED, "Newest", random.Random(0))] == ["m2", "m3", "m1"]


def test_random_policy_is_reproducible_with_the_same_source_and_a_permutation():
    first = [x.name for x in order_for_deletion(AGED, "Random", random.Random(42))]
    assert first == [x.name for x in order_for_deletion(AGED, "Random", random.Random(42))]
    assert sorted(first) == ["m1", "m2", "m3"]
    orders = {tuple(x.name for x in order_for_deletion(AGED, "Random", random.Random(s))) for s in range(30)}
    assert len(orders) > 1  # really random across seeds


@pytest.mark.parametrize("policy", ["Random", "Newest", "Oldest"])
def test_unavailable_machines_go_first_whatever_the_policy(policy):
    machines = AGED + [m("stopped", state="stopped", launched="2024-02-15")]
    assert order_for_deletion(machines, policy, random.Random(3))[0].name == "stopped"


def test_control_planes_leave_the_most_crowded_zone_first():
    machines = [m("a1", "a", launched="1"), m("b1", "b", launched="2"), m("b2", "b", launched="3")]
    ordered = order_for_deletion(machines, "Oldest", random.Random(0), balance_zones=True)
    assert [x.name for x in ordered] == ["b1", "a1", "b2"]


# rollout ---------------------------------------------------------------------------------------------------------
def simulate(replicas, surge, unavailable, machines, one_at_a_time=False):
    """Run plan_step to convergence, new machines becoming running between steps; record the bounds."""
    rng = random.Random(0)
    current = list(machines)
    history = []
    counter = 0
    for _round in range(100):
        for x in current:
            if x.state == "pending":
                x.state = "running"
        step = plan_step(current, replicas, surge, unavailable, "Oldest", rng, one_at_a_time)
        if step.empty:
            return current, history
        gone = {id(x) for x in step.delete}
        current = [x for x in current if id(x) not in gone]
        available = sum(x.available for x in current)
        for _launch in range(step.create):
            counter += 1
            current.append(m(f"new{counter}", choose_zone(current, ["a", "b", "c"]), "pending", f"z{counter}"))
        history.append((step.create, len(step.delete), len(current), available))
    raise AssertionError("no convergence")


def outdated(count):
    return [m(f"old{i}", "abc"[i % 3], launched=f"0{i}", updated=False) for i in range(count)]


@pytest.mark.parametrize(
    "replicas, surge, unavailable",
    [(2, 1, 0), (3, 1, 0), (3, 0, 1), (3, 2, 0), (5, 1, 1), (4, 0, 2), (1, 1, 0), (6, 3, 3), (3, 5, 0)],
)
def test_rolling_replacement_respects_surge_and_unavailable(replicas, surge, unavailable):
    final, history = simulate(replicas, surge, unavailable, outdated(replicas))
    assert len(final) == replicas and all(x.updated and x.name.startswith("new") for x in final)
    for _create, _delete, total, available in history:
        assert total <= replicas + surge, history
        assert available >= replicas - unavailable, history


def test_a_surge_rollout_launches_before_it_removes():
    history = simulate(2, 1, 0, outdated(2))[1]
    assert history[0][:2] == (1, 0)  # launch one, remove nothing while it is not running
    assert history[1][1] == 1  # then an outdated one goes


def test_an_unavailable_rollout_removes_before_it_launches():
    # The removal and its replacement are one step (a MachineSet counts no deleting machine); the caller asks for
    # the termination before the launch.
    history = simulate(3, 0, 1, outdated(3))[1]
    assert history[0][:2] == (1, 1)


def test_a_removal_frees_its_surge_for_a_launch_in_the_same_step():
    new = [m("new1", "a", launched="9")]
    step = plan_step([*outdated(2), *new], 2, 1, 0, "Oldest", random.Random(0))
    assert [x.name for x in step.delete] == ["old0"] and step.create == 1


def test_a_control_plane_step_removes_alone():
    new = [m("new1", "a", launched="9")]
    step = plan_step([*outdated(3), *new], 3, 1, 0, "Oldest", random.Random(0), one_at_a_time=True)
    assert len(step.delete) == 1 and step.create == 0


def test_rollout_ends_spread_over_zones():
    final = simulate(3, 1, 0, outdated(3))[0]
    assert sorted(x.zone for x in final) == ["a", "b", "c"]


def test_control_plane_replaces_one_at_a_time():
    history = simulate(3, 1, 0, outdated(3), one_at_a_time=True)[1]
    assert all(entry[0] <= 1 for entry in history)
    assert all(entry[2] <= 4 for entry in history)


def test_control_plane_scale_up_launches_one_at_a_time():
    step = plan_step([], 3, 1, 0, "Oldest", random.Random(0), one_at_a_time=True)
    assert step.create == 1
    step = plan_step([m("1", state="pending")], 3, 1, 0, "Oldest", random.Random(0), one_at_a_time=True)
    assert step.create == 0  # waits for the first to run


@pytest.mark.parametrize(
    "machines, replicas, expected_create, expected_delete",
    [
        ([], 2, 2, []),
        ([m("a"), m("b")], 5, 3, []),  # scale-up is not bounded by the surge
        ([m("a", launched="1"), m("b", launched="2"), m("c", launched="3")], 1, 0, ["a", "b"]),  # Oldest
        ([m("a"), m("b")], 2, 0, []),
        ([m("a"), m("b", state="shutting-down")], 2, 1, []),  # leaving machines do not count
        ([m("a"), m("b")], 0, 0, ["a", "b"]),
    ],
)
def test_scaling_without_outdated_machines(machines, replicas, expected_create, expected_delete):
    step = plan_step(machines, replicas, 1, 0, "Oldest", random.Random(0))
    assert step.create == expected_create
    assert [x.name for x in step.delete] == expected_delete


def test_stopped_outdated_machines_go_at_once():
    machines = [m("old1", state="stopped", updated=False), m("old2", updated=False)]
    step = plan_step(machines, 2, 1, 0, "Oldest", random.Random(0))
    assert [x.name for x in step.delete] == ["old1"]
    assert step.create == 2  # old2 and the two new ones: replicas + max_surge pending or running


def test_scale_in_during_a_rollout_converges():
    final, history = simulate(1, 1, 0, outdated(3))
    assert len(final) == 1 and final[0].updated
    assert all(entry[3] >= 1 for entry in history)


def test_step_empty():
    assert Step().empty and not Step(create=1).empty


# inputs ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "subnets, groups, field",
    [
        ([{"id": "subnet-0000000000000000a"}], [], "subnets[0]"),
        ([{"availability_zone": "us-east-1a"}], [], "subnets[0]"),
        ([{"id": "subnet-x", "availability_zone": "us-east-1a"}], [], "subnets[0].id"),
        ([], ["group"], "security_group_ids[0]"),
    ],
)
def test_placement_inputs_name_the_field(subnets, groups, field):
    with pytest.raises(SpecError) as caught:
        check_placement_inputs(subnets, groups)
    assert caught.value.field == field


def test_placement_inputs_take_check_mode_placeholders():
    check_placement_inputs(
        [{"id": "planned:subnet:demo-subnet-private-us-east-1a", "availability_zone": "us-east-1a"}],
        ["planned:security-group:demo-node"],
    )


# KCP's rolloutBefore.certificatesExpiryDays ---------------------------------------------------------------------------
CERT_NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    "expiry, days, due",
    [
        ("2026-12-20T00:00:00Z", 30, True),  # 17 days left, window 30: rolled
        ("2027-06-01T00:00:00Z", 30, False),  # half a year left: kept
        ("2026-12-20T00:00:00Z", None, False),  # the option unset: never rolled
        (None, 30, False),  # not read yet: not rolled (read once the machine is available)
        ("garbage", 30, False),  # a tag someone edited by hand says nothing reliable
        ("2026-12-01T00:00:00Z", 7, True),  # expired already
    ],
)
def test_certificates_due(expiry, days, due):
    reason = plan.certificates_due(expiry, days, CERT_NOW)
    assert bool(reason) is due
    if due:
        assert expiry in reason and f"({days})" in reason


# joining ---------------------------------------------------------------------------------------------------------
class _Joined:
    """A machine's readiness as the workload cluster says it (``lifecycle.Readiness``'s shape)."""

    def __init__(self, available: bool, node_ready: str | None = None) -> None:
        self.available = available
        self.reason = "" if available else "no Node yet"
        self.node = None
        self.node_ready = node_ready

    def as_dict(self) -> dict[str, object]:
        return {"available": self.available}


NOW = datetime.datetime(2026, 12, 4, 12, 0, tzinfo=datetime.timezone.utc)


def joiner(name: str, seconds_ago: float, available: bool = False, created: bool = False, **fields) -> Machine:
    launched = (NOW - datetime.timedelta(seconds=seconds_ago)).isoformat()
    machine = Machine(id=f"i-{name}", name=name, zone="a", launch_time=launched, created=created, **fields)
    machine.readiness = _Joined(available)
    return machine


def awaited(machines, control_plane=False, timeout=600):
    found = plan.awaited_joins(machines, control_plane=control_plane, node_startup_timeout=timeout, now=NOW)
    return [machine.name for machine in found]


def test_a_worker_group_waits_for_machines_an_earlier_run_launched_while_they_may_still_join():
    # The cluster role's first pass launched these without waiting (wait: false); the next run waits for the ones
    # inside their startup window, as for the machines it launched itself.
    machines = [
        joiner("launched-now", 0, created=True, state="running"),
        joiner("earlier-young", 30, state="running"),
        joiner("earlier-old", 900, state="running"),  # past node_startup_timeout: MHC's to judge, not waited for
        joiner("earlier-joined", 30, available=True, state="running"),
        joiner("earlier-pending", 30, state="pending"),  # waited for until running first (_wait_pending)
        joiner("earlier-leaving", 30, state="shutting-down"),
        joiner("earlier-unhealthy", 30, state="running", unhealthy="instance status check impaired"),
    ]
    assert awaited(machines) == ["launched-now", "earlier-young"]
    # A shorter startup window leaves the earlier one out; with the check off the default window (600 s) applies.
    assert awaited(machines, timeout=20) == ["launched-now"]
    assert awaited(machines, timeout=0) == ["launched-now", "earlier-young"]


def test_a_worker_the_health_check_judged_or_whose_kubelet_went_silent_is_not_waited_for():
    # Unhealthy with its remediation held back (max_unhealthy): MachineHealthCheck's, not the run's. A Node whose
    # Ready is Unknown lost its kubelet (a joining Node reports False): waiting would only spend the run's budget.
    judged = joiner("judged", 30, state="running", health_reason="Node Ready=Unknown for 3s (timeout 2s)")
    silent = joiner("silent", 30, state="running")
    silent.readiness = _Joined(False, node_ready="Unknown")
    joining = joiner("joining", 30, state="running")
    joining.readiness = _Joined(False, node_ready="False")
    assert awaited([judged, silent, joining]) == ["joining"]
    # What this run launched is waited for whatever it reports (the run's own machines must come up).
    silent.created = True
    assert awaited([judged, silent, joining]) == ["silent", "joining"]


def test_a_control_plane_waits_only_for_the_machines_it_launched():
    # A control-plane machine of an earlier run that is not available is KubeadmControlPlane's preflight's to name
    # (the next step is refused), never silently waited for.
    machines = [joiner("cp-now", 0, created=True, state="running"), joiner("cp-earlier", 30, state="running")]
    assert awaited(machines, control_plane=True) == ["cp-now"]


def test_a_machine_without_a_launch_time_is_not_waited_for_unless_this_run_launched_it():
    unknown = Machine(id="i-x", name="x", zone="a", state="running", launch_time="")
    unknown.readiness = _Joined(False)
    assert awaited([unknown]) == []
    unknown.created = True
    assert awaited([unknown]) == ["x"]
