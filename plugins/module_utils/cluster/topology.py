# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: a cluster's topology as a Graphviz graph (DOT text) - VPC, subnets per availability zone, gateways, the
load balancer and the machine groups in their subnets, each coloured by its state.

Why Graphviz: the DOT language is plain text a unit test can read, its ``dot`` layout puts nested boxes (VPC -> zone
-> subnet) and edges in order without coordinates of ours, it renders SVG and PNG from one input, and it has been
maintained for three decades and is packaged everywhere (Debian's ``graphviz``; the execution environment's
bindep). The text is built here without any library, so a controller without Graphviz still gets ``topology.dot``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# fill colours: ready, on its way, failed or missing, not known
GREEN, AMBER, RED, GREY = "#c8e6c9", "#ffe0b2", "#ffcdd2", "#eeeeee"
FAILED_STATES = ("failed", "FAILED", "CREATE_FAILED", "DEGRADED", "stopped", "terminated")
PENDING_STATES = ("pending", "CREATING", "UPDATING", "provisioning", "deleting", "DELETING", "shutting-down")


def topology_dot(status: Mapping[str, Any]) -> str:
    """The DOT text of the cluster's topology (deterministic: the same status gives the same text)."""
    resources: Mapping[str, list[Mapping[str, Any]]] = status.get("resources") or {}
    lines = [
        f"digraph {_quote(str(status.get('cluster', 'cluster')))} {{",
        "  graph [rankdir=TB, fontname=Helvetica, fontsize=11, compound=true, newrank=true,"
        f" label={_quote(_title(status))}, labelloc=t];",
        '  node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10];',
        '  edge [color="#607d8b"];',
        '  internet [label="Internet", shape=ellipse, fillcolor="#e3f2fd"];',
    ]
    vpcs = resources.get("vpc") or []
    vpc = vpcs[0] if vpcs else {"id": "vpc (not found)", "cidr_block": "", "state": None}
    lines += ["  subgraph cluster_vpc {", f'    label={_quote(_vpc_label(vpc))}; style=rounded; color="#1565c0";']
    lines += _gateways(resources)
    lines += _zones(status, resources)
    lines += _eks_inside(status)
    lines.append("  }")
    lines += _load_balancers(resources)
    lines += _edges(status, resources)
    lines.append("}")
    return "\n".join(lines) + "\n"


# boxes ------------------------------------------------------------------------------------------------------------
def _gateways(resources: Mapping[str, list[Mapping[str, Any]]]) -> list[str]:
    return [
        _node(4, gw["id"], f"Internet gateway\n{gw['id']}", _colour(gw.get("state")))
        for gw in resources.get("internet_gateway") or []
    ]


def _zones(status: Mapping[str, Any], resources: Mapping[str, list[Mapping[str, Any]]]) -> list[str]:
    subnets = sorted(
        resources.get("subnet") or [], key=lambda s: (s.get("availability_zone") or "", not s.get("public"))
    )
    zones: dict[str, list[Mapping[str, Any]]] = {}
    for subnet in subnets:
        zones.setdefault(subnet.get("availability_zone") or "?", []).append(subnet)
    lines = []
    # dot places the later of sibling clusters to the left: emitted last to first, the zones read a, b, c.
    for zone, members in reversed(zones.items()):
        lines += [
            f"    subgraph {_quote('cluster_' + zone)} {{",
            f'      label={_quote(zone)}; style=dashed; color="#90a4ae";',
        ]
        for subnet in members:
            lines += _subnet(status, resources, subnet)
        lines.append("    }")
    return lines


def _subnet(
    status: Mapping[str, Any], resources: Mapping[str, list[Mapping[str, Any]]], subnet: Mapping[str, Any]
) -> list[str]:
    label = f"{'public' if subnet.get('public') else 'private'} {subnet.get('cidr_block') or ''}"
    lines = [
        f"      subgraph {_quote('cluster_' + subnet['id'])} {{",
        f'        label={_quote(label)}; style="rounded,filled";'
        f' fillcolor="{"#f1f8e9" if subnet.get("public") else "#fafafa"}"; color="{_colour(subnet.get("state"))}";',
        f"        {_id(subnet['id'] + '_anchor')} [shape=point, style=invis];",
    ]
    for nat in resources.get("nat_gateway") or []:
        if nat.get("subnet_id") == subnet["id"]:
            lines.append(_node(8, nat["id"], f"NAT gateway\n{nat['id']}", _colour(nat.get("state"))))
    for key, machines in _machine_boxes(status, resources, subnet["id"]).items():
        lines.append(_node(8, f"{subnet['id']}_{key}", _machines_label(key, machines), _machines_colour(machines)))
    lines.append("      }")
    return lines


