"""Unit tests of the critical path (bench/critical_path.py): longest paths, and each phase's graph."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import critical_path as cp  # noqa: E402
from aws_latencies import LATENCIES  # noqa: E402  (bench/critical_path.py put tools/ on the path)


def sec(resource: str, transition: str) -> float:
    return LATENCIES[(resource, transition)].seconds


def test_earliest_finish_is_the_longest_path_not_the_sum():
    steps = [cp.Step("a", 1), cp.Step("b", 5, ("a",)), cp.Step("c", 2, ("a",)), cp.Step("d", 1, ("b", "c"))]
    assert cp.earliest_finish(steps) == {"a": 1, "b": 6, "c": 3, "d": 7}
    assert cp.critical_path(steps) == (7, ["a", "b", "d"])


def test_independent_steps_overlap():
    assert cp.critical_path([cp.Step("x", 3), cp.Step("y", 4)]) == (4, ["y"])


@pytest.mark.parametrize(
    "steps, message",
    [
        ([cp.Step("a", 1, ("b",)), cp.Step("b", 1, ("a",))], "cycle"),
        ([cp.Step("a", 1, ("nowhere",))], "unknown"),
        ([cp.Step("a", 1), cp.Step("a", 2)], "unique"),
    ],
)
def test_bad_graphs_are_refused(steps, message):
    with pytest.raises(ValueError, match=message):
        cp.earliest_finish(steps)


def test_self_managed_create_waits_for_the_slower_of_nat_and_load_balancer_then_one_control_plane_at_a_time():
    first_machine_starts = max(sec("nat_gateway", "create"), sec("load_balancer", "create"))
    expected = (
        first_machine_starts
        + sec("instance", "launch")
        + sec("kubeadm", "first_control_plane")
        + 2 * (sec("instance", "launch") + sec("kubeadm", "join"))
    )
    total, chain = cp.critical_path(cp.self_managed_create())
    assert total == expected == 546
    assert chain[-1] == "control plane 3 joined"


def test_nat_gateways_of_all_zones_settle_in_parallel():
    finish = cp.earliest_finish(cp.self_managed_create(zones=3))
    assert {finish[f"nat gateway {zone}"] for zone in range(3)} == {sec("nat_gateway", "create")}


def test_a_slower_nat_gateway_would_lead_the_path():
    one_zone = [step for step in cp.self_managed_create(zones=1) if step.name != "load balancer"]
    one_zone.append(cp.Step("load balancer", 1, ("subnets",)))
    total, chain = cp.critical_path(one_zone)
    assert "nat gateway 0" in chain and total == 546 - sec("load_balancer", "create") + sec("nat_gateway", "create")


def test_workers_join_after_the_first_control_plane_not_after_every_replica():
    finish = cp.earliest_finish(cp.self_managed_create())
    assert finish["worker 1 joined"] == finish["control plane 2 joined"]
    assert finish["worker 2 joined"] < finish["control plane 3 joined"]


def test_upgrade_replaces_one_control_plane_machine_at_a_time():
    per_machine = sec("instance", "launch") + sec("kubeadm", "join") + sec("instance", "terminate")
    assert cp.critical_path(cp.self_managed_upgrade(control_plane=3, workers=0))[0] == 3 * per_machine
    assert cp.critical_path(cp.self_managed_upgrade(control_plane=5, workers=0))[0] == 5 * per_machine
    control_plane = cp.control_plane_steps(cp.self_managed_upgrade(control_plane=3, workers=2))
    assert cp.critical_path(control_plane)[0] == 3 * per_machine


def test_upgrade_workers_follow_the_control_plane_each_launched_once_the_one_before_is_ready():
    """After the control plane, a worker's replacement is launched as soon as the one before it is Ready (the old
    one's termination overlaps it); only the last old worker's termination is on the path."""
    join = sec("instance", "launch") + sec("kubeadm", "join")
    control_plane = 3 * (join + sec("instance", "terminate"))
    total, chain = cp.critical_path(cp.self_managed_upgrade(control_plane=3, workers=4))
    assert total == control_plane + 4 * join + sec("instance", "terminate")
    assert chain[-2:] == ["new worker 4 ready", "old worker 4 terminated"]


def test_upgrade_takes_measured_join_times_and_scales_the_table():
    with cp.scaled(0.5):
        steps = cp.self_managed_upgrade(control_plane=2, workers=1, joins=[10.0, 12.0], worker_joins=[8.0])
    terminate = sec("instance", "terminate") * 0.5
    assert cp.critical_path(steps)[0] == 10 + terminate + 12 + terminate + 8 + terminate


def test_self_managed_delete_releases_addresses_after_their_nat_gateways():
    total, chain = cp.critical_path(cp.self_managed_delete())
    assert total == sec("nat_gateway", "delete") + sec("eip", "release_after_nat")
    assert chain[:2] == ["nat gateway 2 deleted", "elastic ip 2 released"]


def test_eks_create_starts_the_control_plane_while_the_nat_gateway_settles():
    """The bench's demo-eks manages no add-on: its path ends with the node group."""
    finish = cp.earliest_finish(cp.eks_create())
    assert finish["control plane"] == sec("eks_cluster", "create")
    expected = sec("eks_cluster", "create") + sec("eks_nodegroup", "create")
    assert cp.critical_path(cp.eks_create()) == (expected, ["vpc", "subnets", "control plane", "node group 1"])
    assert not any(name.startswith("addon") for name in finish)


