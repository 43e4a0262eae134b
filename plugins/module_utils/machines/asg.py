# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: a machine pool - one launch template and one auto scaling group, both named after the pool (CAPA's
AWSMachinePool: exp/controllers/awsmachinepool_controller.go, pkg/cloud/services/autoscaling, ec2/launchtemplate.go).

Order as in CAPA: the launch template first (a new version only when its content changed; the group always runs
``$Latest``; old versions pruned), then the group (created, or updated where it drifted), its suspended processes
and lifecycle hooks, then an instance refresh when the new version changed anything but bootstrap data.

Bootstrap data never sits in the launch template: each version gets its own Secrets Manager / SSM entries
(``_bootstrap_data``), shared by every instance launched from that version, so the boot hook only reads them; the
entries are deleted with their version (pruning, ``state=absent``).

A run that changes nothing makes one ``DescribeLaunchTemplates``, one ``DescribeLaunchTemplateVersions`` (every
version: the latest to compare, the rest to prune), one ``DescribeAutoScalingGroups``, one
``DescribeLifecycleHooks``, the AMI lookup, and with kubeadm bootstrap one ``GetSecretValue`` (the cluster PKI the
bootstrap document, hence its hash, is rendered from). ``DescribeInstanceRefreshes`` only when a refresh is due.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.autoscaling import auto_scaling_group, instance_refreshes, lifecycle_hooks, pool_group
from ..aws.ec2 import launch_template, tags_of
from ..aws.errors import missing_as_none
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.idempotency import new_client_token
from ..kernel.operations import placeholder
from ..kernel.options import argument_spec
from ..kernel.tags import (
    OWNED,
    ROLE_NODE,
    cloud_provider_tag_key,
    cluster_tag_key,
    dict_to_tags,
    is_owned,
    repair_tags,
)
from ..kernel.tier import Outcome
from ..kernel.waiting import wait_until
from ..workload.access import KUBERNETES_API
from . import bootstrap_data as _bootstrap_data
from .ami import Image, pool_architecture, resolve_image
from .asg_plan import (
    ACTIVE_REFRESH_STATES,
    BOOTSTRAP_HASH_TAG,
    GROUP_TAG,
    HOOK_DEFAULT_RESULT,
    HOOK_HEARTBEAT,
    LATEST,
    PROCESSES,
    TERMINATING,
    TOKEN_DIFFERENCE,
    PoolSpec,
    bootstrap_hash,
    bootstrap_ref_of,
    conditions,
    create_request,
    desired_after,
    group_update,
    hook_changes,
    hook_request,
    mixed_policy_view,
    needs_refresh,
    process_changes,
    template_differences,
    validate,
    version_token_id,
    versions_to_prune,
)
from .bootstrap_data import BOOTSTRAP_TAG, BootstrapRef
from .machine_spec import NONE, SECRETS_MANAGER, asg_argument_spec
from .node_bootstrap import NodeBootstrap
from .pool_nodes import wait_for_pool_nodes
from .pool_token import HASH_TOKEN, TOKEN_ID_TAG, PoolToken

# The drain hook's name: the auto scaling group and its nodes' termination watcher must agree on it.
from .termination import lifecycle_hook_name

__all__ = ["PROCESSES", "AsgTier", "machine_argument_spec"]

# The tag AWS gives every instance an auto scaling group launches (the pool's Node wait finds them by it).
ASG_NAME_TAG = "aws:autoscaling:groupName"
MAX_PRUNE_BATCH = 200  # DeleteLaunchTemplateVersions takes at most 200 versions


def machine_argument_spec() -> dict[str, Any]:
    """The machine options of ``capa_asg`` (doc fragments ``clusterapi.aws.machine`` and ``.asg``)."""
    return asg_argument_spec()


def drain_hook_name(pool: str) -> str:
    return lifecycle_hook_name(pool)


def spec_from_params(params: Mapping[str, Any]) -> PoolSpec:
    return PoolSpec.from_params(params, drain_hook_name(params["name"]))


