# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: a machine pool's Nodes - waited for after the pool launched machines, as a machine group's are.

A pool that was created or resized in this run is done when its desired number of running instances have a Ready
Node (Cluster API's MachinePool ``ReadyReplicas``), not when AWS launched them: the run that built a cluster then
ends with a cluster that serves, the status it reports says so, and the next run has nothing left to report.

One wait polls one instance describe (the pool's instances by tag: ids, zones and private DNS names) and one Node
list; a Node is an instance's by providerID once the cloud provider set it, else by the name the kubelet registered.
Without the API (``kubernetes_api`` auto and no answer, or mode none; an EKS pool without an instance profile, or
whose role the cluster does not map yet: its nodes cannot join) the Nodes are not awaited (a warning says why) and
the AWS side of the same wait is: ``desired`` running instances, what the status counts as in service - as a machine
deployment without the API is judged by its instances running. So the run that launched them reports the pool as
the next run will find it, and that run has nothing to write. ``required`` fails instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..aws.ec2 import describe_kind
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.waiting import wait_until
from ..workload.access import KubernetesAccess
from ..workload.kube import UNREACHABLE
from ..workload.observe import NodeView, Workload

RUNNING_STATES = ["pending", "running"]


def pool_instances_by_tag(ctx: Context, tag: str, pool: str) -> list[dict[str, Any]]:
    """The pool's pending and running instances (one describe, every page)."""
    filters = ctx.owner_filters() + [
        {"Name": f"tag:{tag}", "Values": [pool]},
        {"Name": "instance-state-name", "Values": RUNNING_STATES},
    ]
    reservations = describe_kind(ctx, "instance", filters)
    return [i for r in reservations for i in r.get("Instances", [])]


def ready_nodes(instances: Sequence[Mapping[str, Any]], nodes: tuple[NodeView, ...]) -> int:
    """How many running instances have a Ready Node."""
    workload = Workload(reachable=True, nodes=nodes)
    count = 0
    for instance in instances:
        if (instance.get("State") or {}).get("Name") != "running":
            continue
        zone = (instance.get("Placement") or {}).get("AvailabilityZone") or ""
        node = workload.node_for(zone, instance["InstanceId"], instance.get("PrivateDnsName") or "")
        count += node is not None and node.ready == "True"
    return count


def wait_for_pool_nodes(
    ctx: Context, access: KubernetesAccess | None, unreached: str, pool: str, tag: str, desired: int
) -> None:
    """Wait until ``desired`` instances of the pool have a Ready Node. No wait in check mode, without ``wait``, for
    an empty pool, or without ``access`` (``unreached`` says why the API was not reached, for the warning): then
    the wait is for the instances to run. An EKS pool's API is reached with a token of the run's credentials (its
    nodes' role is mapped by the EKS cluster's run)."""
    if ctx.check_mode or not ctx.wait or desired < 1:
        return
    if access is None or access.api is None:
        if unreached:
            ctx.warn(f"pool {pool}: its Nodes were not awaited ({unreached}); its instances were, until running")
        wait_for_running(ctx, tag, pool, desired)
        return
    api = access.api

    def observe() -> int:
        instances = pool_instances_by_tag(ctx, tag, pool)
        try:
            nodes = tuple(NodeView.from_api(n) for n in api.nodes())
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            if access.settings.mode == "required":
                raise ReconcileError(
                    f"kubernetes_api.mode is required but the Kubernetes API does not answer: {e}"
                ) from None
            return -1  # the API went away: the wait ends with a warning
        return ready_nodes(instances, nodes)

    found = wait_until(
        observe,
        lambda ready: ready >= desired or ready < 0,
        ctx,
        f"{desired} Ready Nodes of pool {pool}",
        state=lambda ready: f"{max(ready, 0)} of {desired} Ready",
    )
    if found < 0:
        ctx.warn(f"pool {pool}: the Kubernetes API stopped answering; its Nodes were not awaited, its instances are")
        wait_for_running(ctx, tag, pool, desired)


def wait_for_running(ctx: Context, tag: str, pool: str, desired: int) -> None:
    """Wait until ``desired`` instances of the pool run. A miss is a warning, as a fleet's capacity is: the group
    keeps launching on its own, and the status reports what runs."""

    def running() -> int:
        return sum(1 for i in pool_instances_by_tag(ctx, tag, pool) if i.get("State", {}).get("Name") == "running")

    try:
        wait_until(
            running,
            lambda count: count >= desired,
            ctx,
            f"{desired} running instances of pool {pool}",
            state=lambda count: f"{count} of {desired} running",
        )
    except ReconcileError as e:
        ctx.warn(f"pool {pool}: {e}")