def test_eks_managed_addons_follow_the_control_plane_and_coredns_the_nodes():
    managed = cp.eks_create(addons=cp.EKS_ADDONS)
    finish = cp.earliest_finish(managed)
    assert finish["addon vpc-cni"] == sec("eks_cluster", "create") + sec("eks_addon", "create")
    expected = sec("eks_cluster", "create") + sec("eks_nodegroup", "create") + sec("eks_addon", "create")
    assert cp.critical_path(managed) == (
        expected,
        ["vpc", "subnets", "control plane", "node group 1", "addon coredns"],
    )


def test_eks_fargate_profiles_are_serial_and_node_groups_parallel():
    finish = cp.earliest_finish(cp.eks_create(nodegroups=3, fargate_profiles=3))
    cluster = sec("eks_cluster", "create")
    assert finish["fargate profile 3"] == cluster + 3 * sec("eks_fargate_profile", "create")
    assert {finish[f"node group {n}"] for n in (1, 2, 3)} == {cluster + sec("eks_nodegroup", "create")}


def test_eks_delete_waits_for_node_groups_and_fargate_profiles_before_the_control_plane():
    total, chain = cp.critical_path(cp.eks_delete())
    assert total == sec("eks_nodegroup", "delete") + sec("eks_cluster", "delete")
    assert chain[:2] == ["node group 1 deleted", "control plane deleted"]


def test_eks_upgrade_updates_the_node_groups_after_the_control_plane_side_by_side_one_round_per_node():
    finish = cp.earliest_finish(cp.eks_upgrade(nodegroups=2, nodes=3, max_unavailable=1))
    control_plane = sec("eks_cluster", "update")
    assert finish["control plane update"] == control_plane
    assert {finish["node group 1 update"], finish["node group 2 update"]} == {
        control_plane + 3 * sec("eks_nodegroup", "update")
    }
    # Two nodes at a time: two rounds for three nodes.
    two_at_a_time = cp.critical_path(cp.eks_upgrade(nodegroups=1, nodes=3, max_unavailable=2))[0]
    assert two_at_a_time == control_plane + 2 * sec("eks_nodegroup", "update")
    only_cp = cp.critical_path(cp.control_plane_steps(cp.eks_upgrade()))[0]
    assert only_cp == control_plane


def test_limits_scale_every_phase_and_markdown_lists_the_table_and_phases():
    at_once, scaled = cp.limits(), cp.limits(1 / 30)
    assert set(at_once) == set(cp.PHASES)
    assert all(scaled[key] == pytest.approx(at_once[key] / 30) for key in at_once)
    text = "\n".join(cp.markdown())
    for (resource, transition), latency in LATENCIES.items():
        assert f"| {resource} | {transition} | {latency.during} |" in text and latency.source in text
    assert "| self-managed | create | 546 | 18.2 |" in text


# --- a measured run's chain (as_run) --------------------------------------------------------------------------------
EKS_DELETE_JOURNAL = [
    ["eks:DescribeCluster", 1.4],
    ["eks:DeleteNodegroup", 1.5],
    ["ec2:DeleteSubnet", 3.0],  # the other cluster's, before this chain got there: not this chain's step
    ["eks:DescribeNodegroup", 11.8],
    ["eks:DeleteCluster", 12.0],
    ["ec2:DeleteSubnet", 18.5],
    ["ec2:DeleteSubnet", 18.55],
    ["ec2:DeleteVpc", 18.6],
]


def test_a_run_is_traced_through_its_chain_by_the_requests_that_ask_each_step():
    """Before the chain, the model's time on it and what was lost after each step add up to the cluster's end."""
    steps = cp.chain("eks", "delete", scale=1 / 30)
    assert [step.name for step in steps] == [
        "node group 1 deleted",
        "control plane deleted",
        "subnets deleted",
        "vpc deleted",
    ]
    before, traced = cp.as_run(steps, EKS_DELETE_JOURNAL, end=19.0)
    assert before == 1.5
    assert [(t.step, t.asked, t.seconds, t.lost) for t in traced] == [
        ("node group 1 deleted", 1.5, 10.0, 0.5),  # seen gone and the cluster asked 0.5 s after it went
        ("control plane deleted", 12.0, 6.0, 0.5),
        ("subnets deleted", 18.5, 0.0, 0.1),  # the first DeleteSubnet after the cluster's, not the one at 3.0
        ("vpc deleted", 18.6, 0.0, 0.4),
    ]
    assert before + sum(t.seconds + t.lost for t in traced) == pytest.approx(19.0)


def test_a_chain_is_not_traced_when_a_step_cannot_be_told_or_was_never_asked():
    # A self-managed create launches its control plane with RunInstances, as it launches the bastion and workers.
    launches = cp.chain("self-managed", "create", scale=1 / 30)
    assert cp.as_run(launches, [["ec2:RunInstances", 3.0]], end=20.0) is None
    missing = [entry for entry in EKS_DELETE_JOURNAL if entry[0] != "eks:DeleteCluster"]
    assert cp.as_run(cp.chain("eks", "delete", scale=1 / 30), missing, end=19.0) is None
    assert cp.asked_by("node group 2 deleted") == "eks:DeleteNodegroup" and cp.asked_by("worker 1 launch") is None