# observing ---------------------------------------------------------------------------------------------------------
def observe_versions(ctx: Context, template: Mapping[str, Any] | None) -> dict[int, dict[str, Any]]:
    """Every version of the template, by number, from one paginated describe."""
    if template is None:
        return {}
    versions = (
        ctx.client("ec2")
        .paginate("describe_launch_template_versions", LaunchTemplateId=template["LaunchTemplateId"])
        .get("LaunchTemplateVersions", [])
    )
    return {v["VersionNumber"]: v for v in versions}


def active_refreshes(ctx: Context, name: str) -> list[dict[str, Any]]:
    return [r for r in instance_refreshes(ctx, name) if r.get("Status") in ACTIVE_REFRESH_STATES]


class Observed:
    """What one run read: the template, its versions, the group and its hooks."""

    def __init__(self, ctx: Context, name: str) -> None:
        self.template = launch_template(ctx, name)
        self.versions = observe_versions(ctx, self.template)
        self.group = pool_group(ctx, name)
        self.hooks = lifecycle_hooks(ctx, name) if self.group is not None else []

    @property
    def latest(self) -> dict[str, Any] | None:
        number = (self.template or {}).get("LatestVersionNumber")
        return self.versions.get(number) if number is not None else None


# the tier ----------------------------------------------------------------------------------------------------------
class AsgTier:
    def parse(self, params: Mapping[str, Any]) -> PoolSpec:
        return spec_from_params(params)

    def validate(self, spec: PoolSpec, region: str | None) -> None:
        validate(spec, region)

    def reconcile(self, ctx: Context, spec: PoolSpec) -> Outcome:
        observed = Observed(ctx, spec.name)
        before = _result(spec, observed.template, observed.versions, observed.group, observed.hooks, None, "")
        if spec.state == "absent":
            PoolDeletion(ctx, spec, observed).run()
            return Outcome(before, _result(spec, None, {}, None, [], None, ""))
        run = PoolRun(ctx, spec, observed)
        try:
            run.reconcile()
        finally:
            run.join.close()
        return Outcome(before, run.result())


