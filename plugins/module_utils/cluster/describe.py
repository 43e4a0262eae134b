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


# the run's summary --------------------------------------------------------------------------------------------------
def cluster_report(status: Mapping[str, Any], status_path: str | None = None) -> list[str]:
    """What the cluster role shows at the end of a run: the summary, then (unless the cluster was deleted) the
    describe tree after an empty line."""
    lines = summary_lines(status, status_path)
    return lines if status.get("state") == "absent" else lines + [""] + describe_tree(status)


def summary_lines(status: Mapping[str, Any], status_path: str | None = None) -> list[str]:
    """The short summary the cluster role prints at the end of a run (docs/docsite/rst/status.rst, "The run's
    summary"): one line per machine group, the bastion, machine pools, the EKS side, certificates and etcd snapshots,
    then resources, what is not ready or was not read, orphans, and where ``status.json`` is (``status_path``). A
    deleted cluster (state ``absent``): what it still owns and its orphans."""
    counts = ", ".join(f"{kind}={count}" for kind, count in (status.get("counts") or {}).items() if count)
    orphans = ", ".join(str(o.get("name")) for o in status.get("orphans") or [])
    title = f"cluster {status.get('cluster')} ({status.get('kind')}, {status.get('region')})"
    if status.get("state") == "absent":
        return [f"{title}: deleted", f"  still owned: {counts}" if counts else "  nothing it owned remains"] + (
            [f"  orphans: {orphans}"] if orphans else []
        )
    not_read = status.get("not_read") or []
    not_ready = ", ".join(_not_ready(status)) or ("none" if not not_read else "none of what was read")
    return (
        [f"{title}: {status.get('state')}"]
        + ([f"  endpoint: {status['endpoint']}"] if status.get("endpoint") else [])
        + [_group_line(group, machines) for group, machines in (status.get("machines") or {}).items()]
        + _bastion_lines(status)
        + [_pool_line(name, pool) for name, pool in (status.get("machine_pools") or {}).items()]
        + _eks_lines(status)
        + _certificate_lines(status.get("certificates"))
        + _backup_lines(status.get("etcd_backup"))
        + [f"  resources: {counts}", f"  not ready: {not_ready}"]
        + ([f"  {_not_read(status)}"] if not_read else [])
        + ([f"  orphans: {orphans}"] if orphans else [])
        + ([f"  status: {status_path}"] if status_path else [])
    )


def _not_ready(status: Mapping[str, Any]) -> list[str]:
    """Conditions that are not true, then machine groups and machine pools that are not ready."""
    return (
        [name for name, cond in (status.get("conditions") or {}).items() if not cond.get("status")]
        + [name for name, group in (status.get("groups") or {}).items() if not group.get("ready")]
        + [name for name, pool in (status.get("machine_pools") or {}).items() if not pool.get("ready")]
    )


def _group_line(group: str, machines: Sequence[Mapping[str, Any]]) -> str:
    """``control-plane: 3 machines, 3 Nodes Ready, 3 etcd voters`` - or the AWS-only signal the machines were judged
    by, when the Kubernetes API was not asked or did not answer."""
    k8s = [m["kubernetes"] for m in machines if isinstance(m.get("kubernetes"), Mapping)]
    ready = sum(1 for k in k8s if k.get("node_ready") == "True")
    line = f"  {group}: {len(machines)} machines, {ready} Nodes Ready"
    if group == "control-plane":
        line += f", {sum(1 for k in k8s if k.get('etcd_member') == 'voter')} etcd voters"
    sick = [m["health"] for m in machines if isinstance(m.get("health"), Mapping)]
    sick = [h for h in sick if h.get("state") == "unhealthy"]
    if sick:
        line += f", {len(sick)} unhealthy ({sum(1 for h in sick if h.get('remediated'))} replaced)"
    signal = k8s[0].get("signal") if k8s else None
    if signal not in ("NodeReady", None):
        line += f" (judged by {signal}: the Kubernetes API was not asked or did not answer)"
    return line


def _bastion_lines(status: Mapping[str, Any]) -> list[str]:
    bastion = (status.get("groups") or {}).get("bastion")
    if not bastion:
        return []
    reason = "" if bastion.get("ready") else f" ({bastion.get('reason')})"
    return [f"  bastion: {bastion.get('message')}{reason}"]


def _pool_line(name: str, pool: Mapping[str, Any]) -> str:
    line = f"  {name} ({pool.get('kind')} pool): {pool.get('in_service')}/{pool.get('desired')} in service"
    if pool.get("nodes_ready") is not None:
        line += f", {pool['nodes_ready']} Nodes Ready"
    return line + ("" if pool.get("ready") else f" ({pool.get('reason')})")


def _eks_lines(status: Mapping[str, Any]) -> list[str]:
    eks = status.get("eks")
    if not eks:
        return []
    conditions = status.get("conditions") or {}

    def reason(condition: str) -> str:
        return str((conditions.get(condition) or {}).get("reason", ""))

    cluster = eks.get("cluster")
    state = f"{cluster.get('status')}, Kubernetes {cluster.get('version')}" if cluster else "not found"
    lines = [f"  EKS control plane: {state} ({reason('EKSControlPlaneReady')})"]
    for name, group in (eks.get("node_groups") or {}).items():
        nodes = f", {group.get('nodes_ready')}/{group['nodes']} Nodes Ready" if group.get("nodes") is not None else ""
        lines.append(f"  node group {name}: {group.get('status')}, {group.get('desired')} desired{nodes}")
    for name, profile in (eks.get("fargate_profiles") or {}).items():
        lines.append(f"  Fargate profile {name}: {profile.get('status')}")
    if eks.get("addons"):
        lines.append("  addons: " + ", ".join(f"{name} {a.get('status')}" for name, a in eks["addons"].items()))
    if eks.get("role"):
        lines.append(f"  IAM role: {eks['role'].get('name')} ({reason('IAMControlPlaneRolesReady')})")
    if eks.get("oidc_provider"):
        lines.append(f"  OIDC provider: {eks['oidc_provider']}")
    if eks.get("access_entries"):
        lines.append(f"  access entries: {len(eks['access_entries'])}")
    return lines


def _certificate_lines(certificates: Mapping[str, Any] | None) -> list[str]:
    """The first expiry among the control-plane machines' certificates and among the CAs (self-managed clusters)."""
    if not certificates:
        return []
    machines = [e for e in (certificates.get("machines") or {}).values() if e]
    cas = [e for e in (certificates.get(ca) for ca in ("cluster_ca", "etcd_ca", "front_proxy_ca")) if e]
    first = min(machines) if machines else "not read yet"
    return [f"  certificates expire: control plane {first}, CAs {min(cas) if cas else 'unknown'}"]


def _backup_lines(backup: Mapping[str, Any] | None) -> list[str]:
    if not backup:
        return []
    newest = backup.get("newest")
    latest = f"{newest.get('key')} ({newest.get('last_modified')})" if newest else "none"
    return [f"  etcd snapshots: {backup.get('bucket')}, newest {latest}"]
