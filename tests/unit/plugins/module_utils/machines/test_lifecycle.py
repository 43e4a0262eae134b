# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Cluster API's machine lifecycle decisions: readiness, KCP's preflight and quorum projection, leadership
candidates, stray members, the drain filters (table-driven; the facts are what the API server and etcd report)."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.machines import lifecycle as lc
from ansible_collections.clusterapi.aws.plugins.module_utils.workload import observe
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.etcd import EtcdStatus, Member

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def node(name: str, ready: str = "True", provider: str = "", since: int = 600, **extra) -> observe.NodeView:
    return observe.NodeView(
        name=name,
        provider_id=provider,
        ready=ready,
        ready_since=NOW - datetime.timedelta(seconds=since),
        unschedulable=False,
        **extra,
    )


def member(name: str, learner: bool = False, id_: str | None = None) -> Member:
    return Member(id=id_ or str(abs(hash(name)) % 10**6), name=name, peer_urls=(), is_learner=learner)


def etcd(*members: Member, leader: str = "", alarms=None) -> EtcdStatus:
    leader_id = next((m.id for m in members if m.name == leader), "")
    return EtcdStatus(via="n1", members=members, leader_id=leader_id, alarms=alarms or {})


ALL_READY = {c: True for c in observe.COMPONENTS}


def workload(*nodes: observe.NodeView, pods=None, status=None) -> observe.Workload:
    return observe.Workload(reachable=True, nodes=nodes, static_pods=pods or {}, etcd=status)


def ready(**kw):
    base = dict(instance_state="running", zone="us-east-1a", instance_id="i-1", node_name="n1", control_plane=False)
    base.update(kw)
    return base


@pytest.mark.parametrize(
    "facts, kw, available, reason",
    [
        (workload(node("n1")), {}, True, ""),
        (workload(node("n1", "False")), {}, False, "Node n1 is not Ready (False)"),
        (workload(), {}, False, "no Node n1 (or providerID aws:///us-east-1a/i-1) yet"),
        # once the cloud provider set a providerID, the Node is matched by it (whatever its name)
        (workload(node("other", provider="aws:///us-east-1a/i-1")), {}, True, ""),
        # a Node of that name with another instance's providerID is not this machine's
        (workload(node("n1", provider="aws:///us-east-1a/i-9")), {}, False, "no Node n1"),
        (
            workload(node("n1", since=30)),
            {"min_ready_seconds": 60},
            False,
            "Node n1 Ready for 30s of min_ready_seconds 60",
        ),
        (workload(node("n1")), {"instance_state": "pending"}, False, "instance pending"),
    ],
)
def test_worker_readiness(facts, kw, available, reason):
    result = lc.readiness(facts, **ready(**kw), now=NOW)
    assert result.available is available
    assert result.reason.startswith(reason)
    assert result.signal == lc.SIGNAL_NODE


def test_without_the_api_the_aws_only_signal_is_named():
    result = lc.readiness(observe.Workload.unreachable("no route"), **ready())
    assert result.available and result.signal == lc.SIGNAL_AWS_ONLY
    assert lc.readiness(None, **ready(instance_state="stopped")).available is False


@pytest.mark.parametrize(
    "pods, status, available, reason",
    [
        ({"n1": ALL_READY}, etcd(member("n1")), True, ""),
        ({"n1": {**ALL_READY, "kube-scheduler": False}}, etcd(member("n1")), False, "static pods not ready"),
        ({}, etcd(member("n1")), False, "static pods not ready on n1: kube-apiserver"),
        ({"n1": ALL_READY}, etcd(member("n1", learner=True)), False, "etcd member n1 is a learner"),
        ({"n1": ALL_READY}, etcd(member("n0")), False, "no etcd member n1"),
        (
            {"n1": ALL_READY},
            etcd(member("n1", id_="7"), alarms={"7": ("NOSPACE",)}),
            False,
            "etcd member n1 has an alarm (NOSPACE)",
        ),
    ],
)
def test_control_plane_readiness(pods, status, available, reason):
    result = lc.readiness(workload(node("n1"), pods=pods, status=status), **ready(control_plane=True))
    assert (result.available, result.reason[: len(reason)]) == (available, reason)


