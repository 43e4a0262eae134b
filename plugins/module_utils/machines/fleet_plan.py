# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: pure decisions of an EC2 Fleet machine pool (options, request shape, drift). No AWS calls here.

CAPA has no EC2 Fleet support; this pool follows its AWSMachinePool (launch template, subnets, tags, delete with
the instances) but keeps capacity with a fleet of type ``maintain``: one launch template config whose overrides
are every instance type in every pool subnet, a spot/on-demand split and an allocation strategy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..kernel.compare import Field, differences
from ..kernel.errors import SpecError
from ..kernel.hashing import template_hash
from ..kernel.validation import check_availability_zone
from ..workload.access import KubernetesApiSettings
from .machine_spec import POOL_BOOTSTRAP, MachineSpec
from .plan import check_placement_inputs, default_failure_domains

SPOT, ON_DEMAND = "spot", "on-demand"
SPOT_STRATEGIES = (
    "price-capacity-optimized",
    "capacity-optimized",
    "capacity-optimized-prioritized",
    "diversified",
    "lowest-price",
)
POOL_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
POOL_NAME_MAX = 40
MAX_OVERRIDES = 300  # AWS: overrides per launch template config
INSTANCE_TYPE = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+$")
# A fleet in one of these states is gone (AWS lists deleted fleets for hours).
GONE_STATES = ("deleted", "deleted_running", "deleted_terminating", "failed")
WATCHER_REVISION = 1  # bump when the termination watcher must reach existing pools (it is part of the document)


@dataclass
class FleetSpec:
    """The pool's options as plain values, defaults resolved; its machines' own in ``machine``."""

    state: str
    name: str
    subnets: list[dict[str, Any]]
    failure_domains: list[str]
    total_target_capacity: int
    on_demand_target_capacity: int
    default_target_capacity_type: str
    instance_types: list[str]
    spot_allocation_strategy: str
    machine: MachineSpec
    replace_unhealthy_instances: bool
    kubernetes_api: KubernetesApiSettings = KubernetesApiSettings()

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FleetSpec:
        subnets = [dict(s) for s in params["subnets"]]
        domains = list(params["failure_domains"] or ()) or default_failure_domains(subnets, public=False)
        types = list(params["instance_types"])
        machine = MachineSpec.from_params(params, POOL_BOOTSTRAP)
        if machine.instance_type is None and types:
            machine = machine.but(instance_type=types[0])  # the template's type picks the image architecture
        return cls(
            state=params["state"],
            name=params["name"],
            subnets=subnets,
            failure_domains=domains,
            total_target_capacity=params["total_target_capacity"],
            on_demand_target_capacity=params["on_demand_target_capacity"],
            default_target_capacity_type=params["default_target_capacity_type"],
            instance_types=types,
            spot_allocation_strategy=params["spot_allocation_strategy"],
            machine=machine,
            replace_unhealthy_instances=params["replace_unhealthy_instances"],
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
        )

    def pool_subnets(self) -> list[dict[str, Any]]:
        """The private subnets of the failure domains, in input order (every one of them takes instances)."""
        return [
            s for s in self.subnets if not s.get("is_public") and s.get("availability_zone") in self.failure_domains
        ]

    def definition(self, ami_id: str) -> dict[str, Any]:
        """What defines the pool's machines: a change makes a new launch template version (the watcher is part of
        every fleet machine's document, and its revision of the definition)."""
        machine = self.machine
        return {
            **machine.definition(ami_id),
            "imds": machine.imds.as_dict(),
            "bootstrap": {**machine.bootstrap.definition(machine.kubernetes_version), "watcher": WATCHER_REVISION},
            "backend": machine.bootstrap.backend,
        }

    def template_hash(self, ami_id: str) -> str:
        return template_hash(self.definition(ami_id))


# validation ------------------------------------------------------------------------------------------------------
def validate(spec: FleetSpec, region: str | None) -> None:
    if not POOL_NAME.match(spec.name) or len(spec.name) > POOL_NAME_MAX:
        raise SpecError("name", f"'{spec.name}' must be lower-case letters, digits and '-', at most {POOL_NAME_MAX}")
    check_placement_inputs(spec.subnets, spec.machine.security_group_ids)
    if spec.state == "absent":
        return
    _validate_capacity(spec)
    spec.machine.validate()
    _validate_placement(spec, region)


def _validate_capacity(spec: FleetSpec) -> None:
    if spec.total_target_capacity < 0:
        raise SpecError("total_target_capacity", "must not be negative")
    if not 0 <= spec.on_demand_target_capacity <= spec.total_target_capacity:
        raise SpecError("on_demand_target_capacity", "must be between 0 and total_target_capacity")
    if spec.default_target_capacity_type not in (SPOT, ON_DEMAND):
        raise SpecError("default_target_capacity_type", "must be spot or on-demand")
    if spec.spot_allocation_strategy not in SPOT_STRATEGIES:
        raise SpecError("spot_allocation_strategy", f"must be one of {', '.join(SPOT_STRATEGIES)}")
    if not spec.instance_types:
        raise SpecError("instance_types", "at least one instance type is needed")
    for index, kind in enumerate(spec.instance_types):
        if not INSTANCE_TYPE.match(kind):
            raise SpecError(f"instance_types[{index}]", f"'{kind}' is not an instance type like m5.large")
    if len(set(spec.instance_types)) != len(spec.instance_types):
        raise SpecError("instance_types", "lists an instance type twice")


