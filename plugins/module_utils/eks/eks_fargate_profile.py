# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: EKS Fargate profiles (CAPA's AWSFargateProfile).

Every field of a profile is immutable, so any change of role, subnets or selectors is a replacement. We create
the new profile first (named ``<name>-<hash>``), wait until it is ACTIVE and only then delete the old one: pods
that match the selectors always have a profile to be scheduled on, whereas delete-then-create (the only way to
keep the name, which must be unique per cluster) would leave them Pending for the minutes both steps take.
EKS allows one profile CREATING or DELETING per cluster at a time, so each step is waited for before the next.

A profile is found like a node group: ``ListFargateProfiles`` names, one ``DescribeFargateProfile`` per name that
can belong to the profile, owned and tagged ``clusterapi.aws/fargate-profile=<name>``.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping, Sequence

from ..aws import eks as aws_eks
from ..iam.roles import delete_owned_role
from ..kernel.context import Context
from ..kernel.idempotency import new_client_token
from ..kernel.operations import placeholder
from ..kernel.tags import repair_tags
from ..kernel.tier import Outcome
from ..kernel.waiting import wait_until
from . import members
from . import nodegroup_plan as plan
from .members import Members, member_subnets, member_tags, owned_members, pick_current, ready_cluster, service_role

FAILED = ("CREATE_FAILED", "DELETE_FAILED")


def _failure(observed: Mapping[str, Any] | None) -> str | None:
    if not observed:
        return None
    status = observed.get("status")
    if status in FAILED or status == "DELETED":
        return f"it is {status}"
    return None


class FargateProfileTier:
    """``capa_eks_fargate_profile``: one Fargate profile of an EKS cluster."""

    def parse(self, params: Mapping[str, Any]) -> plan.FargateSpec:
        return plan.FargateSpec.from_params(params)

    def validate(self, spec: plan.FargateSpec, region: str | None) -> None:
        plan.validate_fargate(spec)

    def reconcile(self, ctx: Context, spec: plan.FargateSpec) -> Outcome:
        run = _FargateRun(ctx, spec)
        return Outcome(*(run.present() if spec.state == "present" else run.absent()))


