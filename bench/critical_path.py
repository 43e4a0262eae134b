"""The critical path: the earliest a cluster's create, control-plane upgrade or delete can finish on AWS.

Each phase is a graph of steps - what AWS (or a booting machine) takes time for, and what must have finished before
a step can start - with the durations of the harness's latency model (tools/aws_latencies.py, the one table). The
longest path through the graph is the bar a reconciler is measured against: nothing that respects the dependencies
can finish sooner, however much it overlaps. Calls AWS answers at once (VPC, subnets, routes, security groups, IAM,
Elastic IPs) take 0 s; the graph keeps them because they order what follows.

    python bench/critical_path.py [--scale 0.0333]     # print each phase's limit and its path

The clusters are the benchmark's (bench/inventory-ours.yml): the HA self-managed ``demo`` (3 availability zones,
a NAT gateway each, an NLB for the API server, 3 control-plane machines, md-0 with 2 workers, the ASG pool mp-0
with 2 instances, a bastion) and ``demo-eks`` (2 zones, one NAT gateway, one node group, one Fargate profile; EKS's
default add-ons come with its control plane, none is managed).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from aws_latencies import LATENCIES  # noqa: E402

# Resources whose steps count 0 s while a phase's graph is built (see limits()).
_ZEROED: ContextVar[frozenset[str]] = ContextVar("zeroed", default=frozenset())
# The model's scale while a graph is built from measured durations (see scaled()); 1 otherwise.
_SCALE: ContextVar[float] = ContextVar("scale", default=1.0)


def seconds(resource: str, transition: str) -> float:
    return 0.0 if resource in _ZEROED.get() else LATENCIES[(resource, transition)].seconds * _SCALE.get()


@contextmanager
def scaled(scale: float) -> Iterator[None]:
    """The table's durations at ``scale`` while graphs are built inside: for a graph that mixes them with durations
    measured at that scale (an upgrade's launch-to-Ready times)."""
    token = _SCALE.set(scale)
    try:
        yield
    finally:
        _SCALE.reset(token)


@dataclass(frozen=True)
class Step:
    """One piece of work: ``seconds`` long, startable once every step named in ``after`` has finished."""

    name: str
    seconds: float
    after: tuple[str, ...] = ()


def earliest_finish(steps: list[Step]) -> dict[str, float]:
    """Each step's earliest finish (its longest path from the start); refuses unknown names and cycles."""
    by_name = {step.name: step for step in steps}
    if len(by_name) != len(steps):
        raise ValueError("step names must be unique")
    for step in steps:
        unknown = [name for name in step.after if name not in by_name]
        if unknown:
            raise ValueError(f"{step.name} waits for unknown steps {unknown}")
    finish: dict[str, float] = {}
    visiting: set[str] = set()

    def visit(name: str) -> float:
        if name in finish:
            return finish[name]
        if name in visiting:
            raise ValueError(f"dependency cycle through {name}")
        visiting.add(name)
        step = by_name[name]
        finish[name] = max((visit(before) for before in step.after), default=0.0) + step.seconds
        visiting.discard(name)
        return finish[name]

    for step in steps:
        visit(step.name)
    return finish


def critical_path(steps: list[Step]) -> tuple[float, list[str]]:
    """The phase's earliest completion and one longest chain of steps that decides it, first step first."""
    finish = earliest_finish(steps)
    by_name = {step.name: step for step in steps}
    last = max(finish, key=lambda name: (finish[name], name))
    chain = [last]
    while by_name[chain[-1]].after:
        chain.append(max(by_name[chain[-1]].after, key=lambda name: (finish[name], name)))
    return finish[last], chain[::-1]


# --- the HA self-managed cluster ----------------------------------------------------------------------------------
def self_managed_create(zones: int = 3, control_plane: int = 3, workers: int = 2, pool: int = 2) -> list[Step]:
    """Network, then the NAT gateways of all zones in parallel with the load balancer; the first control-plane
    machine once its private route has a NAT gateway and the API's load balancer is active; the other replicas one
    at a time (the control plane adds one member at a time, as Cluster API's KubeadmControlPlane does); workers and
    pool instances all at once after the first control plane serves."""
    launch, join = seconds("instance", "launch"), seconds("kubeadm", "join")
    steps = [
        Step("vpc", 0),
        Step("internet gateway", 0, ("vpc",)),
        Step("subnets", 0, ("vpc",)),
        Step("security groups", 0, ("vpc",)),
        Step("load balancer", seconds("load_balancer", "create"), ("subnets", "security groups")),
        Step("bastion", launch, ("subnets", "security groups", "internet gateway")),
    ]
    for zone in range(zones):
        steps += [
            Step(f"elastic ip {zone}", 0),
            Step(
                f"nat gateway {zone}",
                seconds("nat_gateway", "create"),
                ("subnets", "internet gateway", f"elastic ip {zone}"),
            ),
            Step(f"private route {zone}", 0, (f"nat gateway {zone}",)),
        ]
    network = tuple(f"private route {zone}" for zone in range(zones))
    first = ("load balancer", "security groups", *network)
    steps += [
        Step("control plane 1 launch", launch, first),
        Step("control plane 1 initialized", seconds("kubeadm", "first_control_plane"), ("control plane 1 launch",)),
    ]
    for n in range(2, control_plane + 1):
        before = "control plane 1 initialized" if n == 2 else f"control plane {n - 1} joined"
        steps += [
            Step(f"control plane {n} launch", launch, (before,)),
            Step(f"control plane {n} joined", join, (f"control plane {n} launch",)),
        ]
    for n in range(1, workers + 1):
        steps += [
            Step(f"worker {n} launch", launch, ("control plane 1 initialized",)),
            Step(f"worker {n} joined", join, (f"worker {n} launch",)),
        ]
    for n in range(1, pool + 1):
        steps += [
            Step(f"pool instance {n} launch", seconds("asg_instance", "launch"), ("control plane 1 initialized",)),
            Step(f"pool instance {n} joined", join, (f"pool instance {n} launch",)),
        ]
    return steps


def self_managed_upgrade(
    control_plane: int = 3,
    workers: int = 2,
    joins: Sequence[float] | None = None,
    worker_joins: Sequence[float] | None = None,
) -> list[Step]:
    """A Kubernetes version upgrade of the whole cluster: the control plane first, one machine at a time (a new one
    launched and joined, then an old one removed and its instance terminated before the next: KubeadmControlPlane
    scales up only without a deleting machine); then the workers (max_surge 1, max_unavailable 0): each new one
    launched as soon as the one before it is Ready - the MachineSet counts no deleting machine - and each old one
    terminated once its replacement is Ready. Drains count 0 s (how long pods take to leave is the workload's).

    ``joins`` / ``worker_joins``: each new machine's seconds from launch to Ready, in launch order, where they were
    measured (bench/run.py's upgrade runs: the simulator's nodes); the table's launch + kubeadm join otherwise."""
    table = seconds("instance", "launch") + seconds("kubeadm", "join")
    joins = list(joins) if joins is not None else [table] * control_plane
    worker_joins = list(worker_joins) if worker_joins is not None else [table] * workers
    steps: list[Step] = []
    before: tuple[str, ...] = ()
    for n, join in enumerate(joins, 1):
        steps += [
            Step(f"new control plane {n} ready", join, before),
            Step(
                f"old control plane {n} terminated", seconds("instance", "terminate"), (f"new control plane {n} ready",)
            ),
        ]
        before = (f"old control plane {n} terminated",)
    for n, join in enumerate(worker_joins, 1):
        steps += [
            Step(f"new worker {n} ready", join, before),
            Step(f"old worker {n} terminated", seconds("instance", "terminate"), (f"new worker {n} ready",)),
        ]
        before = (f"new worker {n} ready",)
    return steps


def control_plane_steps(steps: list[Step]) -> list[Step]:
    """The control-plane part of an upgrade's graph (its limit: how soon the control plane can be upgraded)."""
    return [step for step in steps if "control plane" in step.name]


def self_managed_delete(zones: int = 3, machines: int = 3 + 2 + 2 + 1) -> list[Step]:
    """Every instance terminates at once, the load balancer and the NAT gateways are deleted at once; an Elastic IP
    is released only after its NAT gateway is deleted; subnets wait for the instances and NAT gateways, the VPC
    for everything in it."""
    steps = [Step(f"instance {n} terminated", seconds("instance", "terminate")) for n in range(1, machines + 1)]
    steps.append(Step("load balancer deleted", 0))
    for zone in range(zones):
        steps += [
            Step(f"nat gateway {zone} deleted", seconds("nat_gateway", "delete")),
            Step(f"elastic ip {zone} released", seconds("eip", "release_after_nat"), (f"nat gateway {zone} deleted",)),
        ]
    instances = tuple(f"instance {n} terminated" for n in range(1, machines + 1))
    nats = tuple(f"nat gateway {zone} deleted" for zone in range(zones))
    steps += [
        Step("subnets deleted", 0, (*instances, *nats, "load balancer deleted")),
        Step("security groups deleted", 0, (*instances, "load balancer deleted")),
        Step("internet gateway deleted", 0, tuple(f"elastic ip {zone} released" for zone in range(zones))),
        Step("vpc deleted", 0, ("subnets deleted", "security groups deleted", "internet gateway deleted")),
    ]
    return steps


# --- the EKS cluster ----------------------------------------------------------------------------------------------
# The add-ons a cluster that manages EKS's defaults lists (eks_create's ``addons``).
EKS_ADDONS = ("vpc-cni", "kube-proxy", "coredns")


def eks_create(nodegroups: int = 1, fargate_profiles: int = 1, addons: Sequence[str] = ()) -> list[Step]:
    """The control plane needs only subnets and its role, so it starts while the NAT gateway settles; node groups
    need the cluster ACTIVE and a route out; Fargate profiles are created one at a time per cluster (EKS refuses a
    second while one is CREATING). ``addons``: the EKS add-ons the cluster manages (its spec's ``addons``), each
    created once the cluster is ACTIVE; coredns reaches ACTIVE only once nodes run. The bench's demo-eks manages
    none: EKS installs vpc-cni, kube-proxy and coredns itself with the control plane, and nothing waits for them."""
    steps = [
        Step("vpc", 0),
        Step("internet gateway", 0, ("vpc",)),
        Step("subnets", 0, ("vpc",)),
        Step("cluster role", 0),
        Step("elastic ip", 0),
        Step("nat gateway", seconds("nat_gateway", "create"), ("subnets", "internet gateway", "elastic ip")),
        Step("private route", 0, ("nat gateway",)),
        Step("control plane", seconds("eks_cluster", "create"), ("subnets", "cluster role")),
        Step("oidc provider", 0, ("control plane",)),
    ]
    for n in range(1, nodegroups + 1):
        steps.append(Step(f"node group {n}", seconds("eks_nodegroup", "create"), ("control plane", "private route")))
    before = "control plane"
    for n in range(1, fargate_profiles + 1):
        steps.append(Step(f"fargate profile {n}", seconds("eks_fargate_profile", "create"), (before,)))
        before = f"fargate profile {n}"
    nodes = tuple(f"node group {n}" for n in range(1, nodegroups + 1))
    for addon in addons:
        after = ("control plane", *nodes) if addon == "coredns" else ("control plane",)
        steps.append(Step(f"addon {addon}", seconds("eks_addon", "create"), after))
    return steps


def eks_upgrade(nodegroups: int = 1, nodes: int = 2, max_unavailable: int = 1) -> list[Step]:
    """EKS upgrades its control plane in one update (``UPDATING``); its node groups can follow only then (a node
    group's version cannot pass the cluster's), side by side, each a rolling update of ``nodes`` at
    ``max_unavailable`` a round. Nothing of ours can shorten either."""
    rounds = max(1, -(-nodes // max(1, max_unavailable)))
    steps = [Step("control plane update", seconds("eks_cluster", "update"))]
    steps += [
        Step(f"node group {n} update", seconds("eks_nodegroup", "update") * rounds, ("control plane update",))
        for n in range(1, nodegroups + 1)
    ]
    return steps


def eks_delete(nodegroups: int = 1, fargate_profiles: int = 1) -> list[Step]:
    """Node groups are deleted together, Fargate profiles one at a time; the cluster only once both are gone; the
    NAT gateway at once, its Elastic IP after it; the VPC last."""
    steps = [Step(f"node group {n} deleted", seconds("eks_nodegroup", "delete")) for n in range(1, nodegroups + 1)]
    before: tuple[str, ...] = ()
    for n in range(1, fargate_profiles + 1):
        steps.append(Step(f"fargate profile {n} deleted", seconds("eks_fargate_profile", "delete"), before))
        before = (f"fargate profile {n} deleted",)
    children = tuple(step.name for step in steps)
    steps += [
        Step("control plane deleted", seconds("eks_cluster", "delete"), children),
        Step("nat gateway deleted", seconds("nat_gateway", "delete")),
        Step("elastic ip released", seconds("eip", "release_after_nat"), ("nat gateway deleted",)),
        Step("subnets deleted", 0, ("control plane deleted", "nat gateway deleted")),
        Step("vpc deleted", 0, ("subnets deleted", "elastic ip released")),
    ]
    return steps


PHASES = {
    ("self-managed", "create"): self_managed_create,
    ("self-managed", "upgrade"): self_managed_upgrade,
    ("self-managed", "delete"): self_managed_delete,
    ("eks", "create"): eks_create,
    ("eks", "upgrade"): eks_upgrade,
    ("eks", "delete"): eks_delete,
}


def limits(scale: float = 1.0, zero: Iterable[str] = ()) -> dict[tuple[str, str], float]:
    """Each phase's critical path in seconds at the latency model's ``scale`` (1 = AWS's own time).

    ``zero`` names resources of the table (``kubeadm``, ``load_balancer``, ...) whose steps count 0 s: the same
    graph, for an endpoint that does not make those steps take time (bench/report.py: no node boots on moto).
    """
    token = _ZEROED.set(frozenset(zero))
    try:
        return {key: critical_path(build())[0] * scale for key, build in PHASES.items()}
    finally:
        _ZEROED.reset(token)


def chain(cluster: str, phase: str, scale: float = 1.0, zero: Iterable[str] = ()) -> list[Step]:
    """The steps of the phase's critical chain, first first, their seconds at ``scale`` (``zero`` as in limits())."""
    token = _ZEROED.set(frozenset(zero))
    try:
        steps = PHASES[(cluster, phase)]()
    finally:
        _ZEROED.reset(token)
    by_name = {step.name: step for step in steps}
    return [Step(name, by_name[name].seconds * scale, by_name[name].after) for name in critical_path(steps)[1]]


# --- a measured run's own chain -----------------------------------------------------------------------------------
# The request that starts each kind of step, as the endpoint's journal names it (bench/run.py keeps each measured
# run's journal): how a run's way through its critical chain is traced (as_run). Instance launches are left out: the
# bastion, the control plane and the workers all start with RunInstances, so a launch cannot be told by its request.
ASKED_BY: tuple[tuple[str, str], ...] = (
    (r"vpc", "ec2:CreateVpc"),
    (r"subnets", "ec2:CreateSubnet"),
    (r"internet gateway", "ec2:CreateInternetGateway"),
    (r"nat gateway( \d+)?", "ec2:CreateNatGateway"),
    (r"control plane", "eks:CreateCluster"),
    (r"node group \d+", "eks:CreateNodegroup"),
    (r"fargate profile \d+", "eks:CreateFargateProfile"),
    (r"addon .+", "eks:CreateAddon"),
    (r"node group \d+ deleted", "eks:DeleteNodegroup"),
    (r"fargate profile \d+ deleted", "eks:DeleteFargateProfile"),
    (r"control plane deleted", "eks:DeleteCluster"),
    (r"nat gateway( \d+)? deleted", "ec2:DeleteNatGateway"),
    (r"elastic ip( \d+)? released", "ec2:ReleaseAddress"),
    (r"instance \d+ terminated", "ec2:TerminateInstances"),
    (r"load balancer deleted", "elasticloadbalancing:DeleteLoadBalancer"),
    (r"subnets deleted", "ec2:DeleteSubnet"),
    (r"security groups deleted", "ec2:DeleteSecurityGroup"),
    (r"internet gateway deleted", "ec2:DeleteInternetGateway"),
    (r"vpc deleted", "ec2:DeleteVpc"),
)


def asked_by(name: str) -> str | None:
    """The request that starts the step ``name`` (``service:Operation``), if it can be told from the journal."""
    return next((operation for pattern, operation in ASKED_BY if re.fullmatch(pattern, name)), None)


@dataclass(frozen=True)
class Traced:
    """One step of a run's chain: asked at ``asked`` s from the playbook's start, ``seconds`` of the model's time,
    and the ``lost`` seconds from when it settled to when the run asked for the next traced step (or ended): a
    poll's lateness plus the run's own steps between."""

    step: str
    asked: float
    seconds: float
    lost: float


def as_run(steps: list[Step], journal: list[list[Any]], end: float) -> tuple[float, list[Traced]] | None:
    """How a run went through the chain ``steps`` (chain()'s): the seconds before it asked for the first step, and
    each step traced. ``journal``: the run's requests as ``[service:Operation, seconds from the playbook's start]``;
    a step is the first request of its operation at or after the previous step's; ``end``: when the run (or the
    cluster's last task) ended. None when a step that takes time cannot be told from the journal (a launch), or a
    step's request is missing."""
    if any(step.seconds and asked_by(step.name) is None for step in steps):
        return None
    # Steps no request tells (taking 0 s, so ordering only) are passed over.
    traceable = [step for step in steps if asked_by(step.name)]
    if not traceable:
        return None
    asked: list[float] = []
    for step in traceable:
        since = asked[-1] if asked else 0.0
        when = min((t for op, t in journal if op == asked_by(step.name) and t >= since), default=None)
        if when is None:
            return None
        asked.append(when)
    following = [*asked[1:], end]
    traced = [
        Traced(step.name, round(when, 2), round(step.seconds, 2), round(after - when - step.seconds, 2))
        for step, when, after in zip(traceable, asked, following, strict=True)
    ]
    return round(asked[0], 2), traced


def markdown() -> list[str]:
    """BENCHMARKS.md's section: the model's table with its sources and each phase's critical path."""
    out = [
        "## The AWS latency model and the critical path",
        "",
        "The embedded endpoint can make resources take AWS's time in their intermediate states (tools/moto_server.py, "
        'fix 16: `POST /_capa/latency {"scale": 0.0333}` or `CAPA_AWS_LATENCY_SCALE=0.0333` runs at 1/30 of it; '
        "off by default). Its one table, `tools/aws_latencies.py` (typical values; the sources report ranges; "
        '"est." is an estimate to replace once measured on AWS):',
        "",
        "| resource | transition | state meanwhile | settles as | seconds | source |",
        "|---|---|---|---|---:|---|",
    ]
    for (resource, transition), latency in LATENCIES.items():
        cells = (resource, transition, latency.during, latency.settled, f"{latency.seconds:g}", latency.source)
        out.append("| " + " | ".join(cells) + " |")
    out += [
        "",
        "The critical path (`bench/critical_path.py`) is the longest chain of the phase's dependency graph with "
        "these durations: the earliest any reconciler can finish. Calls AWS answers at once count 0 s. The create "
        'and delete phase runs are set against these limits at their scale in the section "Under the AWS latency '
        "model\" above; `python bench/critical_path.py [--scale S]` prints each phase's chain.",
        "",
        "| cluster | phase | critical path s | at scale 1/30 s | the chain |",
        "|---|---|---:|---:|---|",
    ]
    for (cluster, phase), build in PHASES.items():
        total, chain = critical_path(build())
        timed = " -> ".join(name for name in chain if next(s for s in build() if s.name == name).seconds)
        out.append(f"| {cluster} | {phase} | {total:g} | {total / 30:.1f} | {timed} |")
    return out + [""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--scale", type=float, default=1.0, help="the latency model's scale (default 1: AWS's time)")
    args = parser.parse_args(argv)
    for (cluster, phase), build in PHASES.items():
        total, chain = critical_path(build())
        print(f"{cluster:12} {phase:8} {total * args.scale:8.1f} s  {' -> '.join(chain)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
