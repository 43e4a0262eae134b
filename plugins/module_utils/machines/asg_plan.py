# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the pure decisions of a machine pool (CAPA's AWSMachinePool: launch template + auto scaling group).

No AWS calls here. The pool tier (``asg``) observes AWS, and these functions decide: whether the latest launch
template version differs from the data the pool's machine asks for (``MachineSpec.launch_template_data``) and
whether that difference needs an instance refresh (anything but bootstrap data does), which old versions to prune,
which auto scaling group fields drifted, which processes to suspend or resume and which lifecycle hooks to put or
delete.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..kernel.errors import SpecError
from ..kernel.validation import at, check_availability_zone, check_not_negative
from ..workload.access import KubernetesApiSettings
from .bootstrap_data import BOOTSTRAP_TAG, BootstrapRef
from .machine_spec import POOL_BOOTSTRAP, MachineSpec
from .plan import check_placement_inputs, default_failure_domains

# CAPA's tag on pool instances: sha256 of the raw bootstrap data. It alone says whether bootstrap data changed
# (the entries' names are random per version).
BOOTSTRAP_HASH_TAG = "sigs.k8s.io/cluster-api-provider-aws/bootstrap-data-hash"
GROUP_TAG = "clusterapi.aws/machine-group"
LATEST = "$Latest"

# Pool name = launch template name = group name. Launch template names are 3-128 characters; we keep to the
# Kubernetes object-name alphabet CAPA's pools use.
POOL_NAME = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
POOL_NAME_MIN, POOL_NAME_MAX = 3, 128