def _validate_placement(spec: FleetSpec, region: str | None) -> None:
    for index, zone in enumerate(spec.failure_domains):
        check_availability_zone(zone, region, f"failure_domains[{index}]")
        if not any(s.get("availability_zone") == zone and not s.get("is_public") for s in spec.subnets):
            raise SpecError(f"failure_domains[{index}]", f"no private subnet in {zone} among subnets")
    if not spec.pool_subnets():
        raise SpecError("subnets", "no private subnet to place the pool's instances in")
    count = len(spec.instance_types) * len(spec.pool_subnets())
    if count > MAX_OVERRIDES:
        raise SpecError("instance_types", f"{count} instance type x subnet overrides; AWS takes {MAX_OVERRIDES}")


# request shape ---------------------------------------------------------------------------------------------------
def target_capacity(total: int, on_demand: int, default_type: str) -> dict[str, Any]:
    """The split as AWS stores it: on-demand first, the rest in the default type (spot unless said otherwise)."""
    return {
        "TotalTargetCapacity": total,
        "OnDemandTargetCapacity": on_demand,
        "SpotTargetCapacity": total - on_demand if default_type == SPOT else 0,
        "DefaultTargetCapacityType": default_type,
    }


def launch_template_configs(template_id: str, version: int, spec: FleetSpec) -> list[dict[str, Any]]:
    return [
        {
            "LaunchTemplateSpecification": {"LaunchTemplateId": template_id, "Version": str(version)},
            "Overrides": spec.machine.fleet_overrides(spec.pool_subnets(), spec.instance_types),
        }
    ]


def _override_set(configs: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    return {
        (o.get("InstanceType", ""), o.get("SubnetId", ""))
        for config in configs or ()
        for o in config.get("Overrides") or ()
    }


def _template_of(configs: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    for config in configs or ():
        lt = config.get("LaunchTemplateSpecification") or {}
        return lt.get("LaunchTemplateId", ""), str(lt.get("Version", ""))
    return "", ""


# What a fleet compares, and whether ModifyFleet can change it (the rest needs a new fleet).
FLEET_FIELDS = (
    Field("total_target_capacity"),
    Field("on_demand_target_capacity"),
    Field("launch_template"),
    Field("instance_types/subnets", comparison="set"),
    Field("default_target_capacity_type", immutable=True),
    Field("spot_allocation_strategy", immutable=True),
    Field("replace_unhealthy_instances", immutable=True),
)


def _fleet_fields(request: Mapping[str, Any], described: bool) -> dict[str, Any]:
    """A CreateFleet request (or a described fleet) as the values :data:`FLEET_FIELDS` compare."""
    capacity = request.get("TargetCapacitySpecification") or {}
    configs = request.get("LaunchTemplateConfigs") or []
    strategy = (request.get("SpotOptions") or {}).get("AllocationStrategy")
    return {
        "total_target_capacity": int(capacity.get("TotalTargetCapacity") or 0),
        "on_demand_target_capacity": int(capacity.get("OnDemandTargetCapacity") or 0),
        "launch_template": _template_of(configs),
        "instance_types/subnets": _override_set(configs),
        "default_target_capacity_type": capacity.get("DefaultTargetCapacityType") or (ON_DEMAND if described else None),
        # AWS answers no strategy for a fleet it runs with its default: only one it reports is compared.
        "spot_allocation_strategy": strategy,
        "replace_unhealthy_instances": bool(request.get("ReplaceUnhealthyInstances")),
    }


def drift(observed: Mapping[str, Any], desired: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(fields ModifyFleet can change, fields it cannot)`` between a described fleet and a CreateFleet request."""
    have, want = _fleet_fields(observed, described=True), _fleet_fields(desired, described=False)
    if have["spot_allocation_strategy"] is None:
        want["spot_allocation_strategy"] = None
    found = differences(FLEET_FIELDS, want, have)
    return list(found.mutable), list(found.immutable)


def modify_request(fleet_id: str, desired: Mapping[str, Any], modifiable: Sequence[str]) -> dict[str, Any]:
    """ModifyFleet: the capacity always (AWS requires TotalTargetCapacity), the template config when it drifted."""
    capacity = desired["TargetCapacitySpecification"]
    request: dict[str, Any] = {
        "FleetId": fleet_id,
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": capacity["TotalTargetCapacity"],
            "OnDemandTargetCapacity": capacity["OnDemandTargetCapacity"],
            "SpotTargetCapacity": capacity["SpotTargetCapacity"],
        },
        "ExcessCapacityTerminationPolicy": "termination",
    }
    if "launch_template" in modifiable or "instance_types/subnets" in modifiable:
        request["LaunchTemplateConfigs"] = desired["LaunchTemplateConfigs"]
    return request