def test_a_control_plane_node_must_be_ready_once_the_cluster_has_a_pod_network():
    facts = {"pods": {"n1": ALL_READY, "n0": ALL_READY}, "status": etcd(member("n1"), member("n0"))}
    # before the CNI addon: no Node can be Ready, kubeadm init's machine counts on etcd and its static pods
    alone = lc.readiness(workload(node("n1", "False"), **facts), **ready(control_plane=True))
    assert alone.available and alone.node_ready == "False"
    # with a pod network (n0 Ready), n1's kubelet waits for its own CNI pod: not yet available
    joining = lc.readiness(workload(node("n0"), node("n1", "False"), **facts), **ready(control_plane=True))
    assert (joining.available, joining.reason) == (False, "Node n1 is not Ready (False)")
    assert joining.member == "voter"


def cp(name: str, healthy: bool = True, leaving: bool = False, node_name: str | None = "") -> lc.ControlPlaneMachine:
    return lc.ControlPlaneMachine(
        name=name,
        node=name if node_name == "" else node_name,
        leaving=leaving,
        readiness=lc.Readiness(healthy, "" if healthy else "static pods not ready on x: etcd"),
    )


THREE = etcd(member("a"), member("b"), member("c"), leader="a")


def test_preflight_names_an_unhealthy_machine_and_the_learner_behind_it():
    status = etcd(member("a"), member("b", learner=True))
    reason = lc.preflight([cp("a"), cp("b", healthy=False)], status)
    assert reason is not None and "machine b is not healthy" in reason and "etcd member b is a learner" in reason


@pytest.mark.parametrize(
    "machines, status, excluding, refused",
    [
        ([cp("a"), cp("b"), cp("c")], THREE, None, None),
        ([cp("a"), cp("b"), cp("c", leaving=True)], THREE, None, "control-plane machine c is being deleted"),
        ([cp("a"), cp("b"), cp("c", node_name=None)], THREE, None, "control-plane machine c has no Node yet"),
        ([cp("a"), cp("b"), cp("c", healthy=False)], THREE, None, "control-plane machine c is not healthy"),
        ([cp("a"), cp("b"), cp("c", healthy=False)], THREE, "c", None),  # the one going may be sick
        ([cp("a"), cp("b")], etcd(member("a"), member("b", learner=True)), None, "etcd member b is a learner"),
        ([cp("a")], etcd(member("a"), member("", id_="5")), None, "etcd member 5 was added but never started"),
        ([cp("a")], None, None, "the etcd member list could not be read"),
    ],
)
def test_preflight(machines, status, excluding, refused):
    reason = lc.preflight(machines, status, excluding)
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith(refused), reason


@pytest.mark.parametrize(
    "status, health, add, remove, allowed",
    [
        (THREE, {"a": True, "b": True, "c": True}, False, "c", True),  # 3 -> 2, both healthy
        (THREE, {"a": True, "b": False, "c": True}, False, "c", False),  # 2 left, one sick: no quorum margin
        (THREE, {"a": True, "b": True, "c": False}, False, "c", True),  # removing the sick one
        (THREE, {"a": True, "b": True, "c": True}, True, None, True),  # 3 -> 4, the new one counted unhealthy
        (THREE, {"a": True, "b": False, "c": True}, True, None, False),  # 4 voters, 2 healthy: below quorum 3
        (etcd(member("a")), {"a": True}, True, None, True),  # 1 -> 2: the special case
        (etcd(member("a"), member("b", learner=True)), {"a": True}, True, None, False),
        # five members tolerate one sick member on top of the one removed
        (
            etcd(*(member(n) for n in "abcde")),
            {"a": True, "b": True, "c": True, "d": False, "e": True},
            False,
            "e",
            True,
        ),
        # a member no machine explains counts healthy, unless it has an alarm
        (etcd(member("a"), member("b"), member("x", id_="9")), {"a": True, "b": True}, False, "b", True),
        (
            etcd(member("a"), member("b"), member("x", id_="9"), alarms={"9": ("CORRUPT",)}),
            {"a": True, "b": True},
            False,
            "b",
            False,
        ),
    ],
)
def test_quorum_projection(status, health, add, remove, allowed):
    ok, detail = lc.quorum_allows(status, health, add=add, remove=remove)
    assert ok is allowed, detail