class _FargateRun:
    def __init__(self, ctx: Context, spec: plan.FargateSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.role_name = plan.role_name(ctx.cluster, spec.base, "fargate")
        self.conditions: dict[str, dict[str, Any]] = {}

    def observe(self) -> Members:
        """The profile's members (ListFargateProfiles gives names; only those that can be ours are described)."""
        ctx, cluster = self.ctx, self.spec.eks_cluster
        return owned_members(
            aws_eks.list_fargate_profiles(ctx, cluster),
            self.spec.base,
            plan.FARGATE_PROFILE_TAG,
            ctx.cluster,
            lambda n: aws_eks.describe_fargate_profile(ctx, cluster, n),
        )

    def result(self, observed: Mapping[str, Any] | None, replaced_from: Sequence[str] = ()) -> dict[str, Any]:
        return {"fargate_profile": plan.fargate_summary(observed, replaced_from), "conditions": dict(self.conditions)}

    def present(self) -> tuple[Any, Any]:
        ctx, spec = self.ctx, self.spec
        cluster = ready_cluster(ctx, spec.eks_cluster)
        found = self.observe() if cluster else Members([], [])
        subnets = member_subnets(ctx, spec.subnets, cluster)
        role_arn, self.conditions["IAMFargateRolesReady"] = service_role(
            ctx, spec.role_arn, self.role_name, plan.FARGATE_TRUST, plan.FARGATE_POLICIES
        )
        digest = plan.definition_hash(
            plan.fargate_definition(spec, subnets, plan.fargate_role_token(spec, ctx.cluster))
        )
        current, old = pick_current(found.members, digest)
        before = {"fargate_profile": plan.fargate_summary(current or (old[0] if old else None))}
        tags = member_tags(ctx, spec.eks_cluster, plan.FARGATE_PROFILE_TAG, spec.base, digest, spec.tags)
        if current is None:
            current = self.create(digest, subnets, role_arn, tags, found.taken, old)
        else:
            repair_tags(
                ctx, "eks", current["fargateProfileArn"], current["fargateProfileName"], current.get("tags"), tags
            )
            if current.get("status") == "CREATING" and ctx.wait:
                current = self.wait_active(current["fargateProfileName"])
        replaced: list[str] = []
        if old and (current.get("status") == plan.ACTIVE or ctx.check_mode):
            replaced = [o["fargateProfileName"] for o in old]
            self.delete(old, reason=f"replaced by {current['fargateProfileName']}")
            if spec.role_arn:
                delete_owned_role(ctx, self.role_name)
        elif old:
            ctx.warn(
                f"{', '.join(o['fargateProfileName'] for o in old)} stay until the new profile is ACTIVE (run again)"
            )
        status = current.get("status")
        self.conditions["EKSFargateProfileReady"] = {
            "status": status == plan.ACTIVE,
            "reason": "" if status == plan.ACTIVE else ("EKSFargateCreating" if status == "CREATING" else str(status)),
        }
        return before, self.result(current, replaced)

    def create(
        self,
        digest: str,
        subnets: Sequence[str],
        role_arn: str,
        tags: Mapping[str, str],
        taken: Sequence[str],
        old: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        ctx, spec = self.ctx, self.spec
        name = plan.member_name(spec.base, digest, taken, first=not old)
        request: dict[str, Any] = {
            "clusterName": spec.eks_cluster,
            "fargateProfileName": name,
            "podExecutionRoleArn": role_arn,
            "subnets": list(subnets),
            "selectors": [dict(s) for s in spec.selectors],
            "tags": dict(tags),
            "clientRequestToken": new_client_token(),
        }
        reason = (
            f"replaces {', '.join(o['fargateProfileName'] for o in old)}: profiles are immutable" if old else "missing"
        )
        predicted = {
            "fargateProfile": {
                "fargateProfileName": name,
                "fargateProfileArn": placeholder("fargate-profile", name),
                "status": plan.ACTIVE,
                "podExecutionRoleArn": role_arn,
                "subnets": list(subnets),
                "selectors": request["selectors"],
                "tags": dict(tags),
            }
        }
        answer = ctx.ops.call(
            ctx.client("eks"), "create_fargate_profile", resource=name, reason=reason, predicted=predicted, **request
        )
        if ctx.check_mode or not ctx.wait:
            return answer["fargateProfile"]
        return self.wait_active(name)

    def wait_active(self, name: str) -> dict[str, Any]:
        return wait_until(
            lambda: aws_eks.describe_fargate_profile(self.ctx, self.spec.eks_cluster, name) or {"status": "DELETED"},
            lambda p: p.get("status") == plan.ACTIVE,
            self.ctx,
            f"Fargate profile {name} to be ACTIVE",
            delay=members.POLL_DELAY,
            failed=_failure,
        )

    def delete(self, profiles: Sequence[Mapping[str, Any]], reason: str) -> bool:
        """Delete profiles one at a time (EKS refuses a second deletion while one is DELETING)."""
        ctx, cluster = self.ctx, self.spec.eks_cluster
        for index, profile in enumerate(profiles):
            name = profile["fargateProfileName"]
            if profile.get("status") == "CREATING" and ctx.wait and not ctx.check_mode:
                profile = self.wait_active(name)
            if profile.get("status") != "DELETING":
                ctx.ops.call_unless_refused(
                    ctx.client("eks"),
                    "delete_fargate_profile",
                    resource=name,
                    reason=reason,
                    refused=aws_eks.GONE,
                    clusterName=cluster,
                    fargateProfileName=name,
                )
            if ctx.check_mode:
                continue
            if not ctx.wait:
                if index + 1 < len(profiles):
                    ctx.warn("EKS deletes one Fargate profile at a time; the others wait for the next run")
                return False
            wait_until(
                functools.partial(aws_eks.describe_fargate_profile, ctx, cluster, name),
                lambda p: p is None,
                ctx,
                f"Fargate profile {name} to be deleted",
                delay=members.POLL_DELAY,
                failed=_failure,
            )
        return True

    def absent(self) -> tuple[Any, Any]:
        # Without the cluster there is no profile (and moto fails ListFargateProfiles of a missing cluster).
        profiles = self.observe().members if aws_eks.describe_cluster(self.ctx, self.spec.eks_cluster) else []
        before = {"fargate_profile": plan.fargate_summary(profiles[0] if profiles else None)}
        gone = self.delete(profiles, reason="state absent") if profiles else True
        if gone:
            delete_owned_role(self.ctx, self.role_name)
        else:
            self.ctx.warn(f"IAM role {self.role_name} is kept until the profiles are gone (run again)")
        self.conditions["EKSFargateProfileReady"] = {
            "status": False,
            "reason": "Deleted" if gone else "EKSFargateDeleting",
        }
        return before, self.result(None)


def module_argument_spec() -> dict[str, Any]:
    """capa_eks_fargate_profile's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        wait_timeout=dict(type="int", default=900),  # sized for EKS: see DOCUMENTATION
        name=dict(type="str", required=True),
        eks_cluster_name=dict(type="str"),
        pod_execution_role_arn=dict(type="str"),
        subnets=dict(type="list", elements="dict", default=[]),
        selectors=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(namespace=dict(type="str", required=True), labels=dict(type="dict")),
        ),
        tags=dict(type="dict", default={}),
    )
