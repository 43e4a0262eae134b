# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: a machine pool kept by an EC2 Fleet of type ``maintain`` (``capa_fleet``).

Order, as CAPA does for AWSMachinePool: the launch template first (:mod:`.launch_template`: a new version when
the pool's template hash changes, bootstrap data in Secrets Manager/SSM with the termination watcher merged in,
since fleet capacity is mostly spot), then the fleet - ``CreateFleet`` when there is none, ``ModifyFleet`` when
the target capacity, the template version or the type x subnet overrides drifted. Fields AWS cannot modify
(default capacity type, spot allocation strategy, replacing unhealthy instances) are an error naming them: the
pool has to be deleted and created again, which the module does not do behind the user's back.

AWS lists fleets without a tag filter, so the pool's fleet is found by its tags in one paginated
``DescribeFleets``; its instances come from one ``DescribeFleetInstances``. Deletion: ``DeleteFleets`` with
``TerminateInstances``, a wait until the pool's instances are terminated, then the template and every version's
bootstrap entries.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..aws.ec2 import describe, tags_of
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.idempotency import new_client_token
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.options import argument_spec
from ..kernel.tags import OWNED, ROLE_NODE, cloud_provider_tag_key, is_owned, tag_specifications
from ..kernel.tier import Outcome
from ..kernel.waiting import wait_until
from ..workload.access import KUBERNETES_API
from . import launch_template as _launch_template
from .ami import pool_architecture, resolve_image
from .fleet_plan import (
    GONE_STATES,
    ON_DEMAND,
    SPOT,
    SPOT_STRATEGIES,
    FleetSpec,
    drift,
    launch_template_configs,
    modify_request,
    target_capacity,
    validate,
)
from .machine_spec import fleet_argument_spec
from .node_bootstrap import NodeBootstrap
from .pool_nodes import wait_for_pool_nodes
from .pool_token import PoolToken

POOL_TAG = "clusterapi.aws/machine-pool"
LIVE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")


def machine_argument_spec() -> dict[str, Any]:
    """The machine options of ``capa_fleet`` (doc fragments ``clusterapi.aws.machine`` and ``.fleet``)."""
    return fleet_argument_spec()


class FleetTier:
    """``capa_fleet``: one EC2 Fleet machine pool."""

    def parse(self, params: Mapping[str, Any]) -> FleetSpec:
        return FleetSpec.from_params(params)

    def validate(self, spec: FleetSpec, region: str | None) -> None:
        validate(spec, region)

    def reconcile(self, ctx: Context, spec: FleetSpec) -> Outcome:
        fleet = observe_fleet(ctx, spec.name)
        instances = fleet_instances(ctx, fleet)
        template = _launch_template.observe(ctx, spec.name)
        before = view(fleet, instances, template_view(template))
        if spec.state == "absent":
            delete_pool(ctx, spec.name, fleet, template)
            delete_tokens(ctx, spec)
            return Outcome(before, None)
        return Outcome(before, present(ctx, spec, fleet, instances, template))


# observing ---------------------------------------------------------------------------------------------------------
def observe_fleet(ctx: Context, name: str) -> dict[str, Any] | None:
    """The pool's live fleet: owned by the cluster and tagged with the pool (deleted fleets stay listed for hours)."""
    fleets = ctx.client("ec2").paginate("describe_fleets").get("Fleets", [])
    mine = [
        f
        for f in fleets
        if f.get("FleetState") not in GONE_STATES
        and is_owned(tags_of(f), ctx.cluster)
        and tags_of(f).get(POOL_TAG) == name
    ]
    if len(mine) > 1:
        ctx.warn(f"pool {name} has {len(mine)} fleets ({', '.join(f['FleetId'] for f in mine)}); using the first")
    return sorted(mine, key=lambda f: f["FleetId"])[0] if mine else None


def fleet_instances(ctx: Context, fleet: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The fleet's active instances (DescribeFleetInstances has no boto3 paginator: follow NextToken)."""
    if fleet is None or is_placeholder(fleet.get("FleetId")):
        return []
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"FleetId": fleet["FleetId"]}
    while True:
        page = ctx.client("ec2").describe_fleet_instances(**params)
        found += page.get("ActiveInstances", [])
        if not page.get("NextToken"):
            return found
        params["NextToken"] = page["NextToken"]


# present -----------------------------------------------------------------------------------------------------------
def pool_tags(ctx: Context, name: str) -> dict[str, str]:
    return ctx.tags(ROLE_NODE, name, {POOL_TAG: name, cloud_provider_tag_key(ctx.cluster): OWNED})


def document(boot: NodeBootstrap, spec: FleetSpec, token: str | None) -> bytes | None:
    """The pool's bootstrap document with its join ``token`` and the termination watcher (a fleet's capacity is
    spot), or None."""
    return boot.add_watcher(boot.document(spec.name, token=token))


