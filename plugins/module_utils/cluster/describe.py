# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: a cluster's status as a tree, the way ``clusterctl describe cluster`` prints one.

Cluster -> infrastructure -> control plane -> workers (machine deployments, machine pools, EKS node groups and
Fargate profiles) -> machines, each row with READY, REASON, SINCE and a message. Machines of a group that all read
the same (state and Node) are folded into one ``N Machines...`` row, as clusterctl groups identical machines.

The input is the status the cluster role settles (``status.json``: ``capa_cluster_info``'s conditions, groups, pools,
EKS side and instance records); nothing here reads AWS, so a saved ``status.json`` describes as well as a live run.
Pure and dependency-free: the ``capa_describe`` filter and ``capa_status`` both print it.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

INFRASTRUCTURE_CONDITIONS = (
    "VpcReady",
    "SubnetsReady",
    "InternetGatewayReady",
    "NatGatewaysReady",
    "RouteTablesReady",
    "ClusterSecurityGroupsReady",
    "LoadBalancerReady",
    "BastionHostReady",
)
EKS_CONTROL_PLANE_CONDITIONS = (
    "IAMControlPlaneRolesReady",
    "EKSAddonsConfigured",
    "OIDCProviderReady",
    "EKSAccessEntriesReady",
)
COLUMNS = ("NAME", "READY", "REASON", "SINCE", "MESSAGE")
WIDTH = 120  # a terminal's and an AWX job's line: messages are cut to fit
MIN_MESSAGE = 24


@dataclass(frozen=True)
class Row:
    depth: int
    name: str
    ready: bool | None  # None: not known (not read)
    reason: str = ""
    since: str | None = None  # ISO time the state began (launch, creation)
    message: str = ""
    last: bool = False  # the last child of its parent (draws the tree's corner)


def describe_tree(status: Mapping[str, Any], now: datetime.datetime | None = None) -> list[str]:
    """The tree's lines, a header first; columns aligned, each line at most :data:`WIDTH` characters (messages cut)."""
    rows = _last_children(list(_rows(status)))
    return _render(rows, now or datetime.datetime.now(datetime.timezone.utc))


# rows -------------------------------------------------------------------------------------------------------------
def _rows(status: Mapping[str, Any]) -> Iterator[Row]:
    conditions: Mapping[str, Mapping[str, Any]] = status.get("conditions") or {}
    kind = "EKS" if status.get("kind") == "eks" else "AWS"
    cluster = status.get("cluster", "?")
    if status.get("state") == "absent":
        counts = {k: v for k, v in (status.get("counts") or {}).items() if v}
        yield Row(0, f"Cluster/{cluster}", not counts, "Deleted" if not counts else "Deleting", message=_counts(counts))
        return
    yield Row(0, f"Cluster/{cluster}", _all_ready(conditions.values(), status), message=_not_read(status))
    yield from _infrastructure(status, conditions, kind)
    yield from _control_plane(status, conditions)
    workers = list(_workers(status))
    if workers:
        yield Row(1, "Workers", None)
        yield from workers


def _infrastructure(status: Mapping[str, Any], conditions: Mapping[str, Any], kind: str) -> Iterator[Row]:
    present = [c for c in INFRASTRUCTURE_CONDITIONS if c in conditions]
    yield Row(
        1, f"ClusterInfrastructure - {kind}Cluster/{status.get('cluster')}", _all_ready(conditions[c] for c in present)
    )
    for name in present:
        yield _condition_row(2, name, conditions[name])
    bastion = (status.get("groups") or {}).get("bastion")
    if bastion:
        yield from _machines(2, "Bastion", bastion, status)


def _control_plane(status: Mapping[str, Any], conditions: Mapping[str, Any]) -> Iterator[Row]:
    eks = status.get("eks")
    if eks is not None:
        cluster = eks.get("cluster") or {}
        ready = conditions.get("EKSControlPlaneReady") or {}
        yield Row(
            1,
            f"ControlPlane - AWSManagedControlPlane/{cluster.get('name') or status.get('cluster')}",
            ready.get("status"),
            ready.get("reason", ""),
            cluster.get("created_at"),
            ready.get("message", ""),
        )
        for name in EKS_CONTROL_PLANE_CONDITIONS:
            if name in conditions:
                yield _condition_row(2, name, conditions[name])
        return
    group = (status.get("groups") or {}).get("control-plane")
    if group is not None:
        yield from _machines(
            1, f"ControlPlane - KubeadmControlPlane/{status.get('cluster')}-control-plane", group, status
        )


def _workers(status: Mapping[str, Any]) -> Iterator[Row]:
    for name, group in (status.get("groups") or {}).items():
        if name not in ("control-plane", "bastion"):
            yield from _machines(2, f"MachineDeployment/{name}", group, status)
    for name, pool in (status.get("machine_pools") or {}).items():
        nodes = pool.get("nodes_ready")
        message = f"{pool.get('in_service')}/{pool.get('desired')} in service" + (
            f", {nodes} Nodes Ready" if nodes is not None else ""
        )
        launcher = "AWSMachinePool" if pool.get("kind") == "asg" else "AWSMachinePool (fleet)"
        reason = "" if pool.get("ready") else pool.get("reason", "")  # as clusterctl: a reason only when not ready
        yield Row(2, f"MachinePool - {launcher}/{name}", pool.get("ready"), reason, message=message)
        yield from _instances(3, _instances_of(status, pool.get("instances") or []))
    eks = status.get("eks") or {}
    for name, group in (eks.get("node_groups") or {}).items():
        yield _eks_row(f"MachinePool - AWSManagedMachinePool/{name}", group, f"{group.get('desired')} desired")
    for name, profile in (eks.get("fargate_profiles") or {}).items():
        # Fargate runs a Node per pod: none until pods of its namespaces run.
        fargate = {**profile, "nodes": profile.get("nodes") or None}
        namespaces = ", ".join(profile.get("namespaces") or [])
        yield _eks_row(f"FargateProfile - AWSFargateProfile/{name}", fargate, f"namespaces {namespaces}")