class PoolRun:
    """One present-state reconcile of a pool."""

    def __init__(self, ctx: Context, spec: PoolSpec, observed: Observed) -> None:
        self.ctx, self.spec, self.observed = ctx, spec, observed
        self.template = observed.template
        self.versions = dict(observed.versions)
        self.group = observed.group
        self.hooks = list(observed.hooks)
        self.refresh: dict[str, Any] | None = None
        self.refresh_reason = "InstanceRefreshNotNeeded"
        self.differences: list[str] = []
        self.group_changed = False
        self.boot = NodeBootstrap(ctx, spec.machine)
        self.join = PoolToken(self.boot, spec.name, spec.kubernetes_api)

    def reconcile(self) -> None:
        ctx, spec = self.ctx, self.spec
        self._check_owned()
        image = resolve_image(
            ctx, spec.machine, pool_architecture(ctx, ASG_NAME_TAG, spec.name, spec.machine.instance_type)
        )
        latest = self.observed.latest
        token_due = self.join.observe(version_token_id(latest["LaunchTemplateData"]) if latest else None)
        # The hash is the document's with a fixed token: a rotated token changes no machine of the pool.
        digest = bootstrap_hash(self._document(HASH_TOKEN))
        instance_tags = ctx.tags(
            ROLE_NODE,
            spec.name,
            {cloud_provider_tag_key(ctx.cluster): OWNED, GROUP_TAG: spec.name, BOOTSTRAP_HASH_TAG: digest},
        )
        # Compared with the latest version as it would be written; the entries' names are new in every version, so
        # only their backend counts (the hash tag says whether the data changed).
        compared_tags, hook = dict(instance_tags), None
        if spec.machine.has_bootstrap_data:
            compared_tags[BOOTSTRAP_TAG] = BootstrapRef(spec.machine.bootstrap.backend, "compared", 1).tag_value()
            hook = "boot-hook"
        desired = spec.machine.launch_template_data(image, tags=compared_tags, user_data=hook)
        self.differences = template_differences(desired, latest["LaunchTemplateData"] if latest else None)
        if token_due and latest is not None:
            self.differences.append(TOKEN_DIFFERENCE)  # the pool's join token is rotated: no instance refresh
        refresh_due = self.group is not None and needs_refresh(self.differences)
        if refresh_due and spec.refresh["disable"]:
            refresh_due, self.refresh_reason = False, "InstanceRefreshDisabled"
        # The token comes first: a pool whose new version cannot get one is refused before anything changes.
        token = self.join.value(rotate=bool(token_due)) if self.differences else None
        if refresh_due:
            self._cancel_refreshes()  # CAPA: never change the template under a running refresh
        if self.differences:
            document = self._document(token[0] if token else None)
            self._new_version(instance_tags, document, image, token[1] if token else None)
        else:
            self.join.warn_unchecked()
        self._prune()
        kept = (version_token_id(v["LaunchTemplateData"]) for v in self.versions.values())
        self.join.tidy(i for i in kept if i)
        self._ensure_template_tags()
        self._reconcile_group()
        if refresh_due:
            self._start_refresh()
        if self.group_changed and not ctx.check_mode:
            # The ARN, the instances launched so far and AWS's own desired capacity, as AWS now reports them.
            self.group = auto_scaling_group(ctx, spec.name) or self.group
            access, unreached = self.join.node_access()
            size = int((self.group or {}).get("DesiredCapacity") or 0)
            wait_for_pool_nodes(ctx, access, unreached, spec.name, ASG_NAME_TAG, size)

    # ownership ---------------------------------------------------------------------------------------------------
    def _check_owned(self) -> None:
        cluster = self.ctx.cluster
        if self.template and not is_owned(tags_of(self.template), cluster):
            raise ReconcileError(
                f"launch template {self.spec.name} exists but is not owned by cluster {cluster}; not changing it"
            )
        if self.group and not is_owned(tags_of(self.group), cluster):
            raise ReconcileError(
                f"auto scaling group {self.spec.name} exists but is not owned by cluster {cluster}; not changing it"
            )

    # launch template ---------------------------------------------------------------------------------------------
    def _document(self, token: str | None) -> bytes | None:
        """The raw bootstrap data with the join ``token`` (deterministic: its sha256 with :data:`HASH_TOKEN`
        decides whether bootstrap data changed); the watcher drains nodes on spot interruption and, with the drain
        hook, on scale-in."""
        spec = self.spec
        document = self.boot.document(spec.name, token=token)
        if not (spec.drain_on_scale_in or spec.uses_spot):
            return document
        return self.boot.add_watcher(document, lifecycle_hook=spec.drain_hook_name if spec.drain_on_scale_in else None)

    def _new_version(
        self, instance_tags: dict[str, str], document: bytes | None, image: Image, token_id: str | None
    ) -> None:
        ctx, spec = self.ctx, self.spec
        tags = dict(instance_tags)
        if token_id:
            tags[TOKEN_ID_TAG] = token_id
        ref = None
        user_data = None
        if document is not None:
            self._sweep_entries()
            entry_tags = {k: v for k, v in tags.items() if k != BOOTSTRAP_HASH_TAG}
            ref = _bootstrap_data.store(
                ctx,
                spec.machine.bootstrap.backend,
                f"{spec.name}/{tags[BOOTSTRAP_HASH_TAG][:16]}",
                document,
                entry_tags,
            )
            tags[BOOTSTRAP_TAG] = ref.tag_value()
            hook = _bootstrap_data.boot_script(ctx.region or "", ref, delete_after_fetch=False)
            user_data = _bootstrap_data.user_data(hook)
        data = spec.machine.launch_template_data(image, tags=tags, user_data=user_data)
        reason = ", ".join(self.differences)
        token = new_client_token()
        try:
            if self.template is None:
                answer = ctx.ops.call(
                    ctx.client("ec2"),
                    "create_launch_template",
                    resource=spec.name,
                    reason="no launch template",
                    predicted={
                        "LaunchTemplate": {
                            "LaunchTemplateId": placeholder("launch-template", spec.name),
                            "LaunchTemplateName": spec.name,
                            "DefaultVersionNumber": 1,
                            "LatestVersionNumber": 1,
                            "Tags": dict_to_tags(self._pool_tags()),
                        }
                    },
                    LaunchTemplateName=spec.name,
                    LaunchTemplateData=data,
                    ClientToken=token,
                    TagSpecifications=[{"ResourceType": "launch-template", "Tags": dict_to_tags(self._pool_tags())}],
                )
                self.template = answer["LaunchTemplate"]
                number = 1
            else:
                number = self.template["LatestVersionNumber"] + 1
                answer = ctx.ops.call(
                    ctx.client("ec2"),
                    "create_launch_template_version",
                    resource=f"{spec.name} version {number}",
                    reason=f"launch template differs: {reason}",
                    predicted={"LaunchTemplateVersion": {"VersionNumber": number}},
                    LaunchTemplateId=self.template["LaunchTemplateId"],
                    LaunchTemplateData=data,
                    ClientToken=token,
                )
                number = answer["LaunchTemplateVersion"]["VersionNumber"]
                self.template = {**self.template, "LatestVersionNumber": number}
        except botocore.exceptions.ClientError:
            if ref is not None:  # nothing else would ever find or delete these entries
                _bootstrap_data.delete(ctx, ref, spec.name)
            raise
        self.versions[number] = {
            "VersionNumber": number,
            "DefaultVersion": number == self.template.get("DefaultVersionNumber"),
            "LaunchTemplateData": data,
        }

    def _sweep_entries(self) -> None:
        """Before a new version's entries are written: delete the pool's entries no version refers to (a run
        killed between storing them and creating the version left them)."""
        kept = {ref.prefix for ref in map(bootstrap_ref_of_version, self.observed.versions.values()) if ref}
        _sweep_pool_entries(self.ctx, self.spec, kept)

    def _pool_tags(self) -> dict[str, str]:
        """The tags of the template and of the group (their instances get theirs from the template)."""
        return self.ctx.tags(ROLE_NODE, self.spec.name, {cloud_provider_tag_key(self.ctx.cluster): OWNED})

    def _ensure_template_tags(self) -> None:
        if self.template:
            label = f"launch template {self.spec.name}"
            current = tags_of(self.template)
            repair_tags(self.ctx, "ec2", self.template["LaunchTemplateId"], label, current, self._pool_tags())

    def _prune(self) -> None:
        if not self.template:
            return
        doomed = versions_to_prune(
            sorted(self.versions),
            self.template.get("DefaultVersionNumber", 1),
            self.template.get("LatestVersionNumber", 1),
        )
        if not doomed:
            return
        for start in range(0, len(doomed), MAX_PRUNE_BATCH):
            batch = doomed[start : start + MAX_PRUNE_BATCH]
            self.ctx.ops.call(
                self.ctx.client("ec2"),
                "delete_launch_template_versions",
                resource=f"{self.spec.name} versions {', '.join(map(str, batch))}",
                reason="older than the version before the latest (and not the default)",
                LaunchTemplateId=self.template["LaunchTemplateId"],
                Versions=[str(n) for n in batch],
            )
        for number in doomed:
            _delete_entries(self.ctx, self.spec.name, self.versions.pop(number))

    # group ---------------------------------------------------------------------------------------------------------
    def _reconcile_group(self) -> None:
        ctx, spec = self.ctx, self.spec
        client = ctx.client("autoscaling")
        if self.group is None:
            request = create_request(spec, spec.name, self._pool_tags())
            ctx.ops.call(client, "create_auto_scaling_group", resource=spec.name, reason="no group", **request)
            self.group = _predicted_group(ctx, spec, request)
            self.group_changed = True
        else:
            update, names = group_update(spec, spec.name, self.group)
            if update:
                ctx.ops.call(
                    client,
                    "update_auto_scaling_group",
                    resource=spec.name,
                    reason=f"group differs: {', '.join(names)}",
                    **update,
                )
                self.group = _apply_update(self.group, update, spec)
                self.group_changed = True
            self._ensure_group_tags()
        self._reconcile_processes()
        self._reconcile_hooks()

    def _ensure_group_tags(self) -> None:
        group = self.group or {}
        tags = repair_tags(self.ctx, "autoscaling", self.spec.name, self.spec.name, tags_of(group), self._pool_tags())
        self.group = {**group, "Tags": dict_to_tags(tags)}

    def _reconcile_processes(self) -> None:
        suspend, resume = process_changes(self.spec.suspended_processes, self.group)
        for method, processes, why in (
            ("suspend_processes", suspend, "suspended_processes"),
            ("resume_processes", resume, "not in suspended_processes"),
        ):
            if processes:
                self.ctx.ops.call(
                    self.ctx.client("autoscaling"),
                    method,
                    resource=self.spec.name,
                    reason=f"{why}: {', '.join(processes)}",
                    AutoScalingGroupName=self.spec.name,
                    ScalingProcesses=processes,
                )
        if suspend or resume:
            self.group = {
                **(self.group or {}),
                "SuspendedProcesses": [{"ProcessName": p} for p in self.spec.suspended_processes],
            }

    def _reconcile_hooks(self) -> None:
        put, delete = hook_changes(self.spec.hooks, self.hooks)
        client = self.ctx.client("autoscaling")
        for hook in put:
            self.ctx.ops.call(
                client,
                "put_lifecycle_hook",
                resource=f"{self.spec.name} hook {hook['name']}",
                reason="lifecycle hook missing or different",
                **hook_request(self.spec.name, hook),
            )
        for name in delete:
            self.ctx.ops.call(
                client,
                "delete_lifecycle_hook",
                resource=f"{self.spec.name} hook {name}",
                reason="not in the spec",
                AutoScalingGroupName=self.spec.name,
                LifecycleHookName=name,
            )
        self.hooks = [hook_request(self.spec.name, h) for h in self.spec.hooks]

    # instance refresh --------------------------------------------------------------------------------------------
    def _cancel_refreshes(self) -> None:
        ctx, name = self.ctx, self.spec.name
        running = active_refreshes(ctx, name)
        if any(r.get("Status") in ("Pending", "InProgress") for r in running):
            # ActiveInstanceRefreshNotFound: it ended meanwhile.
            missing_as_none(
                ctx.ops.call,
                ctx.client("autoscaling"),
                "cancel_instance_refresh",
                resource=name,
                reason="the launch template changes under it",
                AutoScalingGroupName=name,
            )
        if running and not ctx.check_mode:
            wait_until(lambda: active_refreshes(ctx, name), lambda found: not found, ctx, f"{name}: refresh to stop")

    def _start_refresh(self) -> None:
        ctx, spec = self.ctx, self.spec
        preferences: dict[str, Any] = {"MinHealthyPercentage": spec.refresh["min_healthy_percentage"]}
        if spec.refresh.get("instance_warmup") is not None:
            preferences["InstanceWarmup"] = spec.refresh["instance_warmup"]
        answer = ctx.ops.call(
            ctx.client("autoscaling"),
            "start_instance_refresh",
            resource=spec.name,
            reason=f"new launch template version: {', '.join(self.differences)}",
            predicted={"InstanceRefreshId": placeholder("instance-refresh", spec.name)},
            AutoScalingGroupName=spec.name,
            Strategy="Rolling",
            Preferences=preferences,
        )
        self.refresh = {"id": answer["InstanceRefreshId"], "status": "Pending"}

    def result(self) -> dict[str, Any]:
        return _result(
            self.spec, self.template, self.versions, self.group, self.hooks, self.refresh, self.refresh_reason
        )