def create_request(ctx: Context, spec: FleetSpec, template: _launch_template.Ensured) -> dict[str, Any]:
    tags = pool_tags(ctx, spec.name)
    # A maintain fleet takes only fleet tags; instances are tagged by the launch template.
    return {
        "Type": "maintain",
        "ClientToken": new_client_token(),
        "TagSpecifications": tag_specifications("fleet", tags),
        "LaunchTemplateConfigs": launch_template_configs(template.id, template.version, spec),
        "TargetCapacitySpecification": target_capacity(
            spec.total_target_capacity, spec.on_demand_target_capacity, spec.default_target_capacity_type
        ),
        "SpotOptions": {
            "AllocationStrategy": spec.spot_allocation_strategy,
            "InstanceInterruptionBehavior": "terminate",
        },
        "OnDemandOptions": {"AllocationStrategy": "lowest-price"},
        "ExcessCapacityTerminationPolicy": "termination",
        "ReplaceUnhealthyInstances": spec.replace_unhealthy_instances,
    }


def present(
    ctx: Context,
    spec: FleetSpec,
    fleet: dict[str, Any] | None,
    instances: list[dict[str, Any]],
    template: _launch_template.Template | None,
) -> dict[str, Any] | None:
    image = resolve_image(ctx, spec.machine, pool_architecture(ctx, POOL_TAG, spec.name, spec.machine.instance_type))
    template_hash = spec.template_hash(image.id)
    if fleet is not None:
        # Refuse before making a template version the fleet could never use.
        probe = create_request(ctx, spec, _launch_template.Ensured(fleet_template_id(fleet), spec.name, 0, ""))
        immutable = drift(fleet, probe)[1]
        if immutable:
            raise ReconcileError(
                f"fleet {fleet['FleetId']}: {', '.join(immutable)} cannot be changed on an EC2 Fleet; "
                "delete the pool (state=absent) and create it again"
            )
    tags = pool_tags(ctx, spec.name)
    boot = NodeBootstrap(ctx, spec.machine)
    join = PoolToken(boot, spec.name, spec.kubernetes_api)
    try:
        latest = template.latest() if template else None
        rotate = join.observe(_launch_template.version_token_id(latest))
        ensured = _launch_template.ensure(
            ctx,
            template,
            name=spec.name,
            render=lambda instance_tags, user_data: spec.machine.launch_template_data(
                image, tags=instance_tags, user_data=user_data
            ),
            template_hash=template_hash,
            tags=tags,
            instance_tags=tags,
            document=lambda token: document(boot, spec, token),
            backend=spec.machine.bootstrap.backend,
            rotate=rotate,
            join_token=lambda: join.value(rotate=bool(rotate)),
        )
        if not ensured.created:
            join.warn_unchecked()
        kept = {_launch_template.version_token_id(v) for v in (template.versions if template else [])}
        join.tidy({i for i in kept | {join.minted_id} if i})
        request = create_request(ctx, spec, ensured)
        fleet = apply_fleet(ctx, spec.name, fleet, request)
        if ensured.created or fleet.get("_changed"):
            instances = wait_for_capacity(ctx, fleet, spec.total_target_capacity, instances)
            access, unreached = join.node_access()
            wait_for_pool_nodes(ctx, access, unreached, spec.name, POOL_TAG, spec.total_target_capacity)
    finally:
        join.close()
    return view(fleet, instances, _launch_template.as_dict(ensured), ami_id=image.id)


def fleet_template_id(fleet: Mapping[str, Any]) -> str:
    for config in fleet.get("LaunchTemplateConfigs") or []:
        return (config.get("LaunchTemplateSpecification") or {}).get("LaunchTemplateId", "")
    return ""


def apply_fleet(ctx: Context, name: str, fleet: dict[str, Any] | None, request: dict[str, Any]) -> dict[str, Any]:
    """Create the fleet or modify what drifted; returns the fleet as it is (or would be) after the call.

    moto (5.2) has no ModifyFleet: that path is tested with botocore's Stubber (tests/unit/.../test_fleet.py).
    """
    ec2 = ctx.client("ec2")
    if fleet is None:
        answer = ctx.ops.call(
            ec2,
            "create_fleet",
            resource=name,
            reason="machine pool fleet",
            predicted={"FleetId": placeholder("fleet", name)},
            **request,
        )
        created = {k: v for k, v in request.items() if k not in ("ClientToken", "TagSpecifications")}
        return {
            **created,
            "FleetId": answer["FleetId"],
            "FleetState": "submitted",
            "Tags": request["TagSpecifications"][0]["Tags"],
            "_changed": True,
        }
    modifiable, _immutable = drift(fleet, request)
    if not modifiable:
        return fleet
    ctx.ops.call(
        ec2,
        "modify_fleet",
        resource=name,
        reason=f"{', '.join(modifiable)} differ",
        **modify_request(fleet["FleetId"], request, modifiable),
    )
    return {
        **fleet,
        "FleetState": "modifying",
        "TargetCapacitySpecification": request["TargetCapacitySpecification"],
        "LaunchTemplateConfigs": request["LaunchTemplateConfigs"],
        "_changed": True,
    }