def _eks_row(name: str, item: Mapping[str, Any], message: str) -> Row:
    nodes, ready_nodes = item.get("nodes"), item.get("nodes_ready")
    if nodes is not None:
        message = f"{message}, {ready_nodes}/{nodes} Nodes Ready" if message else f"{ready_nodes}/{nodes} Nodes Ready"
    active = item.get("status") == "ACTIVE"
    return Row(2, name, active, "" if active else str(item.get("status")), item.get("created_at"), message)


def _machines(depth: int, title: str, group: Mapping[str, Any], status: Mapping[str, Any]) -> Iterator[Row]:
    reason = "" if group.get("ready") else group.get("reason", "")
    yield Row(depth, title, group.get("ready"), reason, message=group.get("message", ""))
    yield from _instances(depth + 1, _instances_of(status, group.get("instances") or []))


def _instances_of(status: Mapping[str, Any], ids: Sequence[str]) -> list[Mapping[str, Any]]:
    records = {r.get("id"): r for r in (status.get("resources") or {}).get("instance") or []}
    return [records.get(i) or {"id": i, "state": None} for i in ids]


def _instances(depth: int, instances: list[Mapping[str, Any]]) -> Iterator[Row]:
    """One row per kind of machine: identical machines (same state and Node readiness) fold into one."""
    folds: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
    for instance in instances:
        folds.setdefault((instance.get("state"), instance.get("node_ready")), []).append(instance)
    for (state, node_ready), same in folds.items():
        ready = _machine_ready(state, node_ready)
        reason = "" if ready else ("NodeNotReady" if state == "running" else f"Instance{str(state).title()}")
        since = min((str(i["launched_at"]) for i in same if i.get("launched_at")), default=None)
        if len(same) == 1:
            name = same[0].get("node") or same[0].get("name") or same[0]["id"]
            yield Row(depth, f"Machine/{name}", ready, reason, since, same[0]["id"])
        else:
            ids = ", ".join(i["id"] for i in same)
            yield Row(depth, f"{len(same)} Machines...", ready, reason, since, f"See {ids}")


def _machine_ready(state: Any, node_ready: Any) -> bool | None:
    if state != "running":
        return False
    return node_ready if node_ready is not None else True


def _condition_row(depth: int, name: str, cond: Mapping[str, Any]) -> Row:
    return Row(
        depth,
        name,
        cond.get("status"),
        "" if cond.get("status") else cond.get("reason", ""),
        message=cond.get("message", ""),
    )


def _all_ready(conditions: Any, status: Mapping[str, Any] | None = None) -> bool | None:
    values = [c.get("status") for c in conditions]
    if values and not all(values):
        return False
    if status is not None:
        groups = list((status.get("groups") or {}).values()) + list((status.get("machine_pools") or {}).values())
        if not all(g.get("ready") for g in groups):
            return False
        if status.get("not_read"):
            return None
    return True if values else None


def _not_read(status: Mapping[str, Any]) -> str:
    unread = status.get("not_read") or []
    return f"not read: {'; '.join(unread)}" if unread else ""


def _counts(counts: Mapping[str, int]) -> str:
    return ("still owned: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))) if counts else "nothing remains"


def _last_children(rows: list[Row]) -> list[Row]:
    """Mark each row that is the last child of its parent (no later sibling before the parent's subtree ends)."""
    marked = []
    for index, row in enumerate(rows):
        last = True
        for later in rows[index + 1 :]:
            if later.depth < row.depth:
                break
            if later.depth == row.depth:
                last = False
                break
        marked.append(Row(row.depth, row.name, row.ready, row.reason, row.since, row.message, last))
    return marked


# rendering --------------------------------------------------------------------------------------------------------
def _prefixes(rows: list[Row]) -> list[str]:
    """The tree drawing before each name: ``├─``/``└─`` for the row, ``│ `` for each open ancestor."""
    prefixes: list[str] = []
    open_levels: dict[int, bool] = {}
    for row in rows:
        if row.depth == 0:
            prefixes.append("")
        else:
            lead = "".join("│ " if open_levels.get(level) else "  " for level in range(1, row.depth))
            prefixes.append(lead + ("└─" if row.last else "├─"))
        open_levels[row.depth] = not row.last
    return prefixes


def _since(value: str | None, now: datetime.datetime) -> str:
    if not value:
        return ""
    try:
        then = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if then.tzinfo is None:
        then = then.replace(tzinfo=datetime.timezone.utc)
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _render(rows: list[Row], now: datetime.datetime) -> list[str]:
    names = [prefix + row.name for prefix, row in zip(_prefixes(rows), rows, strict=True)]
    cells = [
        (name, {True: "True", False: "False", None: "-"}[row.ready], row.reason, _since(row.since, now), row.message)
        for name, row in zip(names, rows, strict=True)
    ]
    widths = [max(len(c[i]) for c in [COLUMNS, *cells]) for i in range(len(COLUMNS) - 1)]
    message_width = max(MIN_MESSAGE, WIDTH - sum(widths) - 2 * len(widths))
    return [
        (
            "  ".join(cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True))
            + "  "
            + _cut(line[-1], message_width)
        ).rstrip()
        for line in [COLUMNS, *cells]
    ]
