# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the status of a whole cluster (``capa_cluster_info``) - what it owns, CAPA's conditions, orphans.

Two layers:

* observe: :data:`KINDS` is a table of resource kinds; each entry makes ONE (paginated) request filtered by the
  cluster's tags and says how to read an id, a name, a state and a few fields from AWS's answer. How an EC2 kind
  is described and identified comes from the one table of EC2 kinds (``kernel.resources``); an entry here only adds
  its filter and the fields this module reports. Adding a kind (auto scaling groups, launch templates, EKS) is one
  entry.
* decide: :func:`summarise` turns the raw answers and the cluster spec into ``resources``, ``counts``,
  ``conditions``, ``machines``, ``orphans`` and ``cloud_provider_resources``. It is pure, so it is unit-tested on
  recorded describe output.

Nothing here mutates AWS: the tier never calls ``ctx.ops``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from ..aws import elb as _elb
from ..aws.autoscaling import owned_groups
from ..aws.ec2 import cluster_instances_request, describe_by_ids, describe_kind
from ..aws.ec2 import kind as ec2_kind
from ..aws.elbv2 import describe_load_balancers_by_name
from ..aws.tagging import cluster_owned
from ..kernel.conditions import condition
from ..kernel.context import Context
from ..kernel.errors import SpecError
from ..kernel.options import argument_spec as spec_of
from ..kernel.tags import (
    CAPA_TAG_PREFIX,
    OWNED,
    ROLE_BASTION,
    ROLE_PUBLIC,
    ROLE_TAG,
    carries_either_tag,
    cloud_provider_tag_key,
    cluster_tag_key,
    dict_to_tags,
    either_tag_filter,
    tags_to_dict,
    vpc_name,
)
from ..kernel.tier import Outcome
from ..kernel.validation import check_resource_id
from ..network.elb_plan import generate_lb_name
from ..network.external_resources import cloud_provider_tagged
from ..network.security_group import BASTION, KIND_ROLES
from ..network.subnet_plan import choose_zones, default_subnets
from ..workload.access import KUBERNETES_API, KubernetesApiSettings
from .cluster_nodes import FARGATE_PROFILE_LABEL, NODEGROUP_LABEL, NodesRead, read_eks_nodes, read_self_managed_nodes
from .eks_status import EksObserved, EksWant, eks_summary, iso_time, observe_eks

# What capa_instance read of a control-plane machine (machines/plan.py CERTIFICATES_EXPIRY_TAG; the cluster
# package reads tags, it does not import the machine tier's).
CERTIFICATES_EXPIRY_TAG = "clusterapi.aws/certificates-expiry"
# The tag capa_instance puts on every machine: which group (control plane, machine deployment, bastion) it is in.
MACHINE_GROUP_TAG = "clusterapi.aws/machine-group"
CONTROL_PLANE_GROUP = "control-plane"
BASTION_GROUP = "bastion"
# Bootstrap data CAPA stores for a machine until it has joined (Secrets Manager name / SSM parameter path).
SECRET_PREFIX = "aws.cluster.x-k8s.io/"
SSM_PREFIX = "/cluster.x-k8s.io/"

# Deleted NAT gateways stay visible for about an hour; they are history, not resources.
CONTROL_PLANE_PORT = 6443  # the load balancer's listener (CAPA's default API server port)
LIVE_NAT_STATES = ["pending", "available", "failed"]
# CAPA's own NAT/EIP role.
COMMON_ROLE = "common"

NAT_MODES = ("per_az", "single", "none")
LB_TYPES = ("classic", "nlb", "external", "disabled")
CLUSTER_KINDS = ("unmanaged", "eks")


# ----------------------------------------------------------------------------------------------------------------
# The spec, as far as this module reads it
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SubnetWant:
    id: str | None
    availability_zone: str | None
    cidr_block: str | None
    is_public: bool


@dataclass(frozen=True)
class ClusterView:
    """The keys of the normalised cluster spec (``capa_cluster_spec``'s ``cluster``) that status depends on."""

    cluster: str
    kind: str = "unmanaged"
    byo_vpc_id: str | None = None
    az_limit: int = 3
    az_selection: str = "Ordered"
    subnets: tuple[SubnetWant, ...] = ()
    nat_gateways: str = "per_az"
    security_group_overrides: Mapping[str, str] = field(default_factory=dict)
    bastion: bool = False
    lb_type: str = "classic"
    lb_name: str = ""
    control_plane_replicas: int = 1
    machine_deployments: Mapping[str, int] = field(default_factory=dict)
    # name -> (asg or fleet, the desired size the spec gives; an auto scaling group's own value counts first)
    pools: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    eks: EksWant | None = None
    endpoint_host: str | None = None  # control_plane_endpoint.host (a cluster without a load balancer)
    endpoint_port: int = 6443

    @property
    def machine_pools(self) -> frozenset[str]:
        return frozenset(self.pools)

    def machine_groups(self) -> dict[str, int]:
        """Every machine group the spec explains, with its desired size."""
        groups = {}
        if self.kind == "unmanaged":
            groups[CONTROL_PLANE_GROUP] = self.control_plane_replicas
        if self.bastion:
            groups[BASTION_GROUP] = 1
        groups.update(self.machine_deployments)
        return groups

    @property
    def classic_lb_name(self) -> str | None:
        """The classic load balancer the spec names (CAPA's ``<cluster>-apiserver`` unless it gives one)."""
        if self.lb_type == "external":
            return self.lb_name
        if self.lb_type == "classic" and self.kind == "unmanaged":
            return self.lb_name or generate_lb_name(self.cluster)
        return None

    def security_group_roles(self) -> tuple[str, ...]:
        roles = KIND_ROLES[self.kind]
        return (BASTION, *roles) if self.bastion else roles


def _section(spec: Mapping[str, Any], key: str, field_name: str) -> Mapping[str, Any]:
    value = spec.get(key) or {}
    if not isinstance(value, Mapping):
        raise SpecError(field_name, "must be a dict")
    return value


def _choice(value: Any, choices: tuple[str, ...], field_name: str) -> str:
    if value not in choices:
        raise SpecError(field_name, f"'{value}' is not one of {', '.join(choices)}")
    return value