# deletion ----------------------------------------------------------------------------------------------------------
class PoolDeletion:
    """``state=absent``: force-delete the group (its instances go with it), wait until it is gone, then delete the
    bootstrap entries of every version and the template. Resources the cluster does not own are left alone."""

    def __init__(self, ctx: Context, spec: PoolSpec, observed: Observed) -> None:
        self.ctx, self.spec, self.observed = ctx, spec, observed

    def run(self) -> None:
        ctx, name = self.ctx, self.spec.name
        group, template = self.observed.group, self.observed.template
        if group is not None and not is_owned(tags_of(group), ctx.cluster):
            ctx.warn(f"auto scaling group {name} is not owned by cluster {ctx.cluster}; left alone")
            group = None
        if template is not None and not is_owned(tags_of(template), ctx.cluster):
            ctx.warn(f"launch template {name} is not owned by cluster {ctx.cluster}; left alone")
            template = None
        if group is not None:
            if group.get("Status") != "Delete in progress":
                ctx.ops.call(
                    ctx.client("autoscaling"),
                    "delete_auto_scaling_group",
                    resource=name,
                    reason="state is absent",
                    AutoScalingGroupName=name,
                    ForceDelete=True,
                )
            if ctx.wait and not ctx.check_mode:
                wait_until(lambda: auto_scaling_group(ctx, name), lambda g: g is None, ctx, f"group {name} to go", 10.0)
        if template is not None:
            for version in self.observed.versions.values():
                _delete_entries(ctx, name, version)
            ctx.ops.call(
                ctx.client("ec2"),
                "delete_launch_template",
                resource=name,
                reason="state is absent",
                LaunchTemplateId=template["LaunchTemplateId"],
            )
        _sweep_pool_entries(ctx, self.spec, set())
        boot = NodeBootstrap(ctx, self.spec.machine)
        join = PoolToken(boot, name, self.spec.kubernetes_api)
        try:
            join.delete_all()
        finally:
            join.close()


