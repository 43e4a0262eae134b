# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: CAPA's external resource GC (pkg/cloud/services/gc) - what the in-cluster cloud provider left behind.

A Service of type LoadBalancer makes the Kubernetes cloud provider (or the AWS load balancer controller) create
load balancers, target groups and security groups in the cluster's subnets, tagged
``kubernetes.io/cluster/<name>: owned``. CAPA did not create them, yet they block the network's deletion (their
ENIs sit in the subnets, their groups are referenced by the node group), so on cluster deletion CAPA removes them
first. Resources that also carry CAPA's own tags (the cluster's ``lb`` security group, its API load balancer)
are CAPA's and are left to their tiers.

One request finds the v2 load balancers, target groups and security groups (Resource Groups Tagging API, tag
filter, all pages); classic load balancers come from the ELB API (DescribeLoadBalancers + DescribeTags by 20) as in
CAPA's own lookup. Deletion order: load balancers (their listeners go with them), then target groups, then
security groups, after the rules that CAPA's (or the cloud provider's) groups hold on them are revoked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..aws import elb as _elb
from ..aws import elbv2 as _elbv2
from ..aws.ec2 import delete_when_free, describe, tags_of
from ..aws.errors import missing_as_none
from ..aws.tagging import tagged_resources
from ..kernel.context import Context
from ..kernel.tags import OWNED, cloud_provider_tag_key, is_owned, tags_to_dict
from ..kernel.tier import Outcome
from ..kernel.validation import check_one_of
from ..kernel.waiting import wait_until
from .blockers import finder, is_cloud_provider_owned, owner_of

LOAD_BALANCER, TARGET_GROUP, SECURITY_GROUP = "load-balancer", "target-group", "security-group"
TASKS = (LOAD_BALANCER, TARGET_GROUP, SECURITY_GROUP)
TAGGED_TYPES = ("elasticloadbalancing:loadbalancer", "elasticloadbalancing:targetgroup", "ec2:security-group")


@dataclass
class Found:
    """The cloud provider's resources of one cluster, as the GC sees them."""

    classic: list[str] = field(default_factory=list)  # classic load balancer names
    v2: list[dict[str, str]] = field(default_factory=list)  # {"arn", "name", "type"}
    target_groups: list[dict[str, str]] = field(default_factory=list)  # {"arn", "name"}
    groups: list[dict[str, str]] = field(default_factory=list)  # {"id"}

    def view(self) -> list[dict[str, Any]]:
        out = [{"kind": "classic_load_balancer", "id": n, "name": n} for n in self.classic]
        out += [{"kind": f"{lb['type']}_load_balancer", "id": lb["arn"], "name": lb["name"]} for lb in self.v2]
        out += [{"kind": "target_group", "id": tg["arn"], "name": tg["name"]} for tg in self.target_groups]
        out += [{"kind": "security_group", "id": g["id"], "name": g["id"]} for g in self.groups]
        return out


# pure ---------------------------------------------------------------------------------------------------------
def classify(mappings: Iterable[Mapping[str, Any]], cluster: str) -> Found:
    """GetResources answers -> the cloud provider's v2 load balancers, target groups and security groups.

    Classic load balancers (``loadbalancer/<name>``) are skipped here: the ELB API reports them.
    """
    found = Found()
    for mapping in mappings:
        if not is_cloud_provider_owned(tags_to_dict(mapping.get("Tags")), cluster):
            continue
        arn = mapping["ResourceARN"]
        resource = arn.split(":", 5)[-1]
        parts = resource.split("/")
        if resource.startswith("loadbalancer/") and len(parts) == 4:
            found.v2.append(
                {"arn": arn, "name": parts[2], "type": {"net": "network", "app": "application"}.get(parts[1], parts[1])}
            )
        elif resource.startswith("targetgroup/"):
            found.target_groups.append({"arn": arn, "name": parts[1]})
        elif resource.startswith("security-group/"):
            found.groups.append({"id": parts[1]})
    return found


def revocations(groups: Iterable[Mapping[str, Any]], doomed: set[str], cluster: str) -> list[dict[str, Any]]:
    """The rules to revoke before ``doomed`` groups can go: ``{"group", "permissions", "owner"}`` per group.

    Only groups this cluster owns (CAPA) or that are doomed themselves are changed; a rule in anyone else's
    group is left alone and reported as a blocker when the deletion is refused.
    """
    out = []
    for group in groups:
        tags = tags_of(group)
        if not (is_owned(tags, cluster) or group["GroupId"] in doomed):
            continue
        permissions = []
        for permission in group.get("IpPermissions", []):
            pairs = [p for p in permission.get("UserIdGroupPairs", []) if p.get("GroupId") in doomed]
            if pairs:
                kept = {k: v for k, v in permission.items() if k in ("IpProtocol", "FromPort", "ToPort")}
                permissions.append({**kept, "UserIdGroupPairs": [{"GroupId": p["GroupId"]} for p in pairs]})
        if permissions:
            out.append({"group": group["GroupId"], "permissions": permissions, "owner": owner_of(tags, cluster)})
    return out


