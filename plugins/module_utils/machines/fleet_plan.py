# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: pure decisions of an EC2 Fleet machine pool (options, request shape, drift). No AWS calls here.

CAPA has no EC2 Fleet support; this pool follows its AWSMachinePool (launch template, subnets, tags, delete with
the instances) but keeps capacity with a fleet of type ``maintain``: one launch template config whose overrides
are every instance type in every pool subnet, a spot/on-demand split and an allocation strategy.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..kernel.errors import SpecError
from ..kernel.hashing import template_hash
from ..kernel.idempotency import new_client_token
from ..kernel.validation import check_availability_zone, check_resource_id
from .node_bootstrap import EKS, KUBEADM, RAW, check_bootstrap, check_image_inputs
from .plan import default_failure_domains

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
    """The module's options as plain values, defaults resolved."""

    state: str
    name: str
    subnets: list[dict[str, Any]]
    failure_domains: list[str]
    total_target_capacity: int
    on_demand_target_capacity: int
    default_target_capacity_type: str
    instance_types: list[str]
    spot_allocation_strategy: str
    instance_type: str | None
    kubernetes_version: str | None
    ami: dict[str, Any]
    root_volume: dict[str, Any]
    ssh_key_name: str | None
    iam_instance_profile: str | None
    security_group_ids: list[str]
    imds: dict[str, Any]
    bootstrap: dict[str, Any]
    replace_unhealthy_instances: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FleetSpec:
        subnets = [dict(s) for s in params.get("subnets") or []]
        domains = list(params.get("failure_domains") or []) or default_failure_domains(subnets, public=False)
        types = list(params.get("instance_types") or [])
        bootstrap = dict(params.get("bootstrap") or {})
        bootstrap["type"] = bootstrap.get("type") or KUBEADM
        bootstrap["backend"] = bootstrap.get("backend") or "secrets-manager"
        bootstrap["endpoint_port"] = bootstrap.get("endpoint_port") or 6443
        imds = dict(params.get("imds") or {})
        return cls(
            state=params["state"],
            name=params["name"],
            subnets=subnets,
            failure_domains=domains,
            total_target_capacity=params.get("total_target_capacity") or 0,
            on_demand_target_capacity=params.get("on_demand_target_capacity") or 0,
            default_target_capacity_type=params.get("default_target_capacity_type") or SPOT,
            instance_types=types,
            spot_allocation_strategy=params.get("spot_allocation_strategy") or SPOT_STRATEGIES[0],
            instance_type=params.get("instance_type") or (types[0] if types else None),
            kubernetes_version=params.get("kubernetes_version"),
            ami=dict(params.get("ami") or {}),
            root_volume=dict(params.get("root_volume") or {"encrypted": True, "type": "gp3"}),
            ssh_key_name=params.get("ssh_key_name") or None,
            iam_instance_profile=params.get("iam_instance_profile") or None,
            security_group_ids=list(params.get("security_group_ids") or []),
            imds={
                "http_tokens": imds.get("http_tokens") or "required",
                "http_put_response_hop_limit": imds.get("http_put_response_hop_limit") or 1,
            },
            bootstrap=bootstrap,
            replace_unhealthy_instances=bool(params.get("replace_unhealthy_instances", True)),
        )

    def pool_subnets(self) -> list[dict[str, Any]]:
        """The private subnets of the failure domains, in input order (every one of them takes instances)."""
        return [
            s for s in self.subnets if not s.get("is_public") and s.get("availability_zone") in self.failure_domains
        ]

    def definition(self, ami_id: str) -> dict[str, Any]:
        """What defines the pool's machines: a change makes a new launch template version."""
        bootstrap: dict[str, Any] = {"type": self.bootstrap["type"], "watcher": WATCHER_REVISION}
        if self.bootstrap["type"] == KUBEADM:
            bootstrap.update(
                endpoint_host=self.bootstrap.get("endpoint_host"),
                endpoint_port=self.bootstrap["endpoint_port"],
                kubernetes_version=self.kubernetes_version,
            )
        elif self.bootstrap["type"] == EKS:
            bootstrap.update(
                eks_cluster_name=self.bootstrap.get("eks_cluster_name"), kubernetes_version=self.kubernetes_version
            )
        elif self.bootstrap["type"] == RAW:
            # A digest, never the document: it holds secrets.
            bootstrap["data_sha256"] = hashlib.sha256((self.bootstrap.get("data") or "").encode()).hexdigest()
        return {
            "ami_id": ami_id,
            "instance_type": self.instance_type,
            "root_volume": self.root_volume,
            "ssh_key_name": self.ssh_key_name,
            "iam_instance_profile": self.iam_instance_profile,
            "security_group_ids": frozenset(self.security_group_ids),
            "imds": self.imds,
            "bootstrap": bootstrap,
            "backend": self.bootstrap["backend"],
        }

    def template_hash(self, ami_id: str) -> str:
        return template_hash(self.definition(ami_id))