def _machine_boxes(
    status: Mapping[str, Any], resources: Mapping[str, list[Mapping[str, Any]]], subnet_id: str
) -> dict[str, list[Mapping[str, Any]]]:
    """The subnet's machines by group (machine group, machine pool)."""
    boxes: dict[str, list[Mapping[str, Any]]] = {}
    for instance in resources.get("instance") or []:
        if instance.get("subnet_id") == subnet_id:
            boxes.setdefault(instance.get("pool") or instance.get("group") or instance.get("role") or "?", []).append(
                instance
            )
    return dict(sorted(boxes.items()))


def _machines_label(group: str, machines: list[Mapping[str, Any]]) -> str:
    running = sum(1 for m in machines if m.get("state") == "running")
    ready = [m.get("node_ready") for m in machines if m.get("node_ready") is not None]
    nodes = f", {sum(1 for r in ready if r)} Ready" if ready else ""
    return f"{group} x{len(machines)}\n{running} running{nodes}"


def _machines_colour(machines: list[Mapping[str, Any]]) -> str:
    if any(m.get("state") in FAILED_STATES or m.get("node_ready") is False for m in machines):
        return RED
    if any(m.get("state") != "running" for m in machines):
        return AMBER
    return GREEN


def _eks_inside(status: Mapping[str, Any]) -> list[str]:
    """EKS node groups and Fargate profiles (EKS places their instances; no subnet of ours holds them)."""
    eks = status.get("eks") or {}
    lines = []
    for name, group in (eks.get("node_groups") or {}).items():
        label = f"node group {name}\n{group.get('status')}, {group.get('desired')} desired"
        if group.get("nodes") is not None:
            label += f"\n{group.get('nodes_ready')}/{group.get('nodes')} Nodes Ready"
        lines.append(_node(4, f"ng_{name}", label, _colour(group.get("status"))))
    for name, profile in (eks.get("fargate_profiles") or {}).items():
        label = f"Fargate profile {name}\n{profile.get('status')}"
        lines.append(_node(4, f"fp_{name}", label, _colour(profile.get("status"))))
    return lines


def _load_balancers(resources: Mapping[str, list[Mapping[str, Any]]]) -> list[str]:
    lines = []
    for lb in (resources.get("load_balancer") or []) + (resources.get("load_balancer_v2") or []):
        lines.append(
            _node(
                2, f"lb_{lb.get('name')}", f"API load balancer\n{lb.get('name')}", _colour(lb.get("state") or "active")
            )
        )
    return lines


def _edges(status: Mapping[str, Any], resources: Mapping[str, list[Mapping[str, Any]]]) -> list[str]:
    lines = []
    for gw in resources.get("internet_gateway") or []:
        lines.append(f"  internet -> {_id(gw['id'])};")
    for nat in resources.get("nat_gateway") or []:
        for gw in resources.get("internet_gateway") or []:
            lines.append(f'  {_id(nat["id"])} -> {_id(gw["id"])} [style=dashed, label="egress", fontsize=8];')
    control_plane = [
        i for i in resources.get("instance") or [] if i.get("group") == "control-plane" and i.get("subnet_id")
    ]
    for lb in (resources.get("load_balancer") or []) + (resources.get("load_balancer_v2") or []):
        lines.append(f"  internet -> {_id('lb_' + str(lb.get('name')))};")
        for subnet_id in sorted({str(i["subnet_id"]) for i in control_plane}):
            target = _id(subnet_id + "_control-plane")
            lines.append(f'  {_id("lb_" + str(lb.get("name")))} -> {target} [label="6443", fontsize=8];')
    eks_cluster = (status.get("eks") or {}).get("cluster")
    if eks_cluster:
        label = f"EKS control plane {eks_cluster.get('name')}\n{eks_cluster.get('status')}"
        label += f", Kubernetes {eks_cluster.get('version')}"
        lines.append(_node(2, "eks_control_plane", label, _colour(eks_cluster.get("status"))))
        lines.append("  internet -> eks_control_plane;")
        for name in (status.get("eks") or {}).get("node_groups") or {}:
            lines.append(f"  eks_control_plane -> {_id('ng_' + name)};")
    return lines


# text -------------------------------------------------------------------------------------------------------------
def _title(status: Mapping[str, Any]) -> str:
    kind = "EKS" if status.get("kind") == "eks" else "self-managed"
    return f"{status.get('cluster')} ({kind}, {status.get('region')})"


def _vpc_label(vpc: Mapping[str, Any]) -> str:
    return f"VPC {vpc.get('id')} {vpc.get('cidr_block') or ''}".strip()


def _colour(state: Any) -> str:
    if state in (None, ""):
        return GREY
    if state in FAILED_STATES:
        return RED
    if state in PENDING_STATES:
        return AMBER
    return GREEN


def _node(indent: int, ident: str, label: str, fill: str) -> str:
    return f'{" " * indent}{_id(ident)} [label={_quote(label)}, fillcolor="{fill}"];'


def _id(text: str) -> str:
    return _quote(text)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
