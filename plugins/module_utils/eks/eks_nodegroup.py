# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: EKS managed node groups (CAPA's AWSManagedMachinePool).

One pool is one or, during a replacement, two node groups, found by their tags
(``clusterapi.aws/node-group=<pool>`` and the cluster's ownership tag). ``ListNodegroups`` only gives names, so
each node group whose name can belong to the pool (``<pool>`` or ``<pool>-<hash>``) costs one ``DescribeNodegroup``
- usually one, two during a replacement; node groups of other pools are never described.

A run: DescribeCluster (version, subnets) -> node role (given, or ensured with ``iam.roles``) -> the template hash
of the immutable fields (:mod:`.nodegroup_plan`) -> the node group carrying that hash is updated in place
(``UpdateNodegroupVersion`` one step at a time, ``UpdateNodegroupConfig``, ``TagResource``); if none does, a new
one is created, waited for until ACTIVE and only then are the old ones deleted (surge replacement).
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Sequence

from ..aws import eks as aws_eks
from ..iam.roles import delete_owned_role
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, RemoteError
from ..kernel.idempotency import new_client_token
from ..kernel.options import argument_spec as spec_of
from ..kernel.tags import repair_tags
from ..kernel.tier import Outcome
from ..kernel.waiting import wait_until
from ..workload.access import KUBERNETES_API, eks_kube_api
from ..workload.kube import UNREACHABLE
from ..workload.observe import NodeView
from . import members
from . import nodegroup_plan as plan
from .members import Members, member_subnets, member_tags, owned_members, pick_current, ready_cluster, service_role

# The label EKS gives every Node of a managed node group.
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"


# node groups ---------------------------------------------------------------------------------------------------------
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
        lambda: aws_eks.describe_nodegroup(ctx, cluster, name) or {"status": "DELETED"},
        lambda n: n.get("status") == plan.ACTIVE,
        ctx,
        f"node group {name} to be ACTIVE",
        delay=members.POLL_DELAY,
        failed=lambda n: _failure(n) or ("it was deleted" if n.get("status") == "DELETED" else None),
    )


def ready_nodes_of(nodes: Sequence[Mapping[str, Any]], group: str) -> int:
    """Ready Nodes that EKS labelled as the node group's."""
    views = (NodeView.from_api(n) for n in nodes)
    return sum(1 for n in views if n.labels.get(NODEGROUP_LABEL) == group and n.ready == "True")


def wait_for_nodes(
    ctx: Context, spec: plan.NodegroupSpec, cluster: Mapping[str, Any], group: Mapping[str, Any]
) -> None:
    """After a node group was created or resized: wait until its desired size of Nodes is Ready (Cluster API's
    MachinePool ReadyReplicas), so the run ends with the nodes serving. One Node list per poll, with a token of the
    run's credentials; without an answering API (mode auto) the wait is skipped with a warning."""
    desired = int((group.get("scalingConfig") or {}).get("desiredSize") or 0)
    settings = spec.kubernetes_api
    if ctx.check_mode or not ctx.wait or desired < 1 or settings.mode == "none" or group.get("status") != plan.ACTIVE:
        return
    name = group["nodegroupName"]
    api = eks_kube_api(ctx, settings, spec.eks_cluster, cluster)

    def observe() -> int:
        try:
            return ready_nodes_of(api.nodes(), name)
        except RemoteError as e:
            if e.code != UNREACHABLE:
                raise
            if settings.mode == "required":
                raise ReconcileError(
                    f"kubernetes_api.mode is required but the Kubernetes API does not answer: {e}"
                ) from None
            ctx.warn(f"node group {name}: its Nodes were not awaited (the Kubernetes API does not answer: {e})")
            return -1

    wait_until(
        observe,
        lambda ready: ready >= desired or ready < 0,
        ctx,
        f"{desired} Ready Nodes of node group {name}",
        delay=members.POLL_DELAY,
        state=lambda ready: f"{max(ready, 0)} of {desired} Ready",
    )


