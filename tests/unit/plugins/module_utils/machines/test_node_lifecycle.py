# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""machines/node_lifecycle.py, the write half of a machine's removal, against fakes at the ``workload`` boundary.

The fakes stand where the wire is: :class:`FakeKube` answers as the Kubernetes API does for what a drain sends
(``PATCH`` of the Node, ``POST`` of an Eviction that a PodDisruptionBudget may refuse with 429, the Node's pods
re-read each round) and :class:`FakeEtcd` as etcd's gateway (``MoveLeader``, ``MemberRemove``, "unhealthy cluster"
for a few seconds after a membership change). Both are ``Endpoint``s, so every write goes through the same
``Operations`` gate as against a real cluster: planned in check mode, recorded, retried only as the code says.
Time is a fake clock that moves when the code sleeps: the drain's retries, its ``node_drain_timeout`` and the run's
budget are asserted in seconds without any test sleeping. The end-to-end drain against the simulator's API server is
``tests/integration/test_machine_lifecycle.py``; these pin its branches.
"""

from __future__ import annotations

from typing import Any

import pytest
from fake_time import FakeTime

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, RemoteError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import node_lifecycle as nl
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.etcd import EtcdStatus, Member
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.observe import NodeView

NODE = "ip-10-0-1-10.ec2.internal"


def context(fake: FakeTime, check_mode: bool = False, wait_timeout: int = 600) -> Context:
    return fake.context(wait_timeout, check_mode=check_mode)  # no AWS call on this path


def pod(name: str, namespace: str = "default", **metadata: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, **metadata}, "spec": {"nodeName": NODE}}


class FakeKube:
    """The Kubernetes API of one Node, as a drain sees it.

    ``refusals``: how many evictions of a pod a PodDisruptionBudget refuses (429) before it allows one;
    ``terminating``: seconds an evicted pod stays on the Node (graceful termination); ``stuck``: pods that never
    leave (a finalizer). Writes are recorded in the order the API received them.
    """

    def __init__(
        self,
        time: FakeTime,
        pods: list[dict[str, Any]],
        refusals: dict[str, int] | None = None,
        terminating: float = 0.0,
        stuck: set[str] | None = None,
        node: dict[str, Any] | None = None,
    ) -> None:
        self.time = time
        self.on_node = {p["metadata"]["name"]: p for p in pods}
        self.refusals = dict(refusals or {})
        self.terminating = terminating
        self.stuck = stuck or set()
        self.leaving: dict[str, float] = {}  # pod -> when it is gone
        self.writes: list[str] = []
        self.reads = 0
        self.watches = 0
        self.node = node

    # reads (KubeApi's surface the code uses)
    def pods_on_node(self) -> list[dict[str, Any]]:
        for name, gone_at in list(self.leaving.items()):
            if self.time.now >= gone_at and name not in self.stuck:
                self.on_node.pop(name, None)
                del self.leaving[name]
        return list(self.on_node.values())

    def pods(self, namespace: str | None = None, **selectors: str) -> list[dict[str, Any]]:
        assert selectors == {"field_selector": f"spec.nodeName={NODE}"}, selectors
        self.reads += 1
        return self.pods_on_node()

    def watch_pods(self, wanted: Any, seconds: float, namespace: str | None = None, **selectors: str) -> bool:
        """The API server's watch of the Node's pods: it ends when a pod leaves (its DELETED event) that ``wanted``
        waits for, else after ``seconds`` - the clock moves as long as the watch lasted."""
        assert selectors == {"field_selector": f"spec.nodeName={NODE}"}, selectors
        self.watches += 1
        leaving = [
            (gone_at, name)
            for name, gone_at in self.leaving.items()
            if name not in self.stuck and wanted("DELETED", self.on_node[name]) and gone_at <= self.time.now + seconds
        ]
        if not leaving:
            self.time.sleep(seconds)
            return False
        self.time.sleep(max(0.0, min(leaving)[0] - self.time.now))
        return True

    def get(self, path: str, name: str) -> dict[str, Any] | None:
        assert path == f"/api/v1/nodes/{NODE}" and name == "k8s:GetNode"
        self.reads += 1
        return self.node

    # writes (the Endpoint protocol)
    def planned_name(self, method: str) -> str:
        return {"cordon": "k8s:PatchNode", "evict": "k8s:CreateEviction", "delete_node": "k8s:DeleteNode"}[method]

    def invoke(self, method: str, params: dict[str, Any]) -> Any:
        if method == "cordon":
            self.writes.append(f"cordon {params['node']}")
            return {}
        if method == "delete_node":
            self.writes.append(f"delete {params['node']}")
            if self.node is None:
                raise RemoteError("NotFound", f'nodes "{params["node"]}" not found', 404)
            self.node = None
            return {}
        assert method == "evict"
        name = params["name"]
        if self.refusals.get(name, 0) > 0:
            self.refusals[name] -= 1
            self.writes.append(f"refused {name}")
            raise RemoteError("TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
        self.writes.append(f"evict {name}")
        self.leaving.setdefault(name, self.time.now + self.terminating)
        return {}


def node(**fields: Any) -> NodeView:
    values: dict[str, Any] = dict(name=NODE, provider_id="aws:///us-east-1a/i-0", ready="True", ready_since=None)
    values.update(unschedulable=False)
    values.update(fields)
    return NodeView(**values)


# drain ---------------------------------------------------------------------------------------------------------------
def test_a_drain_cordons_evicts_what_it_may_and_leaves_daemonset_mirror_and_skip_pods():
    fake = FakeTime()
    api = FakeKube(
        fake,
        [
            pod("web-1"),
            pod("coredns-1", "kube-system"),
            pod("kube-proxy-x", "kube-system", ownerReferences=[{"kind": "DaemonSet", "controller": True}]),
            pod("etcd-static", "kube-system", annotations={"kubernetes.io/config.mirror": "abc"}),
            pod("keep-me", labels={"cluster.x-k8s.io/drain": "skip"}),
        ],
    )
    ctx = context(fake)
    outcome = nl.drain_node(ctx, api, node(), "md-0-abc")  # type: ignore[arg-type]

    assert api.writes == [f"cordon {NODE}", "evict web-1", "evict coredns-1"]
    assert outcome.evicted == ["default/web-1", "kube-system/coredns-1"] and outcome.timed_out == []
    assert sorted(outcome.skipped) == [
        "default/keep-me (label cluster.x-k8s.io/drain=skip)",
        "kube-system/etcd-static (mirror pod)",
        "kube-system/kube-proxy-x (DaemonSet pod)",
    ]
    assert [p.call for p in ctx.ops.plan] == ["k8s:PatchNode", "k8s:CreateEviction", "k8s:CreateEviction"]
    # the pods left at once: one read of the Node's pods before, one after the evictions, no pause
    assert api.reads == 2 and fake.slept == []


def test_a_cordoned_node_is_not_patched_again_and_an_excluded_one_is_not_drained():
    fake = FakeTime()
    api = FakeKube(fake, [pod("web-1")])
    nl.drain_node(context(fake), api, node(unschedulable=True), "md-0-abc")  # type: ignore[arg-type]
    assert api.writes == ["evict web-1"]

    api = FakeKube(fake, [pod("web-1")])
    excluded = node(annotations={"machine.cluster.x-k8s.io/exclude-node-draining": ""})
    assert nl.drain_node(context(fake), api, excluded, "md-0-abc").excluded  # type: ignore[arg-type]
    assert nl.drain_node(context(fake), api, node(), "md-0-abc", excluded=True).excluded  # type: ignore[arg-type]
    assert api.writes == [] and api.reads == 0


def test_refused_evictions_are_asked_again_paced_and_an_evicted_pod_is_waited_for_not_evicted_twice():
    fake = FakeTime()
    api = FakeKube(fake, [pod("web-1"), pod("web-2")], refusals={"web-2": 3}, terminating=2.0)
    ctx = context(fake)
    outcome = nl.drain_node(ctx, api, node(), "md-0-abc")  # type: ignore[arg-type]

    assert api.writes == [
        f"cordon {NODE}",
        "evict web-1",
        "refused web-2",
        "refused web-2",
        "refused web-2",
        "evict web-2",
    ]
    assert outcome.evicted == ["default/web-1", "default/web-2"] and outcome.timed_out == []
    # DRAIN_RETRY's pauses, short first and growing (0.5, 1, 2, 4), each a watch of the Node's pods that an evicted
    # pod's leaving ends: web-1 left at 2 s (the third pause cut to 0.5 s; web-2 then evicted on its fourth ask),
    # web-2 two seconds later (the fourth pause cut to 2 s) - the drain took 4 s, where polling alone took 7.5 s
    assert fake.slept == [0.5, 1.0, 0.5, 2.0] and api.watches == 4
    # a refusal is not a change: the plan holds the cordon and one eviction per pod
    assert [p.call for p in ctx.ops.plan] == ["k8s:PatchNode", "k8s:CreateEviction", "k8s:CreateEviction"]


def test_node_drain_timeout_lets_the_machine_go_naming_the_pods_left():
    fake = FakeTime()
    api = FakeKube(fake, [pod("web-1"), pod("db-0")], refusals={"db-0": 10_000})
    ctx = context(fake)
    outcome = nl.drain_node(ctx, api, node(), "md-0-abc", timeout=30)  # type: ignore[arg-type]

    assert outcome.timed_out == ["default/db-0"] and outcome.evicted == ["default/web-1"]
    assert 30 <= fake.elapsed < 36  # gave up at the first round past 30 s (pauses are at most 5 s)
    assert ctx.warnings == [
        f"node {NODE} (machine md-0-abc): node_drain_timeout 30s passed with default/db-0 still on it; "
        "the machine goes anyway"
    ]


def test_without_a_drain_timeout_the_run_budget_keeps_the_machine_and_says_why():
    fake = FakeTime()
    api = FakeKube(fake, [pod("web-1")], stuck={"web-1"})
    ctx = context(fake, wait_timeout=20)
    with pytest.raises(ReconcileError) as raised:
        nl.drain_node(ctx, api, node(), "md-0-abc")  # type: ignore[arg-type]
    assert "did not finish within wait_timeout: default/web-1 still there" in str(raised.value)
    assert "the machine was kept" in str(raised.value)
    assert fake.elapsed <= 20  # never slept past the budget
    assert api.writes == [f"cordon {NODE}", "evict web-1"]  # evicted once, then only waited for


def test_check_mode_plans_the_cordon_and_every_eviction_and_sends_nothing():
    fake = FakeTime()
    api = FakeKube(fake, [pod("web-1"), pod("web-2")], refusals={"web-2": 5})
    ctx = context(fake, check_mode=True)
    outcome = nl.drain_node(ctx, api, node(), "md-0-abc")  # type: ignore[arg-type]
    assert api.writes == [] and fake.slept == []
    assert [(p.call, p.resource) for p in ctx.ops.plan] == [
        ("k8s:PatchNode", f"node {NODE}"),
        ("k8s:CreateEviction", "pod default/web-1"),
        ("k8s:CreateEviction", "pod default/web-2"),
    ]
    assert outcome.evicted == ["default/web-1", "default/web-2"]


# volumes ---------------------------------------------------------------------------------------------------------
def test_volumes_are_waited_for_until_detached_or_their_timeout():
    fake = FakeTime()
    attached = {"metadata": {"name": NODE}, "status": {"volumesAttached": [{"name": "kubernetes.io/csi/vol-1"}]}}
    api = FakeKube(fake, [], node=attached)
    ctx = context(fake)
    assert nl.wait_volumes_detached(ctx, api, NODE, "md-0-abc", timeout=10) == ["kubernetes.io/csi/vol-1"]  # type: ignore[arg-type]
    assert 10 <= fake.elapsed < 16 and "node_volume_detach_timeout 10s passed" in ctx.warnings[0]

    api.node = {"metadata": {"name": NODE}, "status": {}}
    assert nl.wait_volumes_detached(context(fake), api, NODE, "md-0-abc") == []  # type: ignore[arg-type]
    api.node = None  # the Node is gone: nothing to wait for
    assert nl.wait_volumes_detached(context(fake), api, NODE, "md-0-abc") == []  # type: ignore[arg-type]
    reads = api.reads
    assert nl.wait_volumes_detached(context(fake, check_mode=True), api, NODE, "m") == []  # type: ignore[arg-type]
    assert api.reads == reads  # check mode does not wait


def test_delete_node_takes_an_already_deleted_node_as_done():
    fake = FakeTime()
    api = FakeKube(fake, [], node={"metadata": {"name": NODE}})
    ctx = context(fake)
    nl.delete_node(ctx, api, NODE, "md-0-abc")  # type: ignore[arg-type]
    nl.delete_node(ctx, api, NODE, "md-0-abc")  # type: ignore[arg-type]
    assert api.writes == [f"delete {NODE}", f"delete {NODE}"]
    assert [p.call for p in ctx.ops.plan] == ["k8s:DeleteNode"]  # the NotFound answer left the plan again


# etcd ------------------------------------------------------------------------------------------------------------
class FakeEtcd:
    """etcd's gateway for reconfiguration: refuses with "unhealthy cluster" ``unhealthy`` times, then accepts;
    ``refuse`` maps a target member id to an error that stays."""

    def __init__(self, unhealthy: int = 0, refuse: dict[str, str] | None = None) -> None:
        self.unhealthy = unhealthy
        self.refuse = refuse or {}
        self.writes: list[tuple[str, dict[str, Any]]] = []

    def planned_name(self, method: str) -> str:
        return {"move_leader": "etcd:MoveLeader", "member_remove": "etcd:MemberRemove"}[method]

    def invoke(self, method: str, params: dict[str, Any]) -> Any:
        self.writes.append((method, dict(params)))
        if self.unhealthy > 0:
            self.unhealthy -= 1
            raise RemoteError("Unavailable", "etcdserver: unhealthy cluster")
        if params.get("target_id") in self.refuse:
            raise RemoteError("FailedPrecondition", self.refuse[params["target_id"]])
        return {}


def status(leader: str, learner: str | None = None) -> EtcdStatus:
    members = tuple(
        Member(id=str(100 + i), name=name, peer_urls=(f"https://{name}:2380",), is_learner=name == learner)
        for i, name in enumerate(("cp-a", "cp-b", "cp-c"))
    )
    leader_id = next(m.id for m in members if m.name == leader)
    return EtcdStatus(via="cp-a", members=members, leader_id=leader_id, alarms={})


def test_leadership_moves_off_a_leaving_leader_to_the_first_voting_candidate_once():
    fake = FakeTime()
    etcd = FakeEtcd()
    ctx = context(fake)
    nl.move_leadership_off(ctx, etcd, status("cp-a", learner="cp-b"), "cp-a", ["cp-b", "cp-c"])  # type: ignore[arg-type]
    assert etcd.writes == [("move_leader", {"via": "cp-a", "target_id": "102"})]  # cp-b is a learner: skipped

    etcd = FakeEtcd()
    nl.move_leadership_off(ctx, etcd, status("cp-b"), "cp-a", ["cp-b", "cp-c"])  # type: ignore[arg-type]
    assert etcd.writes == []  # cp-a does not lead: nothing to move


def test_leadership_tries_the_next_candidate_and_fails_naming_each_refusal():
    ctx = context(FakeTime())
    etcd = FakeEtcd(refuse={"101": "not a voter yet"})
    nl.move_leadership_off(ctx, etcd, status("cp-a"), "cp-a", ["cp-b", "cp-c"])  # type: ignore[arg-type]
    assert [w[1]["target_id"] for w in etcd.writes] == ["101", "102"]

    etcd = FakeEtcd(refuse={"101": "no", "102": "no either"})
    with pytest.raises(ReconcileError, match="could not be moved off cp-a: cp-b: no; cp-c: no either"):
        nl.move_leadership_off(ctx, etcd, status("cp-a"), "cp-a", ["cp-b", "cp-c"])  # type: ignore[arg-type]


def test_member_removal_goes_through_another_member_and_waits_out_an_unhealthy_cluster():
    fake = FakeTime()
    etcd = FakeEtcd(unhealthy=3)
    ctx = context(fake)
    assert nl.remove_member(ctx, etcd, status("cp-b"), "cp-a", ["cp-a", "cp-b", "cp-c"])  # type: ignore[arg-type]
    assert etcd.writes[-1] == ("member_remove", {"via": "cp-b", "member_id": "100"})
    assert len(etcd.writes) == 4 and fake.slept == [1.0, 1.0, 1.0]  # RECONFIGURE_RETRY between attempts
    assert [p.call for p in ctx.ops.plan] == ["etcd:MemberRemove"]  # retried, planned once

    assert not nl.remove_member(ctx, FakeEtcd(), status("cp-b"), "cp-z", ["cp-a"])  # type: ignore[arg-type]
    with pytest.raises(ReconcileError, match="no other etcd member"):
        nl.remove_member(ctx, FakeEtcd(), status("cp-b"), "cp-a", ["cp-a"])  # type: ignore[arg-type]


def test_member_removal_gives_up_when_the_run_budget_is_spent():
    fake = FakeTime()
    etcd = FakeEtcd(unhealthy=10_000)
    ctx = context(fake, wait_timeout=5)
    with pytest.raises(RemoteError, match="unhealthy cluster"):
        nl.remove_member(ctx, etcd, status("cp-b"), "cp-a", ["cp-b"])  # type: ignore[arg-type]
    assert fake.elapsed <= 5
