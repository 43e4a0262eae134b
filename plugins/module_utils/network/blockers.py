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

from ..aws.ec2 import describe, tags_of
from ..kernel.context import Context
from ..kernel.tags import CAPA_TAG_PREFIX, OWNED, ROLE_TAG, cloud_provider_tag_key, cluster_tag_key, tags_to_dict

OTHER_CLUSTER_PREFIX = CAPA_TAG_PREFIX + "cluster/"
CLOUD_PROVIDER_PREFIX = "kubernetes.io/cluster/"
ELB_TAGS_CHUNK = 20  # DescribeTags (classic and v2) takes at most 20 names / ARNs.
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
    enis = describe(ctx, "describe_network_interfaces", "NetworkInterfaces", Filters=_eni_filter(scope))
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
    reservations = describe(ctx, "describe_instances", "Reservations", InstanceIds=ids)
    return {i["InstanceId"]: tags_of(i) for r in reservations for i in r.get("Instances", [])}


def _referencing_groups(ctx: Context, group_id: str) -> list[Blocker]:
    groups = describe(
        ctx,
        "describe_security_groups",
        "SecurityGroups",
        Filters=[{"Name": "ip-permission.group-id", "Values": [group_id]}],
    )
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


def _vpc_members(ctx: Context, vpc_id: str) -> list[Blocker]:
    in_vpc = [{"Name": "vpc-id", "Values": [vpc_id]}]
    cluster = ctx.cluster
    found = [
        Blocker(s["SubnetId"], "subnet", s.get("CidrBlock", ""), owner_of(tags_of(s), cluster))
        for s in describe(ctx, "describe_subnets", "Subnets", Filters=in_vpc)
    ]
    found += [
        Blocker(g["GroupId"], "security group", g.get("GroupName", ""), owner_of(tags_of(g), cluster))
        for g in describe(ctx, "describe_security_groups", "SecurityGroups", Filters=in_vpc)
        if g.get("GroupName") != "default"
    ]
    found += [
        Blocker(t["RouteTableId"], "route table", "", owner_of(tags_of(t), cluster))
        for t in describe(ctx, "describe_route_tables", "RouteTables", Filters=in_vpc)
        if not any(a.get("Main") for a in t.get("Associations", []))
    ]
    found += [
        Blocker(g["InternetGatewayId"], "internet gateway", "attached", owner_of(tags_of(g), cluster))
        for g in describe(
            ctx,
            "describe_internet_gateways",
            "InternetGateways",
            Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}],
        )
    ]
    found += [
        Blocker(n["NatGatewayId"], "NAT gateway", n.get("State", ""), owner_of(tags_of(n), cluster))
        for n in describe(ctx, "describe_nat_gateways", "NatGateways", Filter=in_vpc)
        if n.get("State") not in ("deleted", "deleting")
    ]
    found += [
        Blocker(e["VpcEndpointId"], "VPC endpoint", e.get("ServiceName", ""), owner_of(tags_of(e), cluster))
        for e in describe(ctx, "describe_vpc_endpoints", "VpcEndpoints", Filters=in_vpc)
        if e.get("State", "").lower() not in ("deleted", "deleting")
    ]
    return found


def _load_balancers(ctx: Context, scope: Scope) -> dict[str, Blocker]:
    """Classic and v2 load balancers in the scope's VPC, subnet or security group, by name."""
    found: dict[str, Blocker] = {}
    elb = ctx.client("elb")
    classic = [
        lb for lb in elb.paginate("describe_load_balancers").get("LoadBalancerDescriptions", []) if _in(scope, lb)
    ]
    classic_tags = _elb_tags(elb, "LoadBalancerNames", [lb["LoadBalancerName"] for lb in classic], "LoadBalancerName")
    for lb in classic:
        name = lb["LoadBalancerName"]
        found[name] = Blocker(name, "classic load balancer", "", owner_of(classic_tags.get(name), ctx.cluster))
    v2 = ctx.client("elbv2")
    modern = [lb for lb in v2.paginate("describe_load_balancers").get("LoadBalancers", []) if _in(scope, lb)]
    modern_tags = _elb_tags(v2, "ResourceArns", [lb["LoadBalancerArn"] for lb in modern], "ResourceArn")
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
    v2 = ctx.client("elbv2")
    groups = v2.paginate("describe_target_groups", TargetGroupArns=[arn]).get("TargetGroups", [])
    users = sorted({a for g in groups for a in g.get("LoadBalancerArns", [])})
    tags = _elb_tags(v2, "ResourceArns", users, "ResourceArn")
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


def _elb_tags(client: Any, param: str, keys: list[str], key_field: str) -> dict[str, dict[str, str]]:
    tags: dict[str, dict[str, str]] = {}
    for start in range(0, len(keys), ELB_TAGS_CHUNK):
        answer = client.describe_tags(**{param: keys[start : start + ELB_TAGS_CHUNK]})
        for item in answer.get("TagDescriptions", []):
            tags[item[key_field]] = tags_to_dict(item.get("Tags"))
    return tags
