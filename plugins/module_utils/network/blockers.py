# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: what blocks a deletion, and whose it is.

When AWS refuses to delete a VPC, subnet or security group because something still depends on it, the error
alone ("has dependencies") leaves the user to hunt. :func:`find` looks at what can depend on the resource (network
interfaces, subnets, security groups and their rules, route tables, gateways, endpoints, load balancers) and
:func:`describe_blockers` turns that into one sentence naming each blocker and its owner: this cluster (CAPA's
role tag), the in-cluster cloud provider (``kubernetes.io/cluster/<name>: owned`` without CAPA's tag), another
cluster, or someone else. It only reads, once per resource type, and only on the failure path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..aws import elb as _elb
from ..aws import elbv2 as _elbv2
from ..aws.ec2 import describe, describe_kind, kind, tags_of
from ..kernel.context import Context
from ..kernel.tags import CAPA_TAG_PREFIX, OWNED, ROLE_TAG, cloud_provider_tag_key, cluster_tag_key, tags_to_dict

OTHER_CLUSTER_PREFIX = CAPA_TAG_PREFIX + "cluster/"
CLOUD_PROVIDER_PREFIX = "kubernetes.io/cluster/"
# Load balancer ENIs are untagged; their description names the load balancer ("ELB <name>", "ELB net/<name>/<id>").
ELB_ENI_PREFIX = "ELB "


@dataclass(frozen=True)
class Blocker:
    id: str
    kind: str
    description: str
    owner: str

    def text(self) -> str:
        about = f"{self.description}; " if self.description else ""
        return f"{self.kind} {self.id} ({about}owner: {self.owner})"


# ownership (pure) --------------------------------------------------------------------------------------------------
def owner_of(tags: Mapping[str, str] | None, cluster: str) -> str:
    """Who a resource belongs to, from its tags, in words."""
    tags = tags or {}
    if tags.get(cluster_tag_key(cluster)) == OWNED:
        role = tags.get(ROLE_TAG)
        return f"this cluster (CAPA, role {role})" if role else "this cluster (CAPA)"
    if tags.get(cloud_provider_tag_key(cluster)) == OWNED:
        return f"the in-cluster cloud provider (kubernetes.io/cluster/{cluster}: owned)"
    for key, value in tags.items():
        if key.startswith(OTHER_CLUSTER_PREFIX) and value == OWNED:
            return f"another CAPA cluster ({key[len(OTHER_CLUSTER_PREFIX) :]})"
    for key, value in tags.items():
        if key.startswith(CLOUD_PROVIDER_PREFIX) and value == OWNED:
            return f"the cloud provider of another cluster ({key[len(CLOUD_PROVIDER_PREFIX) :]})"
    if not tags:
        return "someone else (untagged)"
    shown = ", ".join(f"{k}={v}" for k, v in sorted(tags.items())[:3])
    return f"someone else (tags {shown})"


def is_cloud_provider_owned(tags: Mapping[str, str] | None, cluster: str) -> bool:
    """Made by the in-cluster cloud provider: its owned tag and none of CAPA's (CAPA's lb group has both)."""
    tags = tags or {}
    return tags.get(cloud_provider_tag_key(cluster)) == OWNED and not any(k.startswith(CAPA_TAG_PREFIX) for k in tags)


def describe_blockers(blockers: Iterable[Blocker]) -> str:
    found = list(blockers)
    if not found:
        return "nothing visible (AWS may still be releasing network interfaces of deleted load balancers or instances)"
    return "; ".join(b.text() for b in found)


# what can block (one describe per type) ------------------------------------------------------------------------
@dataclass(frozen=True)
class Scope:
    """The resource a delete was refused for: a VPC, a subnet or a security group."""

    vpc_id: str | None = None
    subnet_id: str | None = None
    group_id: str | None = None
    target_group_arn: str | None = None


def find(ctx: Context, scope: Scope) -> list[Blocker]:
    """Everything that still depends on the resource of ``scope``, with its owner."""
    if scope.target_group_arn:
        return _target_group_users(ctx, scope.target_group_arn)
    lbs = _load_balancers(ctx, scope)
    found = _network_interfaces(ctx, scope, lbs) + list(lbs.values())
    if scope.group_id:
        found += _referencing_groups(ctx, scope.group_id)
    if scope.vpc_id:
        found += _vpc_members(ctx, scope.vpc_id)
    return _unique(found)


def finder(ctx: Context, **scope: str) -> Callable[[], str]:
    """The ``blockers`` callback of :func:`_ec2.delete_when_free` for one resource."""
    return lambda: describe_blockers(find(ctx, Scope(**scope)))


def _unique(blockers: list[Blocker]) -> list[Blocker]:
    seen: set[str] = set()
    out = []
    for blocker in blockers:
        if blocker.id not in seen:
            seen.add(blocker.id)
            out.append(blocker)
    return out


def _eni_filter(scope: Scope) -> list[dict[str, Any]]:
    if scope.group_id:
        return [{"Name": "group-id", "Values": [scope.group_id]}]
    if scope.subnet_id:
        return [{"Name": "subnet-id", "Values": [scope.subnet_id]}]
    return [{"Name": "vpc-id", "Values": [scope.vpc_id]}]


def _network_interfaces(ctx: Context, scope: Scope, lbs: Mapping[str, Blocker]) -> list[Blocker]:
    enis = describe_kind(ctx, "network_interface", _eni_filter(scope))
    instance_ids = sorted({e["Attachment"]["InstanceId"] for e in enis if e.get("Attachment", {}).get("InstanceId")})
    instances = _instance_tags(ctx, instance_ids)
    return [eni_blocker(ctx.cluster, e, instances, lbs) for e in enis]


def eni_blocker(
    cluster: str, eni: Mapping[str, Any], instances: Mapping[str, dict[str, str]], lbs: Mapping[str, Blocker]
) -> Blocker:
    """An ENI's owner is its own tags, else its instance's, else its load balancer's (ENIs of ELBs are untagged)."""
    description = eni.get("Description") or eni.get("InterfaceType") or "network interface"
    parts = [description]
    instance_id = eni.get("Attachment", {}).get("InstanceId")
    tags = tags_to_dict(eni.get("TagSet"))
    owner = owner_of(tags, cluster) if tags else ""
    if instance_id:
        parts.append(f"attached to {instance_id}")
        if not owner and instance_id in instances:
            owner = owner_of(instances[instance_id], cluster)
    if eni.get("RequesterId"):
        parts.append(f"requester {eni['RequesterId']}")
    lb_name = lb_of_eni(description)
    if not owner and lb_name:
        lb = lbs.get(lb_name)
        owner = lb.owner if lb else "a load balancer outside the cluster's view"
    return Blocker(eni["NetworkInterfaceId"], "network interface", ", ".join(parts), owner or owner_of({}, cluster))


def lb_of_eni(description: str) -> str | None:
    """The load balancer name in an ELB ENI's description (``ELB k8s-abc``, ``ELB net/k8s-abc/0123``)."""
    if not description.startswith(ELB_ENI_PREFIX):
        return None
    name = description[len(ELB_ENI_PREFIX) :]
    parts = name.split("/")
    return parts[1] if len(parts) == 3 else name


def _instance_tags(ctx: Context, ids: list[str]) -> dict[str, dict[str, str]]:
    if not ids:
        return {}
    instances = kind("instance")
    reservations = describe(ctx, instances.describe, instances.list_key, InstanceIds=ids)
    return {i["InstanceId"]: tags_of(i) for r in reservations for i in r.get("Instances", [])}


def _referencing_groups(ctx: Context, group_id: str) -> list[Blocker]:
    groups = describe_kind(ctx, "security_group", [{"Name": "ip-permission.group-id", "Values": [group_id]}])
    return [
        Blocker(
            g["GroupId"],
            "security group",
            f"{g.get('GroupName', '')}, a rule references {group_id}",
            owner_of(tags_of(g), ctx.cluster),
        )
        for g in groups
        if g["GroupId"] != group_id
    ]


@dataclass(frozen=True)
class _Member:
    """A kind of the EC2 table that can live in a VPC and keep it from going."""

    kind: str
    label: str
    about: Callable[[Mapping[str, Any]], str] = lambda item: ""
    # The main route table and the default security group go with the VPC; deleted NAT gateways and endpoints
    # stay listed for a while.
    counts: Callable[[Mapping[str, Any]], bool] = lambda item: True
    # An internet gateway is in a VPC by its attachment; everything else by its vpc-id.
    vpc_filter: str = "vpc-id"


_VPC_MEMBERS = (
    _Member("subnet", "subnet", lambda s: s.get("CidrBlock", "")),
    _Member(
        "security_group", "security group", lambda g: g.get("GroupName", ""), lambda g: g.get("GroupName") != "default"
    ),
    _Member("route_table", "route table", counts=lambda t: not any(a.get("Main") for a in t.get("Associations", []))),
    _Member("internet_gateway", "internet gateway", lambda g: "attached", vpc_filter="attachment.vpc-id"),
    _Member(
        "nat_gateway",
        "NAT gateway",
        lambda n: n.get("State", ""),
        lambda n: n.get("State") not in ("deleted", "deleting"),
    ),
    _Member(
        "vpc_endpoint",
        "VPC endpoint",
        lambda e: e.get("ServiceName", ""),
        lambda e: e.get("State", "").lower() not in ("deleted", "deleting"),
    ),
)


def _vpc_members(ctx: Context, vpc_id: str) -> list[Blocker]:
    found = []
    for member in _VPC_MEMBERS:
        id_key = kind(member.kind).id_key
        found += [
            Blocker(item[id_key], member.label, member.about(item), owner_of(tags_of(item), ctx.cluster))
            for item in describe_kind(ctx, member.kind, [{"Name": member.vpc_filter, "Values": [vpc_id]}])
            if member.counts(item)
        ]
    return found


def _load_balancers(ctx: Context, scope: Scope) -> dict[str, Blocker]:
    """Classic and v2 load balancers in the scope's VPC, subnet or security group, by name."""
    found: dict[str, Blocker] = {}
    classic = [lb for lb in _elb.describe_load_balancers(ctx) if _in(scope, lb)]
    classic_tags = _elb.describe_tags(ctx, [lb["LoadBalancerName"] for lb in classic])
    for lb in classic:
        name = lb["LoadBalancerName"]
        found[name] = Blocker(name, "classic load balancer", "", owner_of(classic_tags.get(name), ctx.cluster))
    modern = [lb for lb in _elbv2.describe_load_balancers(ctx) if _in(scope, lb)]
    modern_tags = _elbv2.describe_tags(ctx, [lb["LoadBalancerArn"] for lb in modern])
    for lb in modern:
        found[lb["LoadBalancerName"]] = Blocker(
            lb["LoadBalancerArn"],
            f"{lb.get('Type', 'v2')} load balancer",
            lb["LoadBalancerName"],
            owner_of(modern_tags.get(lb["LoadBalancerArn"]), ctx.cluster),
        )
    return found


def _target_group_users(ctx: Context, arn: str) -> list[Blocker]:
    """The load balancers whose listeners still forward to a target group."""
    groups = _elbv2.describe_target_groups(ctx, [arn])
    users = sorted({a for g in groups for a in g.get("LoadBalancerArns", [])})
    tags = _elbv2.describe_tags(ctx, users)
    return [
        Blocker(
            a, "load balancer", f"a listener forwards to {arn.rsplit('/', 2)[-2]}", owner_of(tags.get(a), ctx.cluster)
        )
        for a in users
    ]


def _in(scope: Scope, lb: Mapping[str, Any]) -> bool:
    subnets = set(lb.get("Subnets") or []) | {z.get("SubnetId") for z in lb.get("AvailabilityZones") or []}
    if scope.group_id:
        return scope.group_id in (lb.get("SecurityGroups") or [])
    if scope.subnet_id:
        return scope.subnet_id in subnets
    return scope.vpc_id in (lb.get("VPCId"), lb.get("VpcId"))