PROCESSES = (
    "Launch",
    "Terminate",
    "AddToLoadBalancer",
    "AlarmNotification",
    "AZRebalance",
    "HealthCheck",
    "InstanceRefresh",
    "ReplaceUnhealthy",
    "ScheduledActions",
)
# Refresh states in which StartInstanceRefresh would be refused (InstanceRefreshInProgress).
ACTIVE_REFRESH_STATES = ("Pending", "InProgress", "Cancelling", "RollbackInProgress", "Baking")
SPOT_STRATEGIES = ("lowest-price", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized")
ON_DEMAND_STRATEGIES = ("prioritized", "lowest-price")
LAUNCHING = "autoscaling:EC2_INSTANCE_LAUNCHING"
TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
TRANSITIONS = (LAUNCHING, TERMINATING)
HOOK_RESULTS = ("CONTINUE", "ABANDON")
# CAPA's defaults for user hooks; the drain hook only gives a watcher time, so it continues by itself.
HOOK_DEFAULT_RESULT, HOOK_HEARTBEAT = "ABANDON", 3600
DRAIN_DEFAULT_RESULT, DRAIN_HEARTBEAT = "CONTINUE", 300

# Launch template fields whose change needs no instance refresh (CAPA: user-data-only changes roll nothing).
# A new join token for the pool's instances (``pool_token.py``): a new version, never an instance refresh.
TOKEN_DIFFERENCE = "bootstrap_token"
BOOTSTRAP_FIELDS = frozenset({"bootstrap_data", TOKEN_DIFFERENCE})
# The instance tag naming the join token a version's entries carry (pool_token.TOKEN_ID_TAG).
TOKEN_ID_TAG = "clusterapi.aws/join-token-id"

# CAPA's AWSMachinePool conditions and reasons (exp/api/v1beta2/conditions_consts.go).
ASG_READY = "ASGReady"
LAUNCH_TEMPLATE_READY = "LaunchTemplateReady"
INSTANCE_REFRESH_STARTED = "InstanceRefreshStarted"


@dataclass
class PoolSpec:
    """The pool's options as plain values, defaults resolved; its machines' own in ``machine``."""

    state: str
    name: str
    subnets: list[dict[str, Any]]
    failure_domains: list[str]
    min_size: int
    max_size: int
    desired_capacity: int | None
    externally_managed: bool
    machine: MachineSpec
    mixed: dict[str, Any] | None
    suspended_processes: list[str]
    capacity_rebalance: bool
    default_cooldown: int
    default_instance_warmup: int
    refresh: dict[str, Any]
    lifecycle_hooks: list[dict[str, Any]]
    drain_on_scale_in: bool
    kubernetes_api: KubernetesApiSettings = KubernetesApiSettings()
    drain_hook_name: str = ""
    hooks: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_params(cls, params: Mapping[str, Any], drain_hook_name: str) -> PoolSpec:
        subnets = [dict(s) for s in params["subnets"]]
        domains = list(params["failure_domains"] or ()) or default_failure_domains(subnets, public=False)
        refresh = dict(params["refresh_preferences"])
        mixed = _mixed_from_params(params["mixed_instances_policy"])
        drain = params["drain_on_scale_in"]
        spec = cls(
            state=params["state"],
            name=params["name"],
            subnets=subnets,
            failure_domains=domains,
            min_size=params["min_size"],
            max_size=params["max_size"],
            desired_capacity=params["desired_capacity"],
            externally_managed=params["externally_managed_replicas"],
            machine=MachineSpec.from_params(params, POOL_BOOTSTRAP),
            mixed=mixed,
            suspended_processes=list(dict.fromkeys(params["suspended_processes"])),
            capacity_rebalance=params["capacity_rebalance"],
            default_cooldown=params["default_cooldown"],
            default_instance_warmup=params["default_instance_warmup"],
            refresh=refresh,
            lifecycle_hooks=[_hook_from_params(h) for h in params["lifecycle_hooks"]],
            drain_on_scale_in=False,
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
            drain_hook_name=drain_hook_name,
        )
        # Draining matters most where instances vanish at two minutes' notice: on by default with spot.
        spec.drain_on_scale_in = spec.uses_spot if drain is None else bool(drain)
        spec.hooks = spec.lifecycle_hooks + ([spec.drain_hook()] if spec.drain_on_scale_in else [])
        return spec

    @property
    def uses_spot(self) -> bool:
        if self.machine.spot is not None:
            return True
        if self.mixed is None:
            return False
        return self.mixed["instances_distribution"]["on_demand_percentage_above_base_capacity"] < 100

    def drain_hook(self) -> dict[str, Any]:
        return {
            "name": self.drain_hook_name,
            "lifecycle_transition": TERMINATING,
            "default_result": DRAIN_DEFAULT_RESULT,
            "heartbeat_timeout": DRAIN_HEARTBEAT,
            "notification_target_arn": None,
            "role_arn": None,
            "notification_metadata": None,
        }

    def zone_subnet_ids(self) -> list[str]:
        """Every private subnet of the failure domains, in input order (CAPA: failure domains -> private subnets)."""
        return [
            s["id"]
            for s in self.subnets
            if not s.get("is_public") and s.get("availability_zone") in self.failure_domains and s.get("id")
        ]


def _mixed_from_params(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The validated mixed instances policy (every distribution default filled in by the argument spec)."""
    if value is None:
        return None
    return {
        "instances_distribution": dict(value["instances_distribution"]),
        "overrides": [{"instance_type": o["instance_type"]} for o in value["overrides"]],
    }


def _hook_from_params(hook: Mapping[str, Any]) -> dict[str, Any]:
    return {key: hook[key] for key in HOOK_FIELDS}


HOOK_FIELDS = (
    "name",
    "lifecycle_transition",
    "default_result",
    "heartbeat_timeout",
    "notification_target_arn",
    "role_arn",
    "notification_metadata",
)


# validation (pure, before any AWS call) ----------------------------------------------------------------------------
def validate(spec: PoolSpec, region: str | None) -> None:
    if not POOL_NAME_MIN <= len(spec.name) <= POOL_NAME_MAX or not POOL_NAME.match(spec.name):
        raise SpecError(
            "name",
            f"'{spec.name}' must be {POOL_NAME_MIN} to {POOL_NAME_MAX} lower-case letters, digits, '.' and '-' "
            "(it names the launch template and the auto scaling group)",
        )
    check_placement_inputs(spec.subnets, spec.machine.security_group_ids)
    if spec.state == "absent":
        return
    _validate_sizes(spec)
    spec.machine.validate()
    _validate_market(spec)
    _validate_group(spec)
    if not spec.failure_domains:
        raise SpecError("failure_domains", "none given and the subnets have no private subnet")
    for index, zone in enumerate(spec.failure_domains):
        check_availability_zone(zone, region, f"failure_domains[{index}]")
        if not any(s.get("availability_zone") == zone and not s.get("is_public") for s in spec.subnets):
            raise SpecError(f"failure_domains[{index}]", f"no private subnet in {zone} among subnets")


def _validate_sizes(spec: PoolSpec) -> None:
    check_pool_sizes(spec.min_size, spec.max_size, spec.desired_capacity)


def check_pool_sizes(min_size: int, max_size: int, desired: int | None, where: str = "") -> None:
    """A pool's sizes, once (capa_asg, capa_fleet's cluster section, the cluster spec's machine pools). The desired
    capacity must fit also when cluster-autoscaler owns it (externally managed): the group starts with it."""
    check_not_negative(min_size, at(where, "min_size"))
    if max_size < min_size:
        raise SpecError(at(where, "max_size"), f"{max_size} is less than min_size {min_size}")
    if desired is not None and not min_size <= desired <= max_size:
        raise SpecError(
            at(where, "desired_capacity"), f"{desired} is not between min_size {min_size} and max_size {max_size}"
        )


def _validate_market(spec: PoolSpec) -> None:
    if spec.mixed is None:
        return
    if spec.machine.spot is not None:
        # AWS refuses a mixed instances policy whose launch template requests spot itself.
        raise SpecError(
            "spot_market_options", "cannot be combined with mixed_instances_policy (use its instances_distribution)"
        )
    distribution = spec.mixed["instances_distribution"]
    if distribution["on_demand_base_capacity"] < 0:
        raise SpecError("mixed_instances_policy.instances_distribution.on_demand_base_capacity", "must be >= 0")
    if not 0 <= distribution["on_demand_percentage_above_base_capacity"] <= 100:
        raise SpecError(
            "mixed_instances_policy.instances_distribution.on_demand_percentage_above_base_capacity",
            "must be between 0 and 100",
        )
    for index, override in enumerate(spec.mixed["overrides"]):
        if not override["instance_type"]:
            raise SpecError(f"mixed_instances_policy.overrides[{index}].instance_type", "is required")


def _validate_group(spec: PoolSpec) -> None:
    for key in ("default_cooldown", "default_instance_warmup"):
        if getattr(spec, key) < 0:
            raise SpecError(key, "must not be negative")
    percentage = spec.refresh["min_healthy_percentage"]
    if not 0 <= percentage <= 100:
        raise SpecError("refresh_preferences.min_healthy_percentage", "must be between 0 and 100")
    warmup = spec.refresh.get("instance_warmup")
    if warmup is not None and warmup < 0:
        raise SpecError("refresh_preferences.instance_warmup", "must not be negative")
    names: set[str] = set()
    for index, hook in enumerate(spec.lifecycle_hooks):
        where = f"lifecycle_hooks[{index}]"
        if not hook["name"]:
            raise SpecError(f"{where}.name", "is required")
        if hook["name"] in names or (spec.drain_on_scale_in and hook["name"] == spec.drain_hook_name):
            raise SpecError(f"{where}.name", f"'{hook['name']}' is used twice (the drain hook has this name)")
        names.add(hook["name"])
        if not 30 <= hook["heartbeat_timeout"] <= 7200:
            raise SpecError(f"{where}.heartbeat_timeout", "must be between 30 and 7200 seconds")


# launch template ---------------------------------------------------------------------------------------------------
def bootstrap_hash(document: bytes | None) -> str:
    """CAPA's bootstrap-data-hash: sha256 of the raw bootstrap data ('' without bootstrap data)."""
    return hashlib.sha256(document).hexdigest() if document is not None else ""


def _tag_sets(data: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    # Only instance and volume tags: moto copies the template's own tags into version 1 as "launch-template".
    found: dict[str, dict[str, str]] = {}
    for spec_ in data.get("TagSpecifications") or []:
        if spec_.get("ResourceType") in ("instance", "volume"):
            found[spec_["ResourceType"]] = {t["Key"]: t["Value"] for t in spec_.get("Tags") or []}
    return found


def _bootstrap_view(data: Mapping[str, Any]) -> tuple[str, bool, str]:
    tags = _tag_sets(data).get("instance", {})
    ref = BootstrapRef.from_tag(tags.get(BOOTSTRAP_TAG))
    return tags.get(BOOTSTRAP_HASH_TAG, ""), bool(data.get("UserData")), ref.backend if ref else ""


EBS_FIELDS = ("VolumeSize", "VolumeType", "Encrypted", "DeleteOnTermination")


def _comparable(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields that define a version, normalised so AWS's spelling of the same thing compares equal."""
    metadata = data.get("MetadataOptions") or {}
    volumes = [
        {
            "DeviceName": m.get("DeviceName"),
            **{
                k: (m.get("Ebs") or {}).get(k) for k in ("VolumeSize", "VolumeType", "Encrypted", "DeleteOnTermination")
            },
        }
        for m in data.get("BlockDeviceMappings") or []
    ]
    market = data.get("InstanceMarketOptions") or None
    if market:
        market = {"MarketType": market.get("MarketType"), **dict(market.get("SpotOptions") or {})}
    tags = {
        kind: {k: v for k, v in values.items() if k not in (BOOTSTRAP_TAG, BOOTSTRAP_HASH_TAG, TOKEN_ID_TAG)}
        for kind, values in _tag_sets(data).items()
    }
    return {
        "image": data.get("ImageId"),
        "instance_type": data.get("InstanceType"),
        "ssh_key_name": data.get("KeyName"),
        "iam_instance_profile": (data.get("IamInstanceProfile") or {}).get("Name"),
        "security_groups": sorted(data.get("SecurityGroupIds") or []),
        "imds": {k: metadata.get(k) for k in ("HttpTokens", "HttpPutResponseHopLimit", "HttpEndpoint")},
        "root_volume": volumes,
        "spot": market,
        "tags": tags,
        "bootstrap_data": _bootstrap_view(data),
    }


def template_differences(desired: Mapping[str, Any], current: Mapping[str, Any] | None) -> list[str]:
    """Names of the fields in which the latest version differs from the spec (``['launch_template']`` if none)."""
    if current is None:
        return ["launch_template"]
    want, have = _comparable(desired), _comparable(current)
    return [key for key in want if want[key] != have[key]]


def needs_refresh(differences: Sequence[str]) -> bool:
    """An instance refresh for anything but bootstrap data (CAPA: user-data-only changes roll nothing)."""
    return bool(set(differences) - BOOTSTRAP_FIELDS - {"launch_template"})


def versions_to_prune(numbers: Sequence[int], default: int, latest: int) -> list[int]:
    """Versions to delete: all but the default, the latest and the one before the latest."""
    older = [n for n in numbers if n < latest]
    keep = {default, latest} | ({max(older)} if older else set())
    return sorted(n for n in numbers if n not in keep)


def version_token_id(data: Mapping[str, Any]) -> str | None:
    """The id of the join token a version's bootstrap entries carry (from its instance tags)."""
    return _tag_sets(data).get("instance", {}).get(TOKEN_ID_TAG)


def bootstrap_ref_of(data: Mapping[str, Any]) -> BootstrapRef | None:
    """Where a version's bootstrap entries are (from its instance tags)."""
    return BootstrapRef.from_tag(_tag_sets(data).get("instance", {}).get(BOOTSTRAP_TAG))


# auto scaling group ------------------------------------------------------------------------------------------------
def launch_spec(spec: PoolSpec, template_name: str) -> dict[str, Any]:
    """The group's ``LaunchTemplate`` ($Latest) or ``MixedInstancesPolicy`` (Create/UpdateAutoScalingGroup)."""
    template = {"LaunchTemplateName": template_name, "Version": LATEST}
    if spec.mixed is None:
        return {"LaunchTemplate": template}
    distribution = spec.mixed["instances_distribution"]
    return {
        "MixedInstancesPolicy": {
            "LaunchTemplate": {
                "LaunchTemplateSpecification": template,
                "Overrides": [{"InstanceType": o["instance_type"]} for o in spec.mixed["overrides"]],
            },
            "InstancesDistribution": {
                "OnDemandAllocationStrategy": distribution["on_demand_allocation_strategy"],
                "OnDemandBaseCapacity": distribution["on_demand_base_capacity"],
                "OnDemandPercentageAboveBaseCapacity": distribution["on_demand_percentage_above_base_capacity"],
                "SpotAllocationStrategy": distribution["spot_allocation_strategy"],
            },
        }
    }


def _launch_view(group: Mapping[str, Any]) -> Any:
    mixed = group.get("MixedInstancesPolicy")
    if mixed:
        template = mixed.get("LaunchTemplate") or {}
        distribution = mixed.get("InstancesDistribution") or {}
        return (
            "mixed",
            (template.get("LaunchTemplateSpecification") or {}).get("LaunchTemplateName"),
            (template.get("LaunchTemplateSpecification") or {}).get("Version"),
            [o.get("InstanceType") for o in template.get("Overrides") or []],
            {
                k: distribution.get(k)
                for k in (
                    "OnDemandAllocationStrategy",
                    "OnDemandBaseCapacity",
                    "OnDemandPercentageAboveBaseCapacity",
                    "SpotAllocationStrategy",
                )
            },
        )
    template = group.get("LaunchTemplate") or {}
    return ("template", template.get("LaunchTemplateName"), template.get("Version"))


def mixed_policy_view(group: Mapping[str, Any]) -> dict[str, Any] | None:
    """A group's mixed instances policy in the module's option shape."""
    mixed = group.get("MixedInstancesPolicy")
    if not mixed:
        return None
    distribution = mixed.get("InstancesDistribution") or {}
    overrides = (mixed.get("LaunchTemplate") or {}).get("Overrides") or []
    return {
        "instances_distribution": {
            "on_demand_base_capacity": distribution.get("OnDemandBaseCapacity"),
            "on_demand_percentage_above_base_capacity": distribution.get("OnDemandPercentageAboveBaseCapacity"),
            "spot_allocation_strategy": distribution.get("SpotAllocationStrategy"),
            "on_demand_allocation_strategy": distribution.get("OnDemandAllocationStrategy"),
        },
        "overrides": [{"instance_type": o.get("InstanceType")} for o in overrides],
    }


def create_request(spec: PoolSpec, template_name: str, tags: Mapping[str, str]) -> dict[str, Any]:
    request: dict[str, Any] = {
        "AutoScalingGroupName": spec.name,
        "MinSize": spec.min_size,
        "MaxSize": spec.max_size,
        "VPCZoneIdentifier": ",".join(spec.zone_subnet_ids()),
        "DefaultCooldown": spec.default_cooldown,
        "DefaultInstanceWarmup": spec.default_instance_warmup,
        "CapacityRebalance": spec.capacity_rebalance,
        # Instances get their tags from the launch template; the group's own tags stay on the group.
        "Tags": [
            {
                "Key": k,
                "Value": v,
                "PropagateAtLaunch": False,
                "ResourceId": spec.name,
                "ResourceType": "auto-scaling-group",
            }
            for k, v in tags.items()
        ],
        **launch_spec(spec, template_name),
    }
    if spec.desired_capacity is not None:
        request["DesiredCapacity"] = spec.desired_capacity
    return request


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def group_update(spec: PoolSpec, template_name: str, group: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """UpdateAutoScalingGroup parameters for the drifted fields, and their names (empty when nothing drifted).

    With externally managed replicas, desired capacity is never sent: a cluster autoscaler owns it. The launch
    part is always sent with an update (moto drops a mixed instances policy an update leaves out; AWS keeps it).
    """
    changes: dict[str, Any] = {}
    if group.get("MinSize") != spec.min_size:
        changes["MinSize"] = spec.min_size
    if group.get("MaxSize") != spec.max_size:
        changes["MaxSize"] = spec.max_size
    if (
        not spec.externally_managed
        and spec.desired_capacity is not None
        and group.get("DesiredCapacity") != spec.desired_capacity
    ):
        changes["DesiredCapacity"] = spec.desired_capacity
    current_subnets = sorted(s for s in (group.get("VPCZoneIdentifier") or "").split(",") if s)
    if current_subnets != sorted(spec.zone_subnet_ids()):
        changes["VPCZoneIdentifier"] = ",".join(spec.zone_subnet_ids())
    if group.get("DefaultCooldown") != spec.default_cooldown:
        changes["DefaultCooldown"] = spec.default_cooldown
    # AWS reports DefaultInstanceWarmup whenever it is set (every group this module creates); moto never does.
    if "DefaultInstanceWarmup" in group and group["DefaultInstanceWarmup"] != spec.default_instance_warmup:
        changes["DefaultInstanceWarmup"] = spec.default_instance_warmup
    if bool(group.get("CapacityRebalance")) != spec.capacity_rebalance:
        changes["CapacityRebalance"] = spec.capacity_rebalance
    wanted_launch = launch_spec(spec, template_name)
    launch_drift = _launch_view(group) != _launch_view(wanted_launch)
    names = sorted(changes) + (["launch template / mixed instances policy"] if launch_drift else [])
    if not names:
        return {}, []
    return {"AutoScalingGroupName": spec.name, **changes, **wanted_launch}, names


def desired_after(spec: PoolSpec, group: Mapping[str, Any] | None) -> int:
    """The desired capacity AWS will hold after the run (AWS clamps it into a new min/max by itself)."""
    if group is None:
        return spec.desired_capacity if spec.desired_capacity is not None else spec.min_size
    current = group.get("DesiredCapacity", spec.min_size)
    if not spec.externally_managed and spec.desired_capacity is not None:
        current = spec.desired_capacity
    return clamp(current, spec.min_size, spec.max_size)


def process_changes(wanted: Sequence[str], group: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(to suspend, to resume) so that exactly ``wanted`` is suspended."""
    current = {p["ProcessName"] for p in (group or {}).get("SuspendedProcesses") or []}
    return sorted(set(wanted) - current), sorted(current - set(wanted))


def _hook_view(hook: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "transition": hook.get("LifecycleTransition"),
        "result": hook.get("DefaultResult"),
        "heartbeat": hook.get("HeartbeatTimeout"),
        # Only compared when the spec sets them (moto fills in its own when none are given).
        "target": hook.get("NotificationTargetARN"),
        "role": hook.get("RoleARN"),
        "metadata": hook.get("NotificationMetadata"),
    }


def hook_request(group_name: str, hook: Mapping[str, Any]) -> dict[str, Any]:
    request = {
        "AutoScalingGroupName": group_name,
        "LifecycleHookName": hook["name"],
        "LifecycleTransition": hook["lifecycle_transition"],
        "DefaultResult": hook["default_result"],
        "HeartbeatTimeout": hook["heartbeat_timeout"],
    }
    for key, api in (
        ("notification_target_arn", "NotificationTargetARN"),
        ("role_arn", "RoleARN"),
        ("notification_metadata", "NotificationMetadata"),
    ):
        if hook.get(key):
            request[api] = hook[key]
    return request


def hook_changes(
    wanted: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """(hooks to put, names to delete): the group's hooks become exactly ``wanted`` (CAPA deletes unknown hooks)."""
    found = {h["LifecycleHookName"]: _hook_view(h) for h in current}
    put = []
    for hook in wanted:
        have = found.get(hook["name"])
        want = _hook_view(hook_request("", hook))
        if have is None or any(
            have[k] != want[k]
            for k in want
            if k in ("transition", "result", "heartbeat") or want[k] is not None  # optional fields: only when set
        ):
            put.append(dict(hook))
    names = {h["name"] for h in wanted}
    return put, sorted(n for n in found if n not in names)


def conditions(
    template_exists: bool, group: Mapping[str, Any] | None, refresh: Mapping[str, Any] | None, refresh_reason: str
) -> dict[str, dict[str, Any]]:
    """CAPA's AWSMachinePool conditions for the result."""
    if group is None:
        asg = {"status": False, "reason": "ASGNotFound"}
    elif group.get("Status") == "Delete in progress":
        asg = {"status": False, "reason": "ASGDeletionInProgress"}
    else:
        asg = {"status": True, "reason": ""}
    return {
        ASG_READY: asg,
        LAUNCH_TEMPLATE_READY: {
            "status": template_exists,
            "reason": "" if template_exists else "LaunchTemplateNotFound",
        },
        INSTANCE_REFRESH_STARTED: {"status": refresh is not None, "reason": "" if refresh else refresh_reason},
    }