class NodegroupTier:
    """``capa_eks_nodegroup``: one pool of managed nodes."""

    def parse(self, params: Mapping[str, Any]) -> plan.NodegroupSpec:
        return plan.NodegroupSpec.from_params(params)

    def validate(self, spec: plan.NodegroupSpec, region: str | None) -> None:
        plan.validate_nodegroup(spec)

    def reconcile(self, ctx: Context, spec: plan.NodegroupSpec) -> Outcome:
        run = _NodegroupRun(ctx, spec)
        return Outcome(*(run.present() if spec.state == "present" else run.absent()))


class _NodegroupRun:
    def __init__(self, ctx: Context, spec: plan.NodegroupSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.role_name = plan.role_name(ctx.cluster, spec.pool, "nodegroup")
        self.conditions: dict[str, dict[str, Any]] = {}

    # observe ---------------------------------------------------------------------------------------------------------
    def observe(self) -> Members:
        """The pool's node groups (ListNodegroups gives names; only those that can be the pool's are described)."""
        ctx, cluster = self.ctx, self.spec.eks_cluster
        return owned_members(
            aws_eks.list_nodegroups(ctx, cluster),
            self.spec.pool,
            plan.NODE_GROUP_TAG,
            ctx.cluster,
            lambda n: aws_eks.describe_nodegroup(ctx, cluster, n),
        )

    def result(self, observed: Mapping[str, Any] | None, replaced_from: Sequence[str] = ()) -> dict[str, Any]:
        return {"nodegroup": plan.summary(observed, replaced_from), "conditions": dict(self.conditions)}

    # present ---------------------------------------------------------------------------------------------------------
    def present(self) -> tuple[Any, Any]:
        ctx, spec = self.ctx, self.spec
        cluster = ready_cluster(ctx, spec.eks_cluster)
        found = self.observe() if cluster else Members([], [])
        version, warning = plan.target_version(spec.version, (cluster or {}).get("version"))
        if warning:
            ctx.warn(warning)
        subnets = member_subnets(ctx, spec.subnets, cluster)
        role_arn, self.conditions["IAMNodegroupRolesReady"] = service_role(
            ctx, spec.node_role_arn, self.role_name, plan.NODE_TRUST, plan.WORKER_POLICIES
        )
        definition = plan.immutable_definition(spec, subnets, plan.node_role_token(spec, ctx.cluster))
        digest = plan.definition_hash(definition)
        current, old = pick_current(found.members, digest)
        before = {"nodegroup": plan.summary(current or (old[0] if old else None))}

        calls = len(ctx.ops.plan)
        # Found CREATING or UPDATING: an earlier run started it without waiting; this one waits as that one would.
        settling = current is not None and current.get("status") in plan.BUSY_STATES
        if current is None:
            current = self.create(definition, digest, subnets, role_arn, version, found.taken, old)
        else:
            current = self.update(current, digest, version)
        if cluster and (len(ctx.ops.plan) > calls or settling or spec.await_nodes):
            # Created, resized or updated in this run or by one that did not wait: its Nodes are awaited.
            wait_for_nodes(ctx, spec, cluster, current)
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
        request = plan.create_request(spec, name, subnets, role_arn, version, tags, new_client_token())
        if old:
            changed = plan.immutable_differences(definition, old[0])
            reason = (
                f"replaces {', '.join(o['nodegroupName'] for o in old)}: {', '.join(changed) or 'template'} changed"
            )
        else:
            reason = "missing"
        predicted = {"nodegroup": plan.predicted_nodegroup(request)}
        answer = ctx.ops.call(
            ctx.client("eks"), "create_nodegroup", resource=name, reason=reason, predicted=predicted, **request
        )
        created = answer["nodegroup"]
        if ctx.check_mode or not ctx.wait:
            return created
        return _wait_settled(ctx, spec.eks_cluster, name)

    def update(self, current: dict[str, Any], digest: str, version: str | None) -> dict[str, Any]:
        ctx, spec = self.ctx, self.spec
        name = current["nodegroupName"]
        tags = member_tags(ctx, spec.eks_cluster, plan.NODE_GROUP_TAG, spec.pool, digest, spec.tags)
        repair_tags(ctx, "eks", current["nodegroupArn"], name, current.get("tags"), tags)
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
            self.ctx.client("eks"),
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
            if group.get("status") in plan.BUSY_STATES and not ctx.check_mode:
                if not ctx.wait:  # EKS refuses to delete a node group while it is being created or updated
                    ctx.warn(f"node group {name} is {group['status']}; a run with wait deletes it once it settles")
                    continue
                group = _wait_settled(ctx, cluster, name)
            if group.get("status") != "DELETING":
                ctx.ops.call_unless_refused(
                    ctx.client("eks"),
                    "delete_nodegroup",
                    resource=name,
                    reason=reason,
                    refused=aws_eks.GONE,
                    clusterName=cluster,
                    nodegroupName=name,
                )
        if ctx.check_mode:
            return True
        if not ctx.wait:
            return not groups
        for group in groups:
            name = group["nodegroupName"]
            wait_until(
                functools.partial(aws_eks.describe_nodegroup, ctx, cluster, name),
                lambda n: n is None,
                ctx,
                f"node group {name} to be deleted",
                delay=members.POLL_DELAY,
                failed=lambda n: _failure(n) if n else None,
            )
        return True

    # absent ----------------------------------------------------------------------------------------------------------
    def absent(self) -> tuple[Any, Any]:
        # Without the cluster there is no node group (and moto fails ListNodegroups of a missing cluster).
        groups = self.observe().members if aws_eks.describe_cluster(self.ctx, self.spec.eks_cluster) else []
        before = self.result(groups[0] if groups else None)
        gone = self.delete(groups, reason="state absent")
        if gone:
            delete_owned_role(self.ctx, self.role_name)
        # Not gone: the deletion was started without a wait (wait=false), which the caller asked for and which the
        # condition reports (Deleting); a run that waits deletes the role.
        self.conditions["EKSNodegroupReady"] = {"status": False, "reason": "Deleted" if gone else "Deleting"}
        return before, self.result(None)


def _ready_condition(observed: Mapping[str, Any]) -> dict[str, Any]:
    status = observed.get("status")
    if status == plan.ACTIVE:
        return {"status": True, "reason": ""}
    return {"status": False, "reason": _failure(observed) or f"Nodegroup{str(status).title().replace('_', '')}"}


def module_argument_spec() -> dict[str, Any]:
    """capa_eks_nodegroup's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        wait_timeout=dict(type="int", default=1800),  # sized for EKS: see DOCUMENTATION
        name=dict(type="str", required=True),
        eks_cluster_name=dict(type="str"),
        version=dict(type="str"),
        release_version=dict(type="str"),
        scaling=dict(
            type="dict",
            default={},
            options=dict(
                min_size=dict(type="int", default=1),
                max_size=dict(type="int", default=3),
                desired_size=dict(type="int", default=2),
            ),
        ),
        externally_managed_replicas=dict(type="bool", default=False),
        instance_types=dict(type="list", elements="str"),
        capacity_type=dict(type="str", default="ON_DEMAND", choices=["ON_DEMAND", "SPOT"]),
        ami_type=dict(type="str"),
        disk_size=dict(type="int"),
        labels=dict(type="dict", default={}),
        taints=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(
                key=dict(type="str", required=True, no_log=False),
                value=dict(type="str"),
                effect=dict(type="str", required=True, choices=["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"]),
            ),
        ),
        update_config=dict(
            type="dict",
            default={},
            options=dict(
                max_unavailable=dict(type="int"),
                max_unavailable_percentage=dict(type="int"),
            ),
            mutually_exclusive=[("max_unavailable", "max_unavailable_percentage")],
        ),
        launch_template=dict(
            type="dict",
            options=dict(id=dict(type="str"), name=dict(type="str"), version=dict(type="str")),
            mutually_exclusive=[("id", "name")],
        ),
        remote_access=dict(
            type="dict",
            options=dict(
                ec2_ssh_key=dict(type="str", no_log=False),
                source_security_group_ids=dict(type="list", elements="str"),
            ),
        ),
        node_role_arn=dict(type="str"),
        subnets=dict(type="list", elements="dict", default=[]),
        tags=dict(type="dict", default={}),
        await_nodes=dict(type="bool", default=False),
        **spec_of([KUBERNETES_API]),
    )