def test_leadership_goes_to_healthy_machines_first_and_never_to_one_leaving():
    machines = [cp("a"), cp("b", healthy=False), cp("c"), cp("d", leaving=True), cp("e", node_name=None)]
    assert lc.leader_candidates(machines, "a") == ["c", "b"]


def test_leadership_goes_to_an_up_to_date_machine_so_a_rollout_moves_it_once():
    old, new = cp("old"), lc.ControlPlaneMachine("new", "new", False, lc.Readiness(True, ""), updated=True)
    machines = [cp("leader"), lc.ControlPlaneMachine("old", "old", False, lc.Readiness(True, ""), updated=False), new]
    assert lc.leader_candidates(machines, "leader") == ["new", "old"]
    assert old.updated  # a machine is up to date unless said otherwise


def test_stray_members_only_once_every_machine_has_a_node():
    status = etcd(member("a"), member("b"), member("gone"), member(""))
    assert [m.name for m in lc.stray_members(status, [cp("a"), cp("b")])] == ["", "gone"]
    assert lc.stray_members(status, [cp("a"), cp("b", node_name=None)]) == []


def pod(name: str, **meta) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", **meta}}


def test_drain_filters():
    pods = [
        pod("web", ownerReferences=[{"kind": "ReplicaSet", "controller": True}]),
        pod("proxy", ownerReferences=[{"kind": "DaemonSet", "controller": True}]),
        pod("etcd-n1", annotations={observe.MIRROR_ANNOTATION: "x"}),
        pod("keep", labels={lc.DRAIN_LABEL: "skip"}),
        pod("bare"),
        pod("going", deletionTimestamp="2026-12-01T12:00:00Z"),
    ]
    evict, skipped = lc.pods_to_evict(pods)
    assert [p.name for p in evict] == ["web", "bare"]
    assert [(p.name, p.reason) for p in skipped] == [
        ("proxy", "DaemonSet pod"),
        ("etcd-n1", "mirror pod"),
        ("keep", "label cluster.x-k8s.io/drain=skip"),
        ("going", "already terminating"),
    ]


def test_static_pods_and_nodes_are_read_from_the_api_objects():
    pods = [
        {
            "metadata": {"name": "etcd-n1", "labels": {"component": "etcd", "tier": "control-plane"}},
            "spec": {"nodeName": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
        {
            "metadata": {"name": "kube-apiserver-n1", "labels": {"component": "kube-apiserver"}},
            "spec": {"nodeName": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        },
    ]
    assert observe.static_pods_of(pods) == {"n1": {"etcd": True, "kube-apiserver": False}}
    view = observe.NodeView.from_api(
        {
            "metadata": {"name": "n1", "annotations": {lc.EXCLUDE_DRAINING: ""}},
            "spec": {"providerID": "aws:///us-east-1a/i-1", "unschedulable": True},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T11:00:00Z"}],
                "volumesAttached": [{"name": "kubernetes.io/csi/ebs.csi.aws.com^vol-1", "devicePath": ""}],
            },
        }
    )
    assert view.ready == "True" and view.unschedulable and view.provider_id == "aws:///us-east-1a/i-1"
    assert view.ready_since == datetime.datetime(2026, 12, 1, 11, 0, tzinfo=datetime.timezone.utc)
    assert view.volumes_attached == ("kubernetes.io/csi/ebs.csi.aws.com^vol-1",)