# the tier -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GcSpec:
    state: str
    tasks: tuple[str, ...]  # what to collect; none listed: every task


class ExternalResourcesTier:
    def parse(self, params: Mapping[str, Any]) -> GcSpec:
        return GcSpec(params["state"], tuple(params["tasks"]))

    def validate(self, spec: GcSpec, region: str | None) -> None:
        for index, task in enumerate(spec.tasks):
            check_one_of(task, TASKS, f"tasks[{index}]")

    def reconcile(self, ctx: Context, spec: GcSpec) -> Outcome:
        found = observe(ctx, set(spec.tasks or TASKS))
        before = {"resources": found.view()}
        if spec.state == "present":  # the cloud provider's resources are its own while the cluster lives
            return Outcome(before, before)
        GarbageCollection(ctx, found).run()
        return Outcome(before, {"resources": []})


def observe(ctx: Context, tasks: set[str]) -> Found:
    found = classify(cloud_provider_tagged(ctx, TAGGED_TYPES), ctx.cluster)
    if LOAD_BALANCER in tasks:
        found.classic = _classic(ctx)
    else:
        found.v2 = []
    if TARGET_GROUP not in tasks:
        found.target_groups = []
    if SECURITY_GROUP not in tasks:
        found.groups = []
    return found


def cloud_provider_tagged(ctx: Context, types: Iterable[str]) -> list[dict[str, Any]]:
    """One tagging-API request (all pages) for the resources of ``types`` the cloud provider tagged as its own."""
    return tagged_resources(ctx, cloud_provider_tag_key(ctx.cluster), [OWNED], tuple(types))


def _classic(ctx: Context) -> list[str]:
    names = [lb["LoadBalancerName"] for lb in _elb.describe_load_balancers(ctx)]
    tags = _elb.describe_tags(ctx, names)
    return sorted(name for name, own in tags.items() if is_cloud_provider_owned(own, ctx.cluster))


@dataclass
class GarbageCollection:
    ctx: Context
    found: Found

    def run(self) -> None:
        self._load_balancers()
        self._target_groups()
        self._security_groups()

    def _load_balancers(self) -> None:
        ctx = self.ctx
        for lb in self.found.v2:
            missing_as_none(
                ctx.ops.call,
                ctx.client("elbv2"),
                "delete_load_balancer",
                resource=lb["name"],
                reason="made by the in-cluster cloud provider; cluster deleted",
                LoadBalancerArn=lb["arn"],
            )
        for name in self.found.classic:
            ctx.ops.call(
                ctx.client("elb"),
                "delete_load_balancer",
                resource=name,
                reason="made by the in-cluster cloud provider; cluster deleted",
                LoadBalancerName=name,
            )
        if self.found.v2 and ctx.wait and not ctx.check_mode:
            arns = [lb["arn"] for lb in self.found.v2]
            wait_until(
                lambda: _elbv2.existing_load_balancer_arns(ctx, arns),
                lambda left: not left,
                ctx,
                "cloud-provider load balancers deleted",
            )

    def _target_groups(self) -> None:
        ctx = self.ctx
        for group in self.found.target_groups:

            def attempt(group: Mapping[str, str] = group) -> Any:
                return ctx.ops.call(
                    ctx.client("elbv2"),
                    "delete_target_group",
                    resource=group["name"],
                    reason="made by the in-cluster cloud provider; cluster deleted",
                    TargetGroupArn=group["arn"],
                )

            if ctx.check_mode:
                attempt()
                continue
            delete_when_free(
                ctx,
                attempt,
                f"target group {group['name']}",
                blockers=finder(ctx, target_group_arn=group["arn"]),
            )

    def _security_groups(self) -> None:
        ctx = self.ctx
        doomed = {g["id"] for g in self.found.groups}
        if not doomed:
            return
        ec2 = ctx.client("ec2")
        referencing = describe(
            ctx,
            "describe_security_groups",
            "SecurityGroups",
            Filters=[{"Name": "ip-permission.group-id", "Values": sorted(doomed)}],
        )
        for change in revocations(referencing, doomed, ctx.cluster):
            ctx.ops.call(
                ec2,
                "revoke_security_group_ingress",
                resource=change["group"],
                reason="its rules reference a cloud-provider security group that goes",
                GroupId=change["group"],
                IpPermissions=change["permissions"],
            )
        for group_id in sorted(doomed):

            def attempt(group_id: str = group_id) -> Any:
                return ctx.ops.call(
                    ec2,
                    "delete_security_group",
                    resource=group_id,
                    reason="made by the in-cluster cloud provider; cluster deleted",
                    GroupId=group_id,
                )

            if ctx.check_mode:
                attempt()
                continue
            delete_when_free(ctx, attempt, f"security group {group_id}", blockers=finder(ctx, group_id=group_id))


def module_argument_spec() -> dict[str, Any]:
    """capa_external_resources's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        tasks=dict(
            type="list",
            elements="str",
            default=[],
            choices=list(TASKS),
        ),
    )