# validation ------------------------------------------------------------------------------------------------------
def validate(params: Mapping[str, Any], region: str | None) -> None:
    spec = FleetSpec.from_params(params)
    if not POOL_NAME.match(spec.name) or len(spec.name) > POOL_NAME_MAX:
        raise SpecError("name", f"'{spec.name}' must be lower-case letters, digits and '-', at most {POOL_NAME_MAX}")
    for index, subnet in enumerate(spec.subnets):
        if not subnet.get("id") or not subnet.get("availability_zone"):
            raise SpecError(f"subnets[{index}]", "needs id and availability_zone (as capa_subnet returns them)")
        check_resource_id(subnet["id"], "subnet", f"subnets[{index}].id")
    for index, group in enumerate(spec.security_group_ids):
        check_resource_id(group, "sg", f"security_group_ids[{index}]")
    if spec.state == "absent":
        return
    _validate_capacity(spec)
    _validate_machine(spec, region)


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


def _validate_machine(spec: FleetSpec, region: str | None) -> None:
    check_image_inputs(spec.bootstrap["type"], spec.ami, spec.kubernetes_version)
    size = spec.root_volume.get("size")
    if size is not None and size < 8:
        raise SpecError("root_volume.size", "must be at least 8 GiB")
    if not 1 <= spec.imds["http_put_response_hop_limit"] <= 64:
        raise SpecError("imds.http_put_response_hop_limit", "must be between 1 and 64")
    check_bootstrap(spec.bootstrap, spec.kubernetes_version)
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
def overrides(instance_types: Sequence[str], subnets: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One override per instance type per subnet: the fleet may use any type anywhere in the pool's subnets."""
    return [{"InstanceType": kind, "SubnetId": subnet["id"]} for kind in instance_types for subnet in subnets]


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
            "Overrides": overrides(spec.instance_types, spec.pool_subnets()),
        }
    ]


fleet_client_token = new_client_token  # a fresh token per create intent (see _reconcile)


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


def drift(observed: Mapping[str, Any], desired: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """``(fields ModifyFleet can change, fields it cannot)`` between a described fleet and a CreateFleet request."""
    have_capacity = observed.get("TargetCapacitySpecification") or {}
    want_capacity = desired["TargetCapacitySpecification"]
    modifiable = []
    for key, label in (
        ("TotalTargetCapacity", "total_target_capacity"),
        ("OnDemandTargetCapacity", "on_demand_target_capacity"),
    ):
        if int(have_capacity.get(key) or 0) != want_capacity[key]:
            modifiable.append(label)
    have_configs = observed.get("LaunchTemplateConfigs") or []
    if _template_of(have_configs) != _template_of(desired["LaunchTemplateConfigs"]):
        modifiable.append("launch_template")
    if _override_set(have_configs) != _override_set(desired["LaunchTemplateConfigs"]):
        modifiable.append("instance_types/subnets")
    immutable = []
    if (have_capacity.get("DefaultTargetCapacityType") or ON_DEMAND) != want_capacity["DefaultTargetCapacityType"]:
        immutable.append("default_target_capacity_type")
    have_strategy = (observed.get("SpotOptions") or {}).get("AllocationStrategy")
    if have_strategy and have_strategy != desired["SpotOptions"]["AllocationStrategy"]:
        immutable.append("spot_allocation_strategy")
    if bool(observed.get("ReplaceUnhealthyInstances")) != desired["ReplaceUnhealthyInstances"]:
        immutable.append("replace_unhealthy_instances")
    return modifiable, immutable


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
