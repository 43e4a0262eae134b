# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: EKS managed node groups (CAPA's AWSManagedMachinePool), plus what Fargate profiles share with them.

One pool is one or, during a replacement, two node groups, found by their tags
(``clusterapi.aws/node-group=<pool>`` and the cluster's ownership tag). ``ListNodegroups`` only gives names, so
each node group whose name can belong to the pool (``<pool>`` or ``<pool>-<hash>``) costs one ``DescribeNodegroup``
- usually one, two during a replacement; node groups of other pools are never described.

A run: DescribeCluster (version, subnets) -> node role (given, or ensured with ``_iam``) -> the template hash of
the immutable fields (``_eks_nodegroup_plan``) -> the node group carrying that hash is updated in place
(``UpdateNodegroupVersion`` one step at a time, ``UpdateNodegroupConfig``, ``TagResource``); if none does, a new
one is created, waited for until ACTIVE and only then are the old ones deleted (surge replacement).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.errors import error_code
from ..iam.roles import delete_owned_role, ensure_role, managed_policy_arn
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import (
    INTERNAL_ELB_ROLE_TAG,
    OWNED,
    ROLE_NODE,
    ROLE_PRIVATE,
    ROLE_TAG,
    cloud_provider_tag_key,
    is_owned,
    missing_tags,
    tags_to_dict,
)
from ..kernel.waiting import wait_until
from . import nodegroup_plan as plan

POLL_DELAY = 10.0
NOT_FOUND = "ResourceNotFoundException"
SECONDARY_TAG = "sigs.k8s.io/cluster-api-provider-aws/association"


# shared with Fargate profiles ----------------------------------------------------------------------------------------
def describe_cluster(ctx: Context, name: str) -> dict[str, Any] | None:
    try:
        return ctx.client("eks").describe_cluster(name=name)["cluster"]
    except botocore.exceptions.ClientError as e:
        if error_code(e) == NOT_FOUND:
            return None
        raise


def ready_cluster(ctx: Context, name: str) -> dict[str, Any] | None:
    """The EKS cluster once ACTIVE (waited for while it is being created or updated).

    ``None`` in check mode when the cluster does not exist yet (a whole-cluster check run plans it); outside
    check mode a missing cluster is an error: node groups and profiles cannot exist without one.
    """
    cluster = describe_cluster(ctx, name)
    if cluster is None:
        if ctx.check_mode:
            return None
        raise ReconcileError(f"EKS cluster {name} not found (WaitingForEKSControlPlane)")
    if cluster.get("status") == plan.ACTIVE or ctx.check_mode:
        return cluster
    if cluster.get("status") not in ("CREATING", "UPDATING") or not ctx.wait:
        raise ReconcileError(f"EKS cluster {name} is {cluster.get('status')}, not ACTIVE (WaitingForEKSControlPlane)")
    return wait_until(
        lambda: describe_cluster(ctx, name) or {},
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


def member_tags(ctx: Context, eks_cluster: str, group_tag: str, base: str, digest: str, extra: Mapping[str, str]):
    """CAPA's tags on a node group or profile: owner + ``kubernetes.io/cluster/<eks>=owned`` + ours + user's."""
    tags = ctx.tags(ROLE_NODE, None, {**extra, cloud_provider_tag_key(eks_cluster): OWNED, group_tag: base})
    tags[plan.HASH_TAG] = digest
    return tags


def owned_members(
    names: Sequence[str], base: str, group_tag: str, cluster: str, describe: Callable[[str], dict | None]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The members of ``base`` (described, owned, tagged with the group) and every name that exists (taken)."""
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
    return members, list(names)


def pick_current(members: Sequence[dict[str, Any]], digest: str) -> tuple[dict | None, list[dict]]:
    """The member made from the spec's template (newest first) and the others (to be deleted)."""
    matching = [
        m for m in members if (m.get("tags") or {}).get(plan.HASH_TAG) == digest and m.get("status") != "DELETING"
    ]
    matching.sort(key=lambda m: str(m.get("createdAt") or ""), reverse=True)
    current = matching[0] if matching else None
    return current, [m for m in members if m is not current]


def add_tags(ctx: Context, arn: str, label: str, current: Mapping[str, str], desired: Mapping[str, str]) -> None:
    """Like CAPA, tags are added or updated, never removed (the template hash is set at creation and kept)."""
    todo = missing_tags(current, desired)
    if todo and not is_placeholder(arn):
        ctx.ops.call(
            ctx.client("eks"),
            "tag_resource",
            resource=label,
            reason=f"tags differ: {', '.join(sorted(todo))}",
            resourceArn=arn,
            tags=todo,
        )


# node groups ---------------------------------------------------------------------------------------------------------
def _describe_nodegroup(ctx: Context, cluster: str, name: str) -> dict[str, Any] | None:
    try:
        return ctx.client("eks").describe_nodegroup(clusterName=cluster, nodegroupName=name)["nodegroup"]
    except botocore.exceptions.ClientError as e:
        if error_code(e) == NOT_FOUND:
            return None
        raise


def _failure(observed: Mapping[str, Any]) -> str | None:
    status = observed.get("status")
    if status in plan.FAILED_STATES:
        issues = (observed.get("health") or {}).get("issues") or []
        detail = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in issues)
        return f"it is {status}" + (f" ({detail})" if detail else "")
    return None


def _wait_settled(ctx: Context, cluster: str, name: str) -> dict[str, Any]:
    """Wait while the node group is CREATING/UPDATING; a failure state is an error."""
    return wait_until(
        lambda: _describe_nodegroup(ctx, cluster, name) or {"status": "DELETED"},
        lambda n: n.get("status") == plan.ACTIVE,
        ctx,
        f"node group {name} to be ACTIVE",
        delay=POLL_DELAY,
        failed=lambda n: _failure(n) or ("it was deleted" if n.get("status") == "DELETED" else None),
    )


class NodegroupTier:
    """``capa_eks_nodegroup``: one pool of managed nodes."""

    def validate(self, params: dict[str, Any], region: str | None) -> None:
        plan.validate_nodegroup(plan.NodegroupSpec.from_params(params))

    def reconcile(self, ctx: Context, params: dict[str, Any]) -> tuple[Any, Any]:
        spec = plan.NodegroupSpec.from_params(params)
        run = _NodegroupRun(ctx, spec)
        return run.present() if spec.state == "present" else run.absent()


class _NodegroupRun:
    def __init__(self, ctx: Context, spec: plan.NodegroupSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.eks = ctx.client("eks")
        self.role_name = plan.role_name(ctx.cluster, spec.pool, "nodegroup")
        self.conditions: dict[str, dict[str, Any]] = {}

    # observe ---------------------------------------------------------------------------------------------------------
    def members(self) -> tuple[list[dict[str, Any]], list[str]]:
        try:
            names = self.eks.paginate("list_nodegroups", clusterName=self.spec.eks_cluster).get("nodegroups", [])
        except botocore.exceptions.ClientError as e:
            if error_code(e) == NOT_FOUND:
                return [], []
            raise
        return owned_members(
            names,
            self.spec.pool,
            plan.NODE_GROUP_TAG,
            self.ctx.cluster,
            lambda n: _describe_nodegroup(self.ctx, self.spec.eks_cluster, n),
        )

    def result(self, observed: Mapping[str, Any] | None, replaced_from: Sequence[str] = ()) -> dict[str, Any]:
        return {"nodegroup": plan.summary(observed, replaced_from), "conditions": dict(self.conditions)}

    # present ---------------------------------------------------------------------------------------------------------
    def present(self) -> tuple[Any, Any]:
        ctx, spec = self.ctx, self.spec
        cluster = ready_cluster(ctx, spec.eks_cluster)
        members, taken = self.members() if cluster else ([], [])
        version, warning = plan.target_version(spec.version, (cluster or {}).get("version"))
        if warning:
            ctx.warn(warning)
        subnets = member_subnets(ctx, spec.subnets, cluster)
        role_arn, self.conditions["IAMNodegroupRolesReady"] = service_role(
            ctx, spec.node_role_arn, self.role_name, plan.NODE_TRUST, plan.WORKER_POLICIES
        )
        definition = plan.immutable_definition(spec, subnets, plan.node_role_token(spec, ctx.cluster))
        digest = plan.definition_hash(definition)
        current, old = pick_current(members, digest)
        before = {"nodegroup": plan.summary(current or (old[0] if old else None))}

        if current is None:
            current = self.create(definition, digest, subnets, role_arn, version, taken, old)
        else:
            current = self.update(current, digest, version)
        replaced = self.retire(current, old)
        if replaced and spec.node_role_arn and current.get("status") == plan.ACTIVE:
            # The pool moved to a given role: the one we created for it has no user left.
            delete_owned_role(ctx, self.role_name)
        self.conditions["EKSNodegroupReady"] = _ready_condition(current)
        return before, self.result(current, replaced)

    def create(
        self,
        definition: Mapping[str, Any],
        digest: str,
        subnets: Sequence[str],
        role_arn: str,
        version: str | None,
        taken: Sequence[str],
        old: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        ctx, spec = self.ctx, self.spec
        name = plan.member_name(spec.pool, digest, taken, first=not old)
        tags = member_tags(ctx, spec.eks_cluster, plan.NODE_GROUP_TAG, spec.pool, digest, spec.tags)
        token = plan.client_token()
        request = plan.create_request(spec, name, subnets, role_arn, version, tags, token)
        if old:
            changed = plan.immutable_differences(definition, old[0])
            reason = (
                f"replaces {', '.join(o['nodegroupName'] for o in old)}: {', '.join(changed) or 'template'} changed"
            )
        else:
            reason = "missing"
        predicted = _predicted_nodegroup(request)
        answer = ctx.ops.call(
            self.eks, "create_nodegroup", resource=name, reason=reason, predicted={"nodegroup": predicted}, **request
        )
        created = answer["nodegroup"]
        if ctx.check_mode or not ctx.wait:
            return created
        return _wait_settled(ctx, spec.eks_cluster, name)

    def update(self, current: dict[str, Any], digest: str, version: str | None) -> dict[str, Any]:
        ctx, spec = self.ctx, self.spec
        name = current["nodegroupName"]
        tags = member_tags(ctx, spec.eks_cluster, plan.NODE_GROUP_TAG, spec.pool, digest, spec.tags)
        add_tags(ctx, current["nodegroupArn"], name, current.get("tags") or {}, tags)
        if current.get("status") in plan.BUSY_STATES:
            if not ctx.wait:
                ctx.warn(f"node group {name} is {current['status']}; updates wait for the next run")
                return current
            current = _wait_settled(ctx, spec.eks_cluster, name)
        for _step in range(20):
            update = plan.version_update(current, spec, version)
            if update is None:
                break
            request, reason = update
            self._call_update("update_nodegroup_version", name, reason, request)
            current = self._after(current, name, plan.after_version_update(current, request))
            if current.get("status") != plan.ACTIVE:
                ctx.warn(f"node group {name} is updating; the next steps wait for the next run")
                return current
        request, fields = plan.config_update(current, spec)
        if request:
            self._call_update("update_nodegroup_config", name, f"{', '.join(fields)} differ", request)
            current = self._after(current, name, plan.after_config_update(current, request))
        return current

    def _call_update(self, method: str, name: str, reason: str, request: Mapping[str, Any]) -> None:
        self.ctx.ops.call(
            self.eks,
            method,
            resource=name,
            reason=reason,
            predicted={"update": {"status": "InProgress"}},
            clusterName=self.spec.eks_cluster,
            nodegroupName=name,
            **request,
        )

    def _after(self, current: Mapping[str, Any], name: str, predicted: dict[str, Any]) -> dict[str, Any]:
        """The node group after an update: predicted in check mode, else observed (waited for with ``wait``)."""
        if self.ctx.check_mode:
            return predicted
        if not self.ctx.wait:
            return {**predicted, "status": "UPDATING"}
        return _wait_settled(self.ctx, self.spec.eks_cluster, name)

    def retire(self, current: Mapping[str, Any], old: Sequence[Mapping[str, Any]]) -> list[str]:
        """Delete the pool's other node groups once the current one is ACTIVE (surge: never before)."""
        if not old:
            return []
        if current.get("status") != plan.ACTIVE and not self.ctx.check_mode:
            self.ctx.warn(
                f"node group {current.get('nodegroupName')} is {current.get('status')}; "
                f"{', '.join(o['nodegroupName'] for o in old)} stay until it is ACTIVE (run again)"
            )
            return []
        names = [o["nodegroupName"] for o in old]
        self.delete(old, reason=f"replaced by {current.get('nodegroupName')}")
        return names

    def delete(self, groups: Sequence[Mapping[str, Any]], reason: str) -> bool:
        """Delete node groups and (with ``wait``) wait until they are gone; True when all are gone."""
        ctx, cluster = self.ctx, self.spec.eks_cluster
        for group in groups:
            name = group["nodegroupName"]
            if group.get("status") in plan.BUSY_STATES and ctx.wait and not ctx.check_mode:
                group = _wait_settled(ctx, cluster, name)
            if group.get("status") != "DELETING":
                try:
                    ctx.ops.call(
                        self.eks,
                        "delete_nodegroup",
                        resource=name,
                        reason=reason,
                        clusterName=cluster,
                        nodegroupName=name,
                    )
                except botocore.exceptions.ClientError as e:
                    if error_code(e) != NOT_FOUND:
                        raise
        if ctx.check_mode:
            return True
        if not ctx.wait:
            return not groups
        for group in groups:
            name = group["nodegroupName"]
            wait_until(
                lambda n=name: _describe_nodegroup(ctx, cluster, n),
                lambda n: n is None,
                ctx,
                f"node group {name} to be deleted",
                delay=POLL_DELAY,
                failed=lambda n: _failure(n) if n else None,
            )
        return True

    # absent ----------------------------------------------------------------------------------------------------------
    def absent(self) -> tuple[Any, Any]:
        # Without the cluster there is no node group (and moto fails ListNodegroups of a missing cluster).
        members = self.members()[0] if describe_cluster(self.ctx, self.spec.eks_cluster) else []
        before = self.result(members[0] if members else None)
        gone = self.delete(members, reason="state absent")
        if gone:
            delete_owned_role(self.ctx, self.role_name)
        else:
            self.ctx.warn(f"IAM role {self.role_name} is kept until the node groups are gone (run again)")
        self.conditions["EKSNodegroupReady"] = {"status": False, "reason": "Deleted" if gone else "Deleting"}
        return before, self.result(None)


def _predicted_nodegroup(request: Mapping[str, Any]) -> dict[str, Any]:
    """What check mode assumes CreateNodegroup answers (ACTIVE, so the rest of the plan runs as it would)."""
    name = request["nodegroupName"]
    return {
        "nodegroupName": name,
        "nodegroupArn": placeholder("nodegroup", name),
        "status": plan.ACTIVE,
        "version": request.get("version"),
        "releaseVersion": request.get("releaseVersion"),
        "scalingConfig": dict(request["scalingConfig"]),
        "instanceTypes": list(request.get("instanceTypes") or []),
        "capacityType": request.get("capacityType"),
        "amiType": request.get("amiType"),
        "labels": dict(request.get("labels") or {}),
        "taints": list(request.get("taints") or []),
        "nodeRole": request.get("nodeRole"),
        "subnets": list(request.get("subnets") or []),
        "diskSize": request.get("diskSize"),
        "remoteAccess": request.get("remoteAccess"),
        "launchTemplate": request.get("launchTemplate"),
        "updateConfig": request.get("updateConfig"),
        "tags": dict(request.get("tags") or {}),
    }


def _ready_condition(observed: Mapping[str, Any]) -> dict[str, Any]:
    status = observed.get("status")
    if status == plan.ACTIVE:
        return {"status": True, "reason": ""}
    return {"status": False, "reason": _failure(observed) or f"Nodegroup{str(status).title().replace('_', '')}"}