def wait_for_capacity(
    ctx: Context, fleet: Mapping[str, Any], total: int, instances: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """With ``wait``, poll the fleet's instances until it has its target capacity; a miss is a warning, since
    spot capacity can be short for a while and the fleet keeps trying on its own."""
    if ctx.check_mode or not ctx.wait or is_placeholder(fleet.get("FleetId")):
        return instances

    def done(found: list[dict[str, Any]]) -> bool:
        return len(found) >= total

    try:
        return wait_until(lambda: fleet_instances(ctx, fleet), done, ctx, f"fleet {fleet['FleetId']} capacity")
    except ReconcileError as e:
        ctx.warn(str(e))
        return fleet_instances(ctx, fleet)


# absent ------------------------------------------------------------------------------------------------------------
def delete_pool(
    ctx: Context, name: str, fleet: Mapping[str, Any] | None, template: _launch_template.Template | None
) -> None:
    if fleet is not None:
        ctx.ops.call(
            ctx.client("ec2"),
            "delete_fleets",
            resource=name,
            reason="machine pool deleted",
            FleetIds=[fleet["FleetId"]],
            TerminateInstances=True,
        )
    # The template goes once no instance can still boot from its bootstrap entries.
    if not ctx.check_mode and ctx.wait and (fleet is not None or template is not None):
        wait_until(
            lambda: pool_instances(ctx, name),
            lambda found: not found,
            ctx,
            f"instances of pool {name} to terminate",
        )
    _launch_template.delete(ctx, template)


def delete_tokens(ctx: Context, spec: FleetSpec) -> None:
    """The pool's join tokens, once no instance can boot from its template any more."""
    boot = NodeBootstrap(ctx, spec.machine)
    join = PoolToken(boot, spec.name, spec.kubernetes_api)
    try:
        join.delete_all()
    finally:
        join.close()


def pool_instances(ctx: Context, name: str) -> list[str]:
    """Ids of the pool's instances that are not terminated yet, by the tags the launch template gave them."""
    filters = ctx.owner_filters() + [
        {"Name": f"tag:{POOL_TAG}", "Values": [name]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    reservations = describe(ctx, "describe_instances", "Reservations", Filters=filters)
    return [i["InstanceId"] for r in reservations for i in r.get("Instances", [])]


# result ------------------------------------------------------------------------------------------------------------
def template_view(template: _launch_template.Template | None) -> dict[str, Any] | None:
    if template is None:
        return None
    return {
        "id": template.id,
        "name": template.name,
        "version": template.latest_version,
        "template_hash": _launch_template.version_hash(template.latest()),
    }


def view(
    fleet: Mapping[str, Any] | None,
    instances: list[dict[str, Any]],
    template: dict[str, Any] | None,
    ami_id: str | None = None,
) -> dict[str, Any] | None:
    if fleet is None:
        return None
    capacity = fleet.get("TargetCapacitySpecification") or {}
    configs = fleet.get("LaunchTemplateConfigs") or []
    overrides = [o for c in configs for o in c.get("Overrides") or []]
    result = {
        "id": fleet["FleetId"],
        "state": fleet.get("FleetState"),
        "type": fleet.get("Type", "maintain"),
        "launch_template": template,
        "target_capacity": {
            "total": int(capacity.get("TotalTargetCapacity") or 0),
            "on_demand": int(capacity.get("OnDemandTargetCapacity") or 0),
            "default_type": capacity.get("DefaultTargetCapacityType"),
        },
        "instance_types": list(dict.fromkeys(o.get("InstanceType") for o in overrides)),
        "subnet_ids": list(dict.fromkeys(o.get("SubnetId") for o in overrides)),
        "spot_allocation_strategy": (fleet.get("SpotOptions") or {}).get("AllocationStrategy"),
        "replace_unhealthy_instances": bool(fleet.get("ReplaceUnhealthyInstances")),
        "instances": sorted(
            (
                {
                    "id": i.get("InstanceId"),
                    "instance_type": i.get("InstanceType"),
                    "health": i.get("InstanceHealth"),
                }
                for i in instances
            ),
            key=lambda i: i["id"] or "",
        ),
        "tags": tags_of(fleet) if fleet.get("Tags") else {},
    }
    if ami_id:
        result["ami_id"] = ami_id
    return result


def module_argument_spec() -> dict[str, Any]:
    """capa_fleet's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        **machine_argument_spec(),
        **argument_spec((KUBERNETES_API,)),
        name=dict(type="str", required=True),
        failure_domains=dict(type="list", elements="str"),
        total_target_capacity=dict(type="int", default=1),
        on_demand_target_capacity=dict(type="int", default=0),
        default_target_capacity_type=dict(type="str", default=SPOT, choices=[SPOT, ON_DEMAND]),
        instance_types=dict(type="list", elements="str", default=[]),
        spot_allocation_strategy=dict(type="str", default=SPOT_STRATEGIES[0], choices=list(SPOT_STRATEGIES)),
        replace_unhealthy_instances=dict(type="bool", default=True),
    )