# helpers -----------------------------------------------------------------------------------------------------------
def bootstrap_ref_of_version(version: Mapping[str, Any]) -> BootstrapRef | None:
    return bootstrap_ref_of(version.get("LaunchTemplateData") or {})


def _sweep_pool_entries(ctx: Context, spec: PoolSpec, kept: set[str]) -> None:
    bootstrap = spec.machine.bootstrap
    if ctx.check_mode or bootstrap.type == NONE or bootstrap.backend != SECRETS_MANAGER:
        return
    owner = {cluster_tag_key(ctx.cluster): OWNED, GROUP_TAG: spec.name}
    # Machine groups' entries carry MachineName; a pool's do not (one set per template version).
    stray = _bootstrap_data.unreferenced_secrets(ctx, owner, kept, unmarked="MachineName")
    _bootstrap_data.delete_named(ctx, stray, "bootstrap data no template version refers to")


def _delete_entries(ctx: Context, pool: str, version: Mapping[str, Any]) -> None:
    ref: BootstrapRef | None = bootstrap_ref_of(version.get("LaunchTemplateData") or {})
    if ref is not None:
        _bootstrap_data.delete(ctx, ref, f"{pool} version {version.get('VersionNumber')}")


def _predicted_group(ctx: Context, spec: PoolSpec, request: Mapping[str, Any]) -> dict[str, Any]:
    """The group as AWS will describe it right after CreateAutoScalingGroup."""
    return {
        "AutoScalingGroupName": spec.name,
        "AutoScalingGroupARN": placeholder("auto-scaling-group", spec.name),
        "MinSize": spec.min_size,
        "MaxSize": spec.max_size,
        "DesiredCapacity": desired_after(spec, None),
        "VPCZoneIdentifier": request["VPCZoneIdentifier"],
        "CapacityRebalance": spec.capacity_rebalance,
        "DefaultCooldown": spec.default_cooldown,
        "DefaultInstanceWarmup": spec.default_instance_warmup,
        "Instances": [],
        "SuspendedProcesses": [],
        "Tags": request["Tags"],
        **{k: request[k] for k in ("LaunchTemplate", "MixedInstancesPolicy") if k in request},
    }