def _count(value: Any, field_name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(field_name, f"'{value}' is not a non-negative integer")
    return value


def read_spec(spec: Mapping[str, Any], cluster: str) -> ClusterView:
    """The cluster spec as this module needs it; missing keys take CAPA's defaults. Raises SpecError."""
    if spec.get("name") not in (None, "", cluster):
        raise SpecError("spec.name", f"'{spec['name']}' is not cluster_name '{cluster}'")
    network = _section(spec, "network", "spec.network")
    vpc = _section(network, "vpc", "spec.network.vpc")
    byo_vpc = vpc.get("id") or None
    if byo_vpc:
        check_resource_id(byo_vpc, "vpc", "spec.network.vpc.id")
    subnets = []
    for index, subnet in enumerate(network.get("subnets") or []):
        if not isinstance(subnet, Mapping):
            raise SpecError(f"spec.network.subnets[{index}]", "must be a dict")
        subnets.append(
            SubnetWant(
                id=subnet.get("id") or None,
                availability_zone=subnet.get("availability_zone") or None,
                cidr_block=subnet.get("cidr_block") or None,
                is_public=bool(subnet.get("is_public")),
            )
        )
    lb = _section(spec, "control_plane_load_balancer", "spec.control_plane_load_balancer")
    deployments: dict[str, int] = {}
    for index, deployment in enumerate(spec.get("machine_deployments") or []):
        if not isinstance(deployment, Mapping) or not deployment.get("name"):
            raise SpecError(f"spec.machine_deployments[{index}]", "needs a name")
        deployments[deployment["name"]] = _count(
            deployment.get("replicas", 1), f"spec.machine_deployments[{index}].replicas"
        )
    overrides = network.get("security_group_overrides") or {}
    if not isinstance(overrides, Mapping):
        raise SpecError("spec.network.security_group_overrides", "must be a dict of role to security group id")
    return ClusterView(
        cluster=cluster,
        kind=_choice(spec.get("kind") or "unmanaged", CLUSTER_KINDS, "spec.kind"),
        byo_vpc_id=byo_vpc,
        az_selection=vpc.get("availability_zone_selection") or "Ordered",
        az_limit=_count(vpc.get("availability_zone_usage_limit", 3), "spec.network.vpc.availability_zone_usage_limit"),
        subnets=tuple(subnets),
        nat_gateways=_choice(network.get("nat_gateways") or "per_az", NAT_MODES, "spec.network.nat_gateways"),
        security_group_overrides=dict(overrides),
        bastion=bool(_section(spec, "bastion", "spec.bastion").get("enabled")),
        lb_type=_choice(lb.get("type") or "classic", LB_TYPES, "spec.control_plane_load_balancer.type"),
        lb_name=lb.get("name") or "",
        control_plane_replicas=_count(
            _section(spec, "control_plane", "spec.control_plane").get("replicas", 1), "spec.control_plane.replicas"
        ),
        machine_deployments=deployments,
        pools=_pools(spec.get("machine_pools") or []),
        eks=EksWant.from_spec(cluster, _section(spec, "eks", "spec.eks")) if spec.get("kind") == "eks" else None,
        endpoint_host=_section(spec, "control_plane_endpoint", "spec.control_plane_endpoint").get("host") or None,
        endpoint_port=_section(spec, "control_plane_endpoint", "spec.control_plane_endpoint").get("port") or 6443,
    )


def _pools(pools: list[Any]) -> dict[str, tuple[str, int]]:
    found = {}
    for pool in pools:
        if isinstance(pool, Mapping) and pool.get("name"):
            desired = pool.get("desired_capacity")
            found[pool["name"]] = (
                pool.get("kind") or "asg",
                desired if desired is not None else pool.get("min_size", 0),
            )
    return found


# ----------------------------------------------------------------------------------------------------------------
# Observe: one request per resource type
# ----------------------------------------------------------------------------------------------------------------
@dataclass
class Scope:
    """What the fetchers need: the cluster, a VPC given by id, and requests several kinds share."""

    cluster: str
    byo_vpc_id: str | None = None
    shared: dict[str, Any] = field(default_factory=dict)

    def owner_filter(self) -> list[dict[str, Any]]:
        return [{"Name": f"tag:{cluster_tag_key(self.cluster)}", "Values": [OWNED]}]

    def either_tag_filter(self) -> list[dict[str, Any]]:
        """CAPA's owner tag or the cloud provider's tag (``kernel.tags.either_tag_filter``); other keys that
        happen to match are told apart by :func:`ownership`."""
        return either_tag_filter(self.cluster)


Fetch = Callable[[Context, Scope], list[dict[str, Any]]]


@dataclass(frozen=True)
class Kind:
    """One resource kind: how to fetch it (one request) and read it."""

    name: str
    fetch: Fetch
    ident: Callable[[dict[str, Any]], str]
    fields: Callable[[dict[str, Any]], dict[str, Any]] = lambda raw: {}
    state: Callable[[dict[str, Any]], str | None] = lambda raw: None
    name_of: Callable[[dict[str, Any]], str | None] = lambda raw: tags_to_dict(raw.get("Tags")).get("Name")
    tags: Callable[[dict[str, Any]], dict[str, str]] = lambda raw: tags_to_dict(raw.get("Tags"))


def _ec2(name: str, filters: Callable[[Scope], list[dict[str, Any]]], **params: Any) -> Fetch:
    """ONE describe of the EC2 kind ``name``, the table's way, with the kind's filters."""

    def fetch(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
        return describe_kind(ctx, name, filters(scope), **params)

    return fetch


def _ec2_id(name: str) -> Callable[[dict[str, Any]], str]:
    id_key = ec2_kind(name).id_key
    return lambda raw: raw[id_key]


def _fetch_vpcs(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    if "vpcs" not in scope.shared:
        if not scope.byo_vpc_id:
            scope.shared["vpcs"] = describe_kind(ctx, "vpc", scope.owner_filter())
        else:
            # A VPC brought by id carries no owner tag; it is looked up by id instead (then owned VPCs are not
            # listed).
            vpcs = ec2_kind("vpc")
            scope.shared["vpcs"] = describe_by_ids(ctx, vpcs.describe, vpcs.list_key, "VpcIds", [scope.byo_vpc_id])
    return scope.shared["vpcs"]


def _fetch_subnets(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """The subnets of the cluster's VPCs (the ones it owns, or the one brought by id) that carry either tag.

    A subnet lives in its VPC, and the cluster makes subnets only in a VPC it owns, so none of its subnets is
    elsewhere. Asked by VPC, this is the subnet tier's own request (``network/subnet.py``): a run that changed
    nothing answers it once (``kernel/shared_reads.py``), where asking by tag anywhere was a second question. No
    VPC, no request.
    """
    vpc_ids = sorted({vpc["VpcId"] for vpc in _fetch_vpcs(ctx, scope)})
    if not vpc_ids:
        return []
    found = describe_kind(ctx, "subnet", [{"Name": "vpc-id", "Values": vpc_ids}])
    return [s for s in found if carries_either_tag(tags_to_dict(s.get("Tags")), scope.cluster)]


def _fetch_instances(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    # The machine groups' own request (machines/instance.py), so a run that changed nothing answers it once.
    request = cluster_instances_request(ctx)
    reservations = describe_kind(ctx, "instance", request["Filters"], MaxResults=request["MaxResults"])
    return [instance for reservation in reservations for instance in reservation.get("Instances", [])]


def _fetch_nat_gateways(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    # Asked in every state, as the network tier asks (kernel/shared_reads.py: one request on a run that changes
    # nothing); deleted ones stay visible for about an hour and are history, not resources.
    if "nat_gateways" not in scope.shared:
        found = describe_kind(ctx, "nat_gateway", scope.owner_filter())
        scope.shared["nat_gateways"] = [nat for nat in found if nat.get("State") in LIVE_NAT_STATES]
    return scope.shared["nat_gateways"]


def _no_pool_to_read(ctx: Context, scope: Scope) -> bool:
    """Whether the cluster can have no machine pool's launch template or auto scaling group to read: its spec has no
    machine pools, and the tagging API's answer (the preflight's request) lists no launch template of the cluster.

    A pool's group has the cluster's launch template for as long as it exists (``machines/asg.py`` creates the
    template first and deletes it only once the group is gone), and the tagging API lists templates, not groups; so
    a spec without pools has them only as orphans, and with no template listed there is neither to describe. With
    pools both are always read: a template just created can be missing from that eventually consistent API for a
    while, and a pool's status must not say so."""
    listed = any(arn_parts(r["ResourceARN"])[1].startswith("launch-template/") for r in _tagged(ctx, scope))
    return not listed and not scope.shared.get("pools")


def _fetch_launch_templates(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """The cluster's launch templates (the pool tier's request), when it can have any (:func:`_no_pool_to_read`)."""
    if _no_pool_to_read(ctx, scope):
        return []
    return describe_kind(ctx, "launch_template", scope.owner_filter())


def _fetch_elastic_ips(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """The cluster's Elastic IPs, without a request when each is a live NAT gateway's: the tagging API's answer (the
    preflight's request) lists every one the cluster owns with all its tags, and each NAT gateway its addresses with
    their public IP and association - what ``DescribeAddresses`` would say of them.

    An owned address no live NAT gateway holds (freed, leaked, its gateway deleting), or a gateway's address the
    tagging API does not list (not the cluster's, or just allocated: that API is eventually consistent), makes the
    describe, as before: then the answer is AWS's own.
    """
    tagged = {
        arn_parts(r["ResourceARN"])[1].split("/", 1)[1]: r
        for r in _tagged(ctx, scope)
        if arn_parts(r["ResourceARN"])[1].startswith("elastic-ip/")
    }
    held = {
        address["AllocationId"]: address
        for nat in _fetch_nat_gateways(ctx, scope)
        for address in nat.get("NatGatewayAddresses") or []
        if address.get("AllocationId")
    }
    if set(tagged) != set(held):
        return describe_kind(ctx, "elastic_ip", scope.owner_filter())
    return [
        {
            "AllocationId": allocation,
            "PublicIp": address.get("PublicIp"),
            "AssociationId": address.get("AssociationId"),
            "Domain": "vpc",
            "Tags": tagged[allocation].get("Tags") or [],
        }
        for allocation, address in sorted(held.items())
    ]


def _fetch_asgs(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """The cluster's auto scaling groups (the pool tier's request), when it can have any (:func:`_no_pool_to_read`):
    the one read a spec without machine pools needs no longer than its launch templates."""
    if _no_pool_to_read(ctx, scope):
        return []
    return owned_groups(ctx, scope.cluster)


def _fetch_classic_lbs(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """The cluster's classic ELBs with their tags: the spec's by its name, and those the tagging API lists with either
    tag (AWS files a classic load balancer as ``elasticloadbalancing:loadbalancer/<name>``; CAPA's garbage collector
    finds the cloud provider's that way too).

    Asked by name rather than the region's every load balancer (the ELB API has no tag filter): a read the size of
    the cluster, not of the account, which ``capa_elb``'s read of the same name answers on a run that changed nothing
    (``kernel/shared_reads.py``, a read by id). The spec's name is always asked, so a load balancer the tagging API
    does not list yet (it is eventually consistent) is still seen. A missing one among several (the tagging API still
    lists a deleted one, or the spec's is gone while the cloud provider's stay) fails the by-name read as a whole
    (``LoadBalancerNotFound``): then the region's are read and their tags checked, one request more.
    """
    tagged = {_arn_name(r) for r in _tagged(ctx, scope) + _cloud_tagged(ctx, scope) if _classic_lb(r)}
    names = sorted(tagged | {name for name in (scope.shared.get("lb_name"),) if name})
    if not names:
        return []
    lbs = _elb.describe_named(ctx, names)
    if lbs is None:  # one name alone is simply missing (no load balancer yet); of several, which is unknown
        lbs = _elb.describe_load_balancers(ctx) if len(names) > 1 else []
    own_tags = _elb.describe_tags(ctx, [lb["LoadBalancerName"] for lb in lbs])
    tags = {name: dict_to_tags(pairs) for name, pairs in own_tags.items()}
    wanted = {cluster_tag_key(scope.cluster), cloud_provider_tag_key(scope.cluster)}
    found = []
    for lb in lbs:
        lb = dict(lb, Tags=tags.get(lb["LoadBalancerName"], []))
        # Keep the cluster's (either tag) and the one an external spec names (bring your own, untagged).
        if wanted & set(tags_to_dict(lb["Tags"])) or lb["LoadBalancerName"] == scope.shared.get("external_lb"):
            found.append(lb)
    return found


def _tagged(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """ONE tagging-API request for every CAPA-owned v2 LB, target group, bootstrap secret and SSM parameter (the
    preflight's request: ``aws.tagging.cluster_owned``)."""
    if "tagged" not in scope.shared:
        scope.shared["tagged"] = cluster_owned(ctx)
    return scope.shared["tagged"]


_ARN_RESOURCE = re.compile(r"^arn:[^:]+:(?P<service>[^:]+):[^:]*:[^:]*:(?P<resource>.+)$")


def arn_parts(arn: str) -> tuple[str, str]:
    match = _ARN_RESOURCE.match(arn)
    return (match["service"], match["resource"]) if match else ("", "")


def _v2_lb(resource: str) -> bool:
    # loadbalancer/net/<name>/<id> (v2) vs loadbalancer/<name> (classic, which the ELB API describes).
    return resource.startswith("loadbalancer/") and resource.count("/") == 3


def _classic_lb(resource: Mapping[str, Any]) -> bool:
    service, name = arn_parts(resource["ResourceARN"])
    return service == "elasticloadbalancing" and name.startswith("loadbalancer/") and name.count("/") == 1


def _tagged_of(predicate: Callable[[str, str], bool]) -> Fetch:
    def fetch(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
        return [r for r in _tagged(ctx, scope) if predicate(*arn_parts(r["ResourceARN"]))]

    return fetch


CLOUD_PROVIDER_TYPES = ("elasticloadbalancing:loadbalancer", "elasticloadbalancing:targetgroup")


def _cloud_tagged(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
    """ONE more tagging-API request: the v2 load balancers and target groups the cloud provider made.

    They carry only ``kubernetes.io/cluster/<name>``, which the request above (CAPA's tag) cannot find, and the
    tagging API ANDs its tag filters, so one request cannot ask for either tag.
    """
    if "cloud_tagged" not in scope.shared:
        scope.shared["cloud_tagged"] = cloud_provider_tagged(ctx, CLOUD_PROVIDER_TYPES)
    return scope.shared["cloud_tagged"]


def _elb_tagged_of(predicate: Callable[[str, str], bool]) -> Fetch:
    """Load balancers and target groups with either tag (CAPA's first: a resource with both is CAPA's)."""

    def fetch(ctx: Context, scope: Scope) -> list[dict[str, Any]]:
        seen: set[str] = set()
        out = []
        for r in _tagged(ctx, scope) + _cloud_tagged(ctx, scope):
            if r["ResourceARN"] not in seen and predicate(*arn_parts(r["ResourceARN"])):
                seen.add(r["ResourceARN"])
                out.append(r)
        return out

    return fetch


def _secret_name(arn: str) -> str:
    # secret:<name>-<6 random characters AWS appends>
    name = arn_parts(arn)[1].split(":", 1)[-1]
    return name[:-7] if re.search(r"-[A-Za-z0-9]{6}$", name) else name


def _arn_name(raw: dict[str, Any]) -> str:
    resource = arn_parts(raw["ResourceARN"])[1]
    if resource.startswith("parameter/"):
        return "/" + resource[len("parameter/") :]
    if resource.startswith("secret:"):
        return _secret_name(raw["ResourceARN"])
    parts = resource.split("/")
    return parts[2] if _v2_lb(resource) else parts[1]  # loadbalancer/<type>/<name>/<id>, or <kind>/<name>


def _default_route(table: Mapping[str, Any]) -> str | None:
    for route in table.get("Routes", []):
        if route.get("DestinationCidrBlock") == "0.0.0.0/0":
            return route.get("NatGatewayId") or route.get("GatewayId")
    return None


def _machine_of(raw: dict[str, Any]) -> dict[str, Any]:
    return {"machine": tags_to_dict(raw.get("Tags")).get("Name")}


KINDS: tuple[Kind, ...] = (
    Kind(
        "vpc",
        _fetch_vpcs,
        _ec2_id("vpc"),
        fields=lambda r: {"cidr_block": r.get("CidrBlock")},
        state=lambda r: r.get("State"),
    ),
    Kind(
        "internet_gateway",
        _ec2("internet_gateway", Scope.owner_filter),
        _ec2_id("internet_gateway"),
        fields=lambda r: {"vpc_id": next((a["VpcId"] for a in r.get("Attachments", [])), None)},
        state=lambda r: next((a.get("State") for a in r.get("Attachments", [])), "detached"),
    ),
    Kind(
        "subnet",
        # Either tag: CAPA's subnets carry both, subnets brought by id carry the cloud provider's "shared".
        _fetch_subnets,
        _ec2_id("subnet"),
        fields=lambda r: {
            "vpc_id": r.get("VpcId"),
            "availability_zone": r.get("AvailabilityZone"),
            "cidr_block": r.get("CidrBlock"),
            "public": tags_to_dict(r.get("Tags")).get(ROLE_TAG) == ROLE_PUBLIC,
        },
        state=lambda r: r.get("State"),
    ),
    Kind(
        "route_table",
        _ec2("route_table", Scope.owner_filter),
        _ec2_id("route_table"),
        fields=lambda r: {
            "vpc_id": r.get("VpcId"),
            "subnet_ids": sorted(a["SubnetId"] for a in r.get("Associations", []) if a.get("SubnetId")),
            "default_route": _default_route(r),
        },
    ),
    Kind(
        "nat_gateway",
        _fetch_nat_gateways,
        _ec2_id("nat_gateway"),
        fields=lambda r: {
            "vpc_id": r.get("VpcId"),
            "subnet_id": r.get("SubnetId"),
            "allocation_ids": [a["AllocationId"] for a in r.get("NatGatewayAddresses", []) if a.get("AllocationId")],
        },
        state=lambda r: r.get("State"),
    ),
    Kind(
        "elastic_ip",
        _fetch_elastic_ips,
        _ec2_id("elastic_ip"),
        fields=lambda r: {"public_ip": r.get("PublicIp"), "association_id": r.get("AssociationId")},
    ),
    Kind(
        "security_group",
        # Either tag: the cloud provider's groups (for its load balancers) carry only kubernetes.io/cluster/<c>.
        _ec2("security_group", Scope.either_tag_filter),
        _ec2_id("security_group"),
        fields=lambda r: {"vpc_id": r.get("VpcId")},
        name_of=lambda r: r.get("GroupName"),
    ),
    Kind(
        "instance",
        _fetch_instances,
        _ec2_id("instance"),
        fields=lambda r: {
            "group": tags_to_dict(r.get("Tags")).get(MACHINE_GROUP_TAG),
            "launched_by": _launcher(tags_to_dict(r.get("Tags"))),
            "pool": _pool_of(tags_to_dict(r.get("Tags"))),
            "vpc_id": r.get("VpcId"),
            "subnet_id": r.get("SubnetId"),
            "availability_zone": r.get("Placement", {}).get("AvailabilityZone"),
            # A control-plane machine's kube-apiserver certificate expiry, as capa_instance read it once.
            "certificates_expire": tags_to_dict(r.get("Tags")).get(CERTIFICATES_EXPIRY_TAG),
            "launched_at": iso_time(r.get("LaunchTime")),
            # The name kubeadm and nodeadm register a Node under (EC2's private DNS name) until a cloud provider
            # sets its providerID.
            "private_dns_name": r.get("PrivateDnsName") or None,
        },
        state=lambda r: r.get("State", {}).get("Name"),
    ),
    Kind(
        "load_balancer",
        _fetch_classic_lbs,
        lambda r: r["LoadBalancerName"],
        fields=lambda r: {"dns_name": r.get("DNSName"), "vpc_id": r.get("VPCId"), "scheme": r.get("Scheme")},
        name_of=lambda r: r["LoadBalancerName"],
    ),
    Kind(
        "load_balancer_v2",
        _elb_tagged_of(lambda service, resource: service == "elasticloadbalancing" and _v2_lb(resource)),
        lambda r: r["ResourceARN"],
        fields=lambda r: {"type": arn_parts(r["ResourceARN"])[1].split("/")[1]},
        name_of=_arn_name,
    ),
    Kind(
        "target_group",
        _elb_tagged_of(
            lambda service, resource: service == "elasticloadbalancing" and resource.startswith("targetgroup/")
        ),
        lambda r: r["ResourceARN"],
        name_of=_arn_name,
    ),
    Kind(
        "auto_scaling_group",
        _fetch_asgs,
        lambda r: r["AutoScalingGroupName"],
        fields=lambda r: {"desired": r.get("DesiredCapacity"), "min": r.get("MinSize"), "max": r.get("MaxSize")},
        state=lambda r: r.get("Status") or "active",
        name_of=lambda r: r["AutoScalingGroupName"],
    ),
    Kind(
        "launch_template",
        _fetch_launch_templates,
        _ec2_id("launch_template"),
        fields=lambda r: {"latest_version": r.get("LatestVersionNumber")},
        name_of=lambda r: r.get("LaunchTemplateName"),
    ),
    Kind(
        "secret",
        _tagged_of(lambda service, resource: service == "secretsmanager"),
        lambda r: r["ResourceARN"],
        fields=_machine_of,
        name_of=_arn_name,
    ),
    Kind(
        "ssm_parameter",
        _tagged_of(lambda service, resource: service == "ssm" and resource.startswith("parameter/")),
        lambda r: r["ResourceARN"],
        fields=_machine_of,
        name_of=_arn_name,
    ),
)


def _pool_of(tags: Mapping[str, str]) -> str | None:
    """The machine pool an instance belongs to (its auto scaling group, or the fleet's pool tag)."""
    return tags.get("aws:autoscaling:groupName") or tags.get("clusterapi.aws/machine-pool")


def _launcher(tags: Mapping[str, str]) -> str:
    """Who launches an instance: an auto scaling group, an EC2 fleet, or capa_instance (a machine of a group)."""
    if "aws:autoscaling:groupName" in tags:
        return "asg"
    if "aws:ec2:fleet-id" in tags:
        return "fleet"
    return "machine"


KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def observe(ctx: Context, scope: Scope) -> dict[str, list[dict[str, Any]]]:
    """AWS's raw answers per kind, one request (all pages) per AWS resource type."""
    return {kind.name: kind.fetch(ctx, scope) for kind in KINDS}


# ----------------------------------------------------------------------------------------------------------------
# Decide (pure)
# ----------------------------------------------------------------------------------------------------------------
def to_record(kind: Kind, raw: dict[str, Any]) -> dict[str, Any]:
    tags = kind.tags(raw)
    return {
        "id": kind.ident(raw),
        "name": kind.name_of(raw),
        "role": tags.get(ROLE_TAG),
        "state": kind.state(raw),
        **kind.fields(raw),
        "tags": tags,
    }


def ownership(tags: Mapping[str, str], cluster: str) -> str:
    """``owned`` (CAPA made it), ``cloud-provider`` (the in-cluster cloud provider made it) or ``used``."""
    if tags.get(cluster_tag_key(cluster)) == OWNED:
        return "owned"
    if tags.get(cloud_provider_tag_key(cluster)) == OWNED and not any(k.startswith(CAPA_TAG_PREFIX) for k in tags):
        return "cloud-provider"
    return "used"


@dataclass
class Facts:
    """Records split by ownership, plus what the decisions share."""

    view: ClusterView
    owned: dict[str, list[dict[str, Any]]]
    used: dict[str, list[dict[str, Any]]]
    cloud_provider: list[dict[str, Any]]
    vpc_id: str | None = None
    orphans: list[dict[str, Any]] = field(default_factory=list)

    def is_orphan(self, record: Mapping[str, Any]) -> bool:
        return any(o["id"] == record["id"] for o in self.orphans)

    def orphan(self, kind: str, record: Mapping[str, Any], reason: str) -> None:
        if not any(o["id"] == record["id"] for o in self.orphans):
            self.orphans.append({"kind": kind, "id": record["id"], "name": record.get("name"), "reason": reason})


def _split(view: ClusterView, raw: Mapping[str, list[dict[str, Any]]]) -> Facts:
    owned: dict[str, list[dict[str, Any]]] = {}
    used: dict[str, list[dict[str, Any]]] = {}
    cloud_provider = []
    for kind in KINDS:
        owned[kind.name], used[kind.name] = [], []
        for item in raw.get(kind.name, []):
            record = to_record(kind, item)
            who = ownership(record["tags"], view.cluster)
            if who == "owned":
                owned[kind.name].append(record)
            elif who == "cloud-provider":
                cloud_provider.append({"kind": kind.name, "id": record["id"], "name": record["name"]})
            else:
                used[kind.name].append(record)
    return Facts(view, owned, used, cloud_provider)


def _ids(records: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(r["id"] for r in records)


def vpc_condition(facts: Facts, vpc_id: str | None) -> dict[str, Any]:
    view, vpcs = facts.view, facts.owned["vpc"]
    if view.byo_vpc_id:
        facts.vpc_id = view.byo_vpc_id
        if any(v["id"] == view.byo_vpc_id for v in facts.used["vpc"] + vpcs):
            return condition(True, "Unmanaged", f"{view.byo_vpc_id} is brought by id; never changed")
        return condition(False, "VpcNotFound", f"{view.byo_vpc_id} (spec.network.vpc.id) does not exist")
    if not vpcs:
        return condition(False, "VpcNotFound", "no VPC carries the cluster's ownership tag")
    named = (
        [v for v in vpcs if v["id"] == vpc_id] if vpc_id else [v for v in vpcs if v["name"] == vpc_name(view.cluster)]
    )
    chosen = (named or ([] if vpc_id else sorted(vpcs, key=lambda v: v["id"])))[:1]
    if not chosen:
        for vpc in vpcs:
            facts.orphan("vpc", vpc, f"owned, but the cluster's VPC is {vpc_id}")
        return condition(False, "VpcNotFound", f"{vpc_id} (vpc_id) is not owned by the cluster")
    facts.vpc_id = chosen[0]["id"]
    for vpc in vpcs:
        if vpc["id"] != facts.vpc_id:
            facts.orphan("vpc", vpc, f"more than one VPC is owned; the cluster's is {facts.vpc_id}")
    if chosen[0]["state"] not in (None, "available"):
        return condition(False, "VpcCreationStarted", f"{facts.vpc_id} is {chosen[0]['state']}")
    return condition(True, "Available", facts.vpc_id)


def _outside_vpc(facts: Facts, kind: str) -> list[dict[str, Any]]:
    """Owned resources of a kind that live in another VPC than the cluster's (orphans), the rest returned."""
    inside = []
    for record in facts.owned[kind]:
        if facts.vpc_id and record.get("vpc_id") and record["vpc_id"] != facts.vpc_id:
            facts.orphan(kind, record, f"in {record['vpc_id']}, not in the cluster's VPC {facts.vpc_id}")
        else:
            inside.append(record)
    return inside


def internet_gateway_condition(facts: Facts) -> dict[str, Any]:
    gateways = facts.owned["internet_gateway"]
    if facts.view.byo_vpc_id:
        for gateway in gateways:
            facts.orphan("internet_gateway", gateway, "owned, but the cluster's VPC is brought by id")
        return condition(True, "Unmanaged", "the internet gateway of a VPC brought by id is not the cluster's")
    attached = [g for g in gateways if facts.vpc_id and g["vpc_id"] == facts.vpc_id]
    for gateway in gateways:
        if gateway not in attached[:1]:
            facts.orphan("internet_gateway", gateway, "not attached to the cluster's VPC, or a second one")
    if attached:
        return condition(True, "Available", attached[0]["id"])
    if gateways:
        return condition(False, "InternetGatewayFailed", f"{_ids(gateways)} not attached to the cluster's VPC")
    return condition(False, "InternetGatewayNotFound", "no internet gateway carries the cluster's ownership tag")


def subnets_condition(facts: Facts) -> dict[str, Any]:
    view = facts.view
    owned = _outside_vpc(facts, "subnet")
    if view.subnets:
        return _explicit_subnets(facts, owned)
    if view.byo_vpc_id:
        return condition(
            False, "SubnetsNotFound", "a VPC brought by id needs its subnets listed (spec.network.subnets)"
        )
    if not owned:
        return condition(False, "SubnetsNotFound", "no subnet carries the cluster's ownership tag")
    owned = _default_layout_orphans(facts, owned)
    zones: dict[str, set[bool]] = {}
    for subnet in owned:
        zones.setdefault(subnet["availability_zone"], set()).add(subnet["public"])
    incomplete = sorted(z for z, kinds in zones.items() if kinds != {True, False})
    if not any(s["public"] for s in owned):
        return condition(False, "SubnetsReconciliationFailed", "no public subnet (CAPA needs one)")
    if incomplete:
        return condition(False, "SubnetsReconciliationFailed", f"no public and private pair in {', '.join(incomplete)}")
    if len(zones) > view.az_limit:
        return condition(False, "SubnetsReconciliationFailed", f"{len(zones)} AZs, the spec allows {view.az_limit}")
    return condition(True, "Available", f"{len(owned)} subnets in {', '.join(sorted(zones))}")


def _default_layout_orphans(facts: Facts, owned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Owned subnets outside CAPA's default layout (carved from the VPC over the AZs in use, up to the limit)
    become orphans; the others are returned."""
    view = facts.view
    vpc = next((v for v in facts.owned["vpc"] if v["id"] == facts.vpc_id), None)
    if not vpc or not vpc.get("cidr_block"):
        return owned
    in_use = sorted({s["availability_zone"] for s in owned})
    zones = choose_zones(in_use, view.az_limit, view.az_selection, view.cluster, in_use)
    try:
        layout = {(d.cidr_block, d.availability_zone) for d in default_subnets(vpc["cidr_block"], zones)}
    except SpecError:
        return owned  # a VPC too small to carve: the checks below say what is wrong
    kept = []
    for subnet in owned:
        where = (subnet["cidr_block"], subnet["availability_zone"])
        if where in layout:
            kept.append(subnet)
        else:
            facts.orphan("subnet", subnet, f"{where[0]} in {where[1]} is not in CAPA's default layout")
    return kept


def _explicit_subnets(facts: Facts, owned: list[dict[str, Any]]) -> dict[str, Any]:
    wanted = [w for w in facts.view.subnets if not w.id]
    byo_ids = {w.id for w in facts.view.subnets if w.id}
    missing = []
    for want in wanted:
        if not any(
            s["cidr_block"] == want.cidr_block and s["availability_zone"] == want.availability_zone for s in owned
        ):
            missing.append(f"{want.cidr_block} in {want.availability_zone}")
    for subnet in owned:
        explained = subnet["id"] in byo_ids or any(
            s.cidr_block == subnet["cidr_block"] and s.availability_zone == subnet["availability_zone"] for s in wanted
        )
        if not explained:
            facts.orphan(
                "subnet",
                subnet,
                f"{subnet['cidr_block']} in {subnet['availability_zone']} is not in the spec's subnets",
            )
    seen = {s["id"] for s in owned + facts.used["subnet"]}
    unseen = sorted(i for i in byo_ids if i not in seen)
    if missing:
        return condition(False, "SubnetsNotFound", f"missing: {', '.join(missing)}")
    if unseen:
        return condition(False, "SubnetsNotFound", f"{', '.join(unseen)} not tagged for the cluster (run capa_subnet)")
    return condition(True, "Available", f"{len(wanted) + len(byo_ids)} subnets")


def nat_gateways_condition(facts: Facts) -> dict[str, Any]:
    view = facts.view
    subnets = {s["id"]: s for s in facts.owned["subnet"] + facts.used["subnet"]}
    nats = sorted(_outside_vpc(facts, "nat_gateway"), key=lambda n: n["id"])
    private_azs = sorted(
        {s["availability_zone"] for s in subnets.values() if not s["public"] and not facts.is_orphan(s)}
    )
    needed_azs = {"per_az": private_azs, "single": private_azs[:1], "none": []}[view.nat_gateways]
    kept: dict[str, dict[str, Any]] = {}
    for nat in nats:
        az = subnets.get(nat["subnet_id"], {}).get("availability_zone")
        slot = az if view.nat_gateways == "per_az" else "cluster"
        if view.nat_gateways == "none":
            facts.orphan("nat_gateway", nat, "spec.network.nat_gateways is none")
        elif slot is None or slot in kept or (view.nat_gateways == "per_az" and az not in needed_azs):
            facts.orphan("nat_gateway", nat, f"more NAT gateways than nat_gateways={view.nat_gateways} needs")
        else:
            kept[slot] = nat
    _eip_orphans(facts, nats)
    if view.nat_gateways == "none":
        return condition(True, "NatGatewaysDisabled", "spec.network.nat_gateways is none")
    if not needed_azs:
        return condition(False, "NatGatewaysReconciliationFailed", "no private subnet to give egress to")
    if len(kept) < len(needed_azs):
        return condition(False, "NatGatewaysNotFound", f"{len(kept)} of {len(needed_azs)} NAT gateways exist")
    pending = [n for n in kept.values() if n["state"] != "available"]
    if pending:
        return condition(False, "NatGatewaysCreationStarted", f"{_ids(pending)} not available yet")
    return condition(True, "Available", f"{len(kept)} NAT gateways")


def _eip_orphans(facts: Facts, nats: list[dict[str, Any]]) -> None:
    in_use = {a for nat in nats for a in nat["allocation_ids"]}
    for address in facts.owned["elastic_ip"]:
        if address["role"] == COMMON_ROLE and address["id"] not in in_use and not address["association_id"]:
            facts.orphan("elastic_ip", address, "allocated for a NAT gateway, used by none")


def route_tables_condition(facts: Facts) -> dict[str, Any]:
    tables = _outside_vpc(facts, "route_table")
    subnets = [s for s in facts.owned["subnet"] if not facts.is_orphan(s)]
    by_subnet = {sid: t for t in tables for sid in t["subnet_ids"]}
    for unassociated in (t for t in tables if not t["subnet_ids"]):
        facts.orphan("route_table", unassociated, "associated with no subnet")
    if not subnets:
        return condition(False, "RouteTablesNotFound", "no subnets to route")
    problems = []
    for subnet in subnets:
        table = by_subnet.get(subnet["id"])
        target = (table or {}).get("default_route") or ""
        if table is None:
            problems.append(f"{subnet['id']} has no route table")
        elif subnet["public"] and not target.startswith("igw-"):
            problems.append(f"{table['id']} (public) has no default route to the internet gateway")
        elif not subnet["public"] and facts.view.nat_gateways != "none" and not target.startswith("nat-"):
            problems.append(f"{table['id']} (private) has no default route to a NAT gateway")
    if problems:
        return condition(False, "RouteTableReconciliationFailed", "; ".join(problems))
    return condition(True, "Available", f"{len(subnets)} route tables")


def security_groups_condition(facts: Facts) -> dict[str, Any]:
    view = facts.view
    roles = view.security_group_roles()
    groups = _outside_vpc(facts, "security_group")
    for group in groups:
        if group["role"] in view.security_group_overrides:
            facts.orphan("security_group", group, f"role {group['role']!r} is overridden by a group brought by id")
        elif group["role"] not in roles:
            facts.orphan("security_group", group, f"role {group['role']!r} is not one of {', '.join(roles)}")
    have = {g["role"] for g in groups} | set(view.security_group_overrides)
    missing = [r for r in roles if r not in have]
    if missing:
        return condition(False, "SecurityGroupsNotFound", f"no group for role(s) {', '.join(missing)}")
    return condition(True, "Available", f"{len(roles)} roles")


def machine_summary(facts: Facts, nodes: NodesRead | None = None) -> dict[str, dict[str, Any]]:
    """Per machine group of the spec: desired, instances by state, Ready Nodes (when read) and an InstanceReady-like
    verdict."""
    nodes = nodes or NodesRead.unread("not asked")
    groups = facts.view.machine_groups()
    by_group: dict[str, list[dict[str, Any]]] = {}
    for instance in facts.owned["instance"]:
        if instance.get("pool"):
            # Pool sizes move with their autoscaler: instances of a pool the spec lists are explained, not counted.
            if instance["pool"] not in facts.view.machine_pools:
                facts.orphan("instance", instance, f"machine pool {instance['pool']!r} is not in the spec")
            continue
        group = instance["group"] or (BASTION_GROUP if instance["role"] == ROLE_BASTION else None)
        if group not in groups:
            reason = f"machine group {group!r} is not in the spec" if group else f"no {MACHINE_GROUP_TAG} tag"
            facts.orphan("instance", instance, reason)
            continue
        by_group.setdefault(group, []).append(instance)
    return {
        group: _group_status(desired, by_group.get(group, []), nodes, group != BASTION_GROUP)
        for group, desired in groups.items()
    }


def pool_orphans(facts: Facts) -> None:
    """Auto scaling groups and launch templates are named after their machine pool; other names are orphans."""
    for kind in ("auto_scaling_group", "launch_template"):
        for record in facts.owned.get(kind, []):
            if record["name"] not in facts.view.machine_pools:
                facts.orphan(kind, record, f"machine pool {record['name']!r} is not in the spec")


def _group_status(desired: int, instances: list[dict[str, Any]], nodes: NodesRead, has_nodes: bool) -> dict[str, Any]:
    states: dict[str, int] = {}
    for instance in instances:
        states[instance["state"]] = states.get(instance["state"], 0) + 1
    running = states.get("running", 0)
    # A bastion is no Node; a machine of a group is judged by its Node once the Nodes were read (NodeHealthy).
    ready_nodes = nodes.ready_of_instances([i for i in instances if i["state"] == "running"]) if has_nodes else None
    if running == desired and len(instances) == desired and ready_nodes is not None and ready_nodes < desired:
        verdict = condition(False, "NodeNotReady", f"{running} of {desired} running, {ready_nodes} Nodes Ready")
    elif running == desired and len(instances) == desired:
        message = f"{running} of {desired} running" + (
            f", {ready_nodes} Nodes Ready" if ready_nodes is not None else ""
        )
        verdict = condition(True, "InstanceReady", message)
    elif states.get("pending"):
        verdict = condition(False, "InstanceProvisionStarted", f"{states['pending']} pending")
    elif states.get("stopped") or states.get("stopping"):
        verdict = condition(False, "InstanceStopped", f"{states.get('stopped', 0) + states.get('stopping', 0)} stopped")
    elif len(instances) < desired:
        verdict = condition(False, "InstanceNotFound", f"{running} of {desired} running")
    else:
        verdict = condition(False, "InstanceNotReady", f"{running} running, {desired} desired")
    return {
        "desired": desired,
        "running": running,
        "states": states,
        "instances": sorted(i["id"] for i in instances),
        "nodes_ready": ready_nodes,
        "ready": verdict["status"],
        "reason": verdict["reason"],
        "message": verdict["message"],
    }


def pool_summary(facts: Facts, nodes: NodesRead) -> dict[str, dict[str, Any]]:
    """Per machine pool of the spec: its launcher (auto scaling group or fleet), desired size, instances in service and
    Ready Nodes, with CAPA's ``ASGReady`` reasons and Cluster API's ``ReplicasReady`` verdict."""
    pools = {}
    for name, (kind, spec_desired) in sorted(facts.view.pools.items()):
        instances = [i for i in facts.owned["instance"] if i.get("pool") == name]
        running = [i for i in instances if i["state"] == "running"]
        group = next((g for g in facts.owned["auto_scaling_group"] if g["name"] == name), None)
        desired = group["desired"] if group is not None and group.get("desired") is not None else spec_desired
        ready_nodes = nodes.ready_of_instances(running)
        if kind == "asg" and group is None:
            verdict = condition(False, "ASGNotFound", f"no auto scaling group {name}")
        elif len(running) < desired:
            verdict = condition(False, "WaitingForReplicas", f"{len(running)} of {desired} instances running")
        elif ready_nodes is not None and ready_nodes < desired:
            verdict = condition(False, "WaitingForNodes", f"{ready_nodes} of {desired} Nodes Ready")
        else:
            verdict = condition(True, "ReplicasReady", f"{len(running)} of {desired} in service")
        pools[name] = {
            "kind": kind,
            "desired": desired,
            "in_service": len(running),
            "instances": sorted(i["id"] for i in instances),
            "nodes_ready": ready_nodes,
            "ready": verdict["status"],
            "reason": verdict["reason"],
            "message": verdict["message"],
        }
    return pools


def node_of_instances(instances: list[dict[str, Any]], nodes: NodesRead) -> None:
    """Each instance record with its Node's name and whether it is Ready (False also when it has no Node yet; None
    when the Nodes were not read, and for the bastion)."""
    for instance in instances:
        found = nodes.node_of(instance)
        instance["node"] = found.name if found else None
        if instance["role"] == ROLE_BASTION or nodes.nodes is None:
            instance["node_ready"] = None  # the bastion is no Node; unread Nodes are not judged
        else:
            instance["node_ready"] = found is not None and found.ready == "True"


def eks_node_counts(eks: dict[str, Any], nodes: NodesRead) -> None:
    """Each EKS node group and Fargate profile with its Nodes and Ready Nodes (EKS labels them), when read."""
    for label, section in ((NODEGROUP_LABEL, "node_groups"), (FARGATE_PROFILE_LABEL, "fargate_profiles")):
        for name, item in eks[section].items():
            counted = nodes.labelled(label, name)
            item["nodes"], item["nodes_ready"] = counted if counted is not None else (None, None)


def bastion_condition(machines: Mapping[str, Any]) -> dict[str, Any]:
    group = machines[BASTION_GROUP]
    if group["ready"]:
        return condition(True, "Available", ", ".join(group["instances"]))
    if group["reason"] == "InstanceProvisionStarted":
        return condition(False, "BastionCreationStarted", group["message"])
    if not group["instances"]:
        return condition(False, "BastionHostNotFound", "bastion.enabled but no bastion instance")
    return condition(False, "BastionHostFailed", group["message"])


def load_balancer_condition(facts: Facts) -> dict[str, Any]:
    view = facts.view
    classic, v2, groups = facts.owned["load_balancer"], facts.owned["load_balancer_v2"], facts.owned["target_group"]
    unexplained = {
        "disabled": classic + v2 + groups,
        "external": classic + v2 + groups,
        "classic": v2 + groups,
        "nlb": classic,
    }[view.lb_type]
    for lb in unexplained:
        kind = "target_group" if lb in groups else "load_balancer" if lb in classic else "load_balancer_v2"
        facts.orphan(kind, lb, f"control_plane_load_balancer.type is {view.lb_type}")
    if view.lb_type == "disabled":
        return condition(False, "WaitForExternalControlPlaneEndpoint", "the load balancer is disabled in the spec")
    if view.lb_type == "external":
        found = [lb for lb in facts.used["load_balancer"] if lb["id"] == view.lb_name]
        if found:
            return condition(True, "Unmanaged", f"{view.lb_name} is brought by name; never changed")
        return condition(False, "LoadBalancerNotFound", f"no classic load balancer named {view.lb_name!r}")
    if view.lb_type == "classic":
        if not classic:
            return condition(False, "LoadBalancerNotFound", "no classic load balancer carries the ownership tag")
        if not classic[0]["dns_name"]:
            return condition(False, "WaitForDNSName", f"{classic[0]['id']} has no DNS name yet")
        return condition(True, "Available", classic[0]["dns_name"])
    if not v2:
        return condition(False, "LoadBalancerNotFound", "no network load balancer carries the ownership tag")
    return condition(True, "Available", v2[0]["name"])


def _bootstrap_orphans(facts: Facts) -> None:
    """Bootstrap data whose machine is gone: the machine deletes it after joining, so leftovers are leaks."""
    machines = {i["name"] for i in facts.owned["instance"]}
    for kind, prefix in (("secret", SECRET_PREFIX), ("ssm_parameter", SSM_PREFIX)):
        for item in facts.owned[kind]:
            if (item["name"] or "").startswith(prefix) and item["machine"] not in machines:
                facts.orphan(kind, item, f"bootstrap data of machine {item['machine']!r}, which no longer exists")


def summarise(
    raw: Mapping[str, list[dict[str, Any]]],
    view: ClusterView,
    vpc_id: str | None = None,
    eks: EksObserved | None = None,
    nodes: NodesRead | None = None,
) -> dict[str, Any]:
    """Everything the module returns, from the raw answers of :func:`observe`, the EKS side and the Nodes (pure)."""
    nodes = nodes or NodesRead.unread("not asked")
    facts = _split(view, raw)
    conditions = {"VpcReady": vpc_condition(facts, vpc_id)}
    conditions["SubnetsReady"] = subnets_condition(facts)
    conditions["InternetGatewayReady"] = internet_gateway_condition(facts)
    conditions["NatGatewaysReady"] = nat_gateways_condition(facts)
    conditions["RouteTablesReady"] = route_tables_condition(facts)
    conditions["ClusterSecurityGroupsReady"] = security_groups_condition(facts)
    machines = machine_summary(facts, nodes)
    pools = pool_summary(facts, nodes)
    if view.bastion:
        conditions["BastionHostReady"] = bastion_condition(machines)
    if view.kind == "unmanaged":
        conditions["LoadBalancerReady"] = load_balancer_condition(facts)
    eks_status: dict[str, Any] | None = None
    unread: list[str] = []
    if view.eks is not None:
        eks_conditions, eks_status, unread = eks_summary(view.eks, eks or EksObserved(None))
        conditions.update(eks_conditions)
        eks_node_counts(eks_status, nodes)
    if nodes.nodes is None and (machines.keys() - {BASTION_GROUP} or pools or (eks_status or {}).get("node_groups")):
        unread.append(f"Nodes: {nodes.reason}")
    node_of_instances(facts.owned["instance"], nodes)
    _bootstrap_orphans(facts)
    pool_orphans(facts)
    groups = list(machines.values()) + list(pools.values())
    return {
        "vpc_id": facts.vpc_id,
        "resources": facts.owned,
        "counts": {kind: len(records) for kind, records in facts.owned.items()},
        "conditions": conditions,
        "ready": all(c["status"] for c in conditions.values()) and all(g["ready"] for g in groups),
        "not_read": unread,
        "machines": machines,
        "machine_pools": pools,
        "eks": eks_status,
        "orphans": facts.orphans,
        "cloud_provider_resources": facts.cloud_provider,
    }


# ----------------------------------------------------------------------------------------------------------------
# The tier
# ----------------------------------------------------------------------------------------------------------------
class ClusterInfoTier:
    """Read-only: observe every kind once, then summarise."""

    def parse(self, params: Mapping[str, Any]) -> InfoRequest:
        return InfoRequest(
            read_spec(params["spec"], params["cluster_name"]),
            params["vpc_id"],
            KubernetesApiSettings.from_params(params["kubernetes_api"]),
        )

    def validate(self, request: InfoRequest, region: str | None) -> None:
        check_resource_id(request.vpc_id, "vpc", "vpc_id")
        request.kubernetes_api.validate()

    def reconcile(self, ctx: Context, request: InfoRequest) -> Outcome:
        view = request.view
        scope = Scope(cluster=ctx.cluster, byo_vpc_id=view.byo_vpc_id)
        scope.shared["lb_name"] = view.classic_lb_name
        scope.shared["pools"] = bool(view.pools)
        if view.lb_type == "external":
            scope.shared["external_lb"] = view.lb_name
        raw = observe(ctx, scope)
        eks = observe_eks(ctx, view.eks) if view.eks is not None else None
        nodes = read_nodes(ctx, request, raw, eks)
        result = summarise(raw, view, request.vpc_id, eks, nodes)
        return Outcome(result, result)


def read_nodes(
    ctx: Context, request: InfoRequest, raw: Mapping[str, list[dict[str, Any]]], eks: EksObserved | None
) -> NodesRead:
    """The cluster's Nodes: through EKS's endpoint, or the self-managed control-plane endpoint once known."""
    view, settings = request.view, request.kubernetes_api
    if view.eks is not None:
        return read_eks_nodes(ctx, settings, view.eks.name, eks.cluster if eks else None)
    if settings.mode == "none":
        return NodesRead.unread("kubernetes_api.mode is none")
    return read_self_managed_nodes(ctx, settings, view.cluster, control_plane_endpoint(ctx, view, raw))


def control_plane_endpoint(
    ctx: Context, view: ClusterView, raw: Mapping[str, list[dict[str, Any]]]
) -> tuple[str, int] | None:
    """Where the API server answers: the spec's endpoint, else the DNS name of the cluster's load balancer (a classic
    one was read already; a network load balancer costs one describe)."""
    if view.endpoint_host:
        return view.endpoint_host, view.endpoint_port
    if view.lb_type in ("classic", "external"):
        named = view.lb_name if view.lb_type == "external" else None
        for lb in raw.get("load_balancer", []):
            owned = ownership(tags_to_dict(lb.get("Tags")), view.cluster) == "owned"
            if lb.get("DNSName") and (owned or lb["LoadBalancerName"] == named):
                return lb["DNSName"], CONTROL_PLANE_PORT
        return None
    if view.lb_type == "nlb":
        names = [_arn_name(r) for r in raw.get("load_balancer_v2", []) if _v2_lb(arn_parts(r["ResourceARN"])[1])]
        for found in describe_load_balancers_by_name(ctx, names).values() if names else ():
            if found.get("DNSName"):
                return found["DNSName"], CONTROL_PLANE_PORT
    return None


@dataclass(frozen=True)
class InfoRequest:
    """capa_cluster_info's options: the cluster as its spec describes it, and a VPC to read when it has none."""

    view: ClusterView
    vpc_id: str | None
    kubernetes_api: KubernetesApiSettings = KubernetesApiSettings()


def module_argument_spec() -> dict[str, Any]:
    """capa_cluster_info's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(spec=dict(type="dict", default={}), vpc_id=dict(type="str"), **spec_of([KUBERNETES_API]))
