# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: what the members of an EKS cluster - managed node groups and Fargate profiles - share.

Both wait for their cluster to be ACTIVE, default to its private subnets, run under a service role (given, or
created and owned), carry CAPA's tags plus their group's and the template hash, and are found the same way: the
List call's names, one Describe per name that can belong to the group (``<base>`` or ``<base>-<hash>``), kept when
owned and tagged with the group. The member carrying the spec's template hash is the current one; the others are
what a surge replacement retires.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..aws import eks as aws_eks
from ..iam.roles import ensure_role, managed_policy_arn
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import placeholder
from ..kernel.tags import (
    INTERNAL_ELB_ROLE_TAG,
    OWNED,
    ROLE_NODE,
    ROLE_PRIVATE,
    ROLE_TAG,
    cloud_provider_tag_key,
    is_owned,
    tags_to_dict,
)
from ..kernel.waiting import wait_until
from . import nodegroup_plan as plan

# Seconds between polls of a cluster, node group or profile; tests set it to 0.
POLL_DELAY = 10.0
SECONDARY_TAG = "sigs.k8s.io/cluster-api-provider-aws/association"


def ready_cluster(ctx: Context, name: str) -> dict[str, Any] | None:
    """The EKS cluster once ACTIVE (waited for while it is being created or updated).

    ``None`` in check mode when the cluster does not exist yet (a whole-cluster check run plans it); outside
    check mode a missing cluster is an error: node groups and profiles cannot exist without one.
    """
    cluster = aws_eks.describe_cluster(ctx, name)
    if cluster is None:
        if ctx.check_mode:
            return None
        raise ReconcileError(f"EKS cluster {name} not found (WaitingForEKSControlPlane)")
    if cluster.get("status") == plan.ACTIVE or ctx.check_mode:
        return cluster
    if cluster.get("status") not in ("CREATING", "UPDATING") or not ctx.wait:
        raise ReconcileError(f"EKS cluster {name} is {cluster.get('status')}, not ACTIVE (WaitingForEKSControlPlane)")
    return wait_until(
        lambda: aws_eks.describe_cluster(ctx, name) or {},
        lambda c: c.get("status") == plan.ACTIVE,
        ctx,
        f"EKS cluster {name} to be ACTIVE",
        delay=POLL_DELAY,
        failed=lambda c: f"it is {c.get('status')}" if c.get("status") in ("FAILED", "DELETING", None) else None,
    )


def member_subnets(ctx: Context, given: Sequence[Mapping[str, Any]], cluster: Mapping[str, Any] | None) -> list[str]:
    """The private subnets of ``given`` (capa_subnet's list), else the cluster's private subnets (CAPA's default).

    The cluster's subnets are told apart by CAPA's tags (role ``private`` or ``kubernetes.io/role/internal-elb``),
    one DescribeSubnets for all of them; secondary-CIDR subnets are left out, as CAPA does.
    """
    if given:
        ids = plan.private_subnet_ids(given)
        if not ids:
            raise ReconcileError("subnets: none of the given subnets is private")
        return ids
    ids = [s for s in ((cluster or {}).get("resourcesVpcConfig") or {}).get("subnetIds", []) if s]
    if not ids:
        if cluster is None:  # check mode, cluster planned: nothing to default from
            return [placeholder("subnet", "private")]
        raise ReconcileError("subnets: none given and the EKS cluster has none")
    found = ctx.client("ec2").paginate("describe_subnets", SubnetIds=ids).get("Subnets", [])
    private = []
    for subnet in found:
        tags = tags_to_dict(subnet.get("Tags"))
        if SECONDARY_TAG in tags:
            continue
        if tags.get(ROLE_TAG) == ROLE_PRIVATE or tags.get(INTERNAL_ELB_ROLE_TAG) == "1":
            private.append(subnet["SubnetId"])
    if not private:
        raise ReconcileError("subnets: none given, and none of the EKS cluster's subnets is tagged private")
    return sorted(private)


def service_role(
    ctx: Context, given_arn: str | None, name: str, trust: str, policies: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """The role ARN to use and its condition: the given one as it is, else ``name`` created and owned."""
    if given_arn:
        return given_arn, {"status": True, "reason": ""}
    arns = [managed_policy_arn(ctx.region, p) for p in policies]
    role = ensure_role(ctx, name, trust, arns)
    if not role["managed"]:
        ctx.warn(f"IAM role {name} exists and is not owned by cluster {ctx.cluster}; it is used as it is")
    return role["arn"], {"status": True, "reason": "RoleCreated" if role["created"] else ""}


def member_tags(
    ctx: Context, eks_cluster: str, group_tag: str, base: str, digest: str, extra: Mapping[str, str]
) -> dict[str, str]:
    """CAPA's tags on a node group or profile: owner + ``kubernetes.io/cluster/<eks>=owned`` + ours + user's."""
    tags = ctx.tags(ROLE_NODE, None, {**extra, cloud_provider_tag_key(eks_cluster): OWNED, group_tag: base})
    tags[plan.HASH_TAG] = digest
    return tags


@dataclass(frozen=True)
class Members:
    """A group's members (described, owned, tagged with the group) and every name the cluster has (taken)."""

    members: list[dict[str, Any]]
    taken: list[str]


def owned_members(
    names: Sequence[str], base: str, group_tag: str, cluster: str, describe: Callable[[str], dict[str, Any] | None]
) -> Members:
    members = []
    for name in names:
        if not plan.may_be_member(base, name):
            continue
        observed = describe(name)
        if observed is None:
            continue
        tags = observed.get("tags") or {}
        if tags.get(group_tag) == base and is_owned(tags, cluster):
            members.append(observed)
        elif name == base:
            raise ReconcileError(
                f"{name} exists in the EKS cluster and is not owned by cluster {cluster}; it is never touched"
            )
    return Members(members, list(names))


def pick_current(members: Sequence[dict[str, Any]], digest: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The member made from the spec's template (newest first) and the others (to be deleted)."""
    matching = [
        m for m in members if (m.get("tags") or {}).get(plan.HASH_TAG) == digest and m.get("status") != "DELETING"
    ]
    matching.sort(key=lambda m: str(m.get("createdAt") or ""), reverse=True)
    current = matching[0] if matching else None
    return current, [m for m in members if m is not current]