def _apply_update(group: Mapping[str, Any], update: Mapping[str, Any], spec: PoolSpec) -> dict[str, Any]:
    updated = {**group, **{k: v for k, v in update.items() if k != "AutoScalingGroupName"}}
    updated["DesiredCapacity"] = desired_after(spec, group)
    if "MixedInstancesPolicy" in update:
        updated.pop("LaunchTemplate", None)
    else:
        updated.pop("MixedInstancesPolicy", None)
    return updated


def _result(
    spec: PoolSpec,
    template: Mapping[str, Any] | None,
    versions: Mapping[int, Mapping[str, Any]],
    group: Mapping[str, Any] | None,
    hooks: Sequence[Mapping[str, Any]],
    refresh: Mapping[str, Any] | None,
    refresh_reason: str,
) -> dict[str, Any]:
    launch_template = None
    if template is not None:
        launch_template = {
            "id": template.get("LaunchTemplateId"),
            "name": template.get("LaunchTemplateName", spec.name),
            "latest_version": template.get("LatestVersionNumber"),
            "default_version": template.get("DefaultVersionNumber"),
            "versions": sorted(versions),
        }
    auto_scaling_group = None
    if group is not None:
        auto_scaling_group = {
            "name": group.get("AutoScalingGroupName"),
            "arn": group.get("AutoScalingGroupARN"),
            "min_size": group.get("MinSize"),
            "max_size": group.get("MaxSize"),
            "desired_capacity": group.get("DesiredCapacity"),
            "subnet_ids": sorted(s for s in (group.get("VPCZoneIdentifier") or "").split(",") if s),
            "capacity_rebalance": bool(group.get("CapacityRebalance")),
            "instances": [
                {
                    "id": i.get("InstanceId"),
                    "availability_zone": i.get("AvailabilityZone"),
                    "lifecycle_state": i.get("LifecycleState"),
                    "health_status": i.get("HealthStatus"),
                    "instance_type": i.get("InstanceType"),
                    "launch_template_version": (i.get("LaunchTemplate") or {}).get("Version"),
                }
                for i in sorted(group.get("Instances") or [], key=lambda i: i.get("InstanceId", ""))
            ],
            "suspended_processes": sorted(p["ProcessName"] for p in group.get("SuspendedProcesses") or []),
            "mixed_instances_policy": mixed_policy_view(group),
            "lifecycle_hooks": sorted(h["LifecycleHookName"] for h in hooks),
            "launch_template_version": LATEST,
        }
    return {
        "launch_template": launch_template,
        "auto_scaling_group": auto_scaling_group,
        "instance_refresh": dict(refresh) if refresh else None,
        "conditions": conditions(template is not None, group, refresh, refresh_reason),
    }


def module_argument_spec() -> dict[str, Any]:
    """capa_asg's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        **machine_argument_spec(),
        **argument_spec((KUBERNETES_API,)),
        name=dict(type="str", required=True),
        failure_domains=dict(type="list", elements="str"),
        min_size=dict(type="int", default=1),
        max_size=dict(type="int", default=1),
        desired_capacity=dict(type="int"),
        externally_managed_replicas=dict(type="bool", default=False),
        mixed_instances_policy=dict(
            type="dict",
            options=dict(
                instances_distribution=dict(
                    type="dict",
                    default={},
                    options=dict(
                        on_demand_base_capacity=dict(type="int", default=0),
                        on_demand_percentage_above_base_capacity=dict(type="int", default=100),
                        spot_allocation_strategy=dict(
                            type="str",
                            default="lowest-price",
                            choices=[
                                "lowest-price",
                                "capacity-optimized",
                                "capacity-optimized-prioritized",
                                "price-capacity-optimized",
                            ],
                        ),
                        on_demand_allocation_strategy=dict(
                            type="str", default="prioritized", choices=["prioritized", "lowest-price"]
                        ),
                    ),
                ),
                overrides=dict(
                    type="list",
                    elements="dict",
                    default=[],
                    options=dict(instance_type=dict(type="str", required=True)),
                ),
            ),
        ),
        suspended_processes=dict(type="list", elements="str", choices=list(PROCESSES), default=[]),
        capacity_rebalance=dict(type="bool", default=False),
        default_cooldown=dict(type="int", default=300),
        default_instance_warmup=dict(type="int", default=300),
        refresh_preferences=dict(
            type="dict",
            default={},
            options=dict(
                disable=dict(type="bool", default=False),
                min_healthy_percentage=dict(type="int", default=90),
                instance_warmup=dict(type="int"),
            ),
        ),
        lifecycle_hooks=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(
                name=dict(type="str", required=True),
                lifecycle_transition=dict(
                    type="str",
                    default=TERMINATING,
                    choices=["autoscaling:EC2_INSTANCE_LAUNCHING", TERMINATING],
                ),
                default_result=dict(type="str", default=HOOK_DEFAULT_RESULT, choices=["CONTINUE", "ABANDON"]),
                heartbeat_timeout=dict(type="int", default=HOOK_HEARTBEAT),
                notification_target_arn=dict(type="str"),
                role_arn=dict(type="str"),
                notification_metadata=dict(type="str"),
            ),
        ),
        drain_on_scale_in=dict(type="bool"),
    )
