# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the pure decisions of the control-plane load balancer tier (no AWS calls).

Names (CAPA's ``GenerateELBName``), the spec parsed from module parameters, subnet choice, and the desired
listeners, health checks and attributes of classic ELBs and NLBs together with their drift against what AWS
describes. :mod:`._elb` observes AWS, hands plain values to these functions and applies what they return.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, TypeVar

from ..kernel.compare import Field, differences, set_changes
from ..kernel.errors import SpecError
from ..kernel.validation import check_resource_id

CLASSIC = "classic"
NLB = "nlb"
EXTERNAL = "external"
DISABLED = "disabled"
TYPES = (CLASSIC, NLB, EXTERNAL, DISABLED)
INTERNET_FACING = "internet-facing"
INTERNAL = "internal"
SCHEMES = (INTERNET_FACING, INTERNAL)
HEALTH_CHECK_PROTOCOLS = ("TCP", "HTTPS")

KUBE_API_PORT = 6443
READYZ_PATH = "/readyz"
# CAPA's defaults (api/v1beta2 DefaultAPIServerHealthCheck*): every 5 s, 4 s timeout, 2 healthy, 6 unhealthy.
HC_INTERVAL = 5
HC_TIMEOUT = 4
HC_HEALTHY = 2
HC_UNHEALTHY = 6
CLASSIC_IDLE_TIMEOUT = 600
NAME_MAX = 32
ELB_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$")

API_TARGET_GROUP_PREFIX = "apiserver-target-"
ADDITIONAL_TARGET_GROUP_PREFIX = "additional-listener-"
TARGET_GROUP_PREFIXES = (API_TARGET_GROUP_PREFIX, ADDITIONAL_TARGET_GROUP_PREFIX)
_NAME_SUFFIX_CHARS = string.ascii_lowercase + string.digits

CROSS_ZONE_ATTRIBUTE = "load_balancing.cross_zone.enabled"
TG_CONNECTION_TERMINATION = "target_health_state.unhealthy.connection_termination.enabled"
TG_DRAINING_INTERVAL = "target_health_state.unhealthy.draining_interval_seconds"
TG_PRESERVE_CLIENT_IP = "preserve_client_ip.enabled"

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


# names ---------------------------------------------------------------------------------------------------------
def base36_truncated_hash(value: str, size: int) -> str:
    """CAPA's ``hash.Base36TruncatedHash``: a blake2b digest of ``size`` bytes, each byte mapped to base36."""
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=size).digest()
    return "".join(_BASE36[b % 36] for b in digest)


def generate_lb_name(base: str) -> str:
    """CAPA's ``GenerateELBName``: ``<base>-apiserver``, or ``<28-char hash>-k8s`` when that exceeds 32 chars."""
    standard = f"{base.replace('.', '-')}-apiserver"
    if len(standard) <= NAME_MAX:
        return standard
    # 28 = 32 - len("-k8s")
    return f"{base36_truncated_hash(base, NAME_MAX - 4)}-k8s"


def target_group_name(prefix: str, rng: random.Random | None = None) -> str:
    """A target group name as CAPA generates it: the prefix and 5 random characters (found later by prefix)."""
    rng = rng or random.SystemRandom()
    return prefix + "".join(rng.choice(_NAME_SUFFIX_CHARS) for _position in range(5))


# spec ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Subnet:
    id: str
    availability_zone: str
    is_public: bool


@dataclass(frozen=True)
class Listener:
    """A TCP listener and the target group port behind it (``target_port``)."""

    port: int
    target_port: int
    prefix: str
    protocol: str = "TCP"


@dataclass(frozen=True)
class LbSpec:
    """One load balancer the cluster wants (primary or secondary)."""

    label: str  # "primary" or "secondary": for messages and results
    type: str
    name: str | None
    scheme: str
    health_check_protocol: str = "TCP"
    api_server_port: int = KUBE_API_PORT
    additional_listeners: tuple[Listener, ...] = ()
    cross_zone: bool = False
    preserve_client_ip: bool = False

    @property
    def managed_type(self) -> bool:
        return self.type in (CLASSIC, NLB)

    @property
    def aws_name(self) -> str:
        """The name to call AWS with: every type but 'disabled' has one (parse_spec makes sure)."""
        if self.name is None:
            raise ValueError(f"the {self.label} load balancer (type '{self.type}') has no name")
        return self.name

    @property
    def listeners(self) -> tuple[Listener, ...]:
        """NLB listeners: the API server's (traffic to 6443 on the instances) first, then the additional ones."""
        api = Listener(self.api_server_port, KUBE_API_PORT, API_TARGET_GROUP_PREFIX)
        return (api,) + self.additional_listeners


@dataclass(frozen=True)
class ElbSpec:
    state: str
    primary: LbSpec
    secondary: LbSpec | None = None
    vpc_id: str | None = None
    subnets: tuple[Subnet, ...] = ()
    security_group_ids: tuple[str, ...] = ()

    @property
    def load_balancers(self) -> tuple[LbSpec, ...]:
        return (self.primary,) + ((self.secondary,) if self.secondary else ())


def check_lb_name(name: str, field_path: str) -> None:
    if len(name) > NAME_MAX:
        raise SpecError(field_path, f"'{name}' is longer than {NAME_MAX} characters (an AWS limit)")
    if not ELB_NAME.match(name):
        raise SpecError(field_path, f"'{name}' must be letters, digits and '-', not starting or ending with '-'")
    if name.lower().startswith("internal-"):
        raise SpecError(field_path, f"'{name}' must not start with 'internal-' (reserved by AWS)")


def _parse_subnets(raw: Any) -> tuple[Subnet, ...]:
    subnets = []
    for index, item in enumerate(raw or []):
        where = f"subnets[{index}]"
        if not isinstance(item, Mapping):
            raise SpecError(where, "must be a dict with id, availability_zone and is_public")
        subnet_id, zone = item.get("id"), item.get("availability_zone")
        if not subnet_id:
            raise SpecError(f"{where}.id", "is required")
        check_resource_id(subnet_id, "subnet", f"{where}.id")
        if not zone:
            raise SpecError(f"{where}.availability_zone", "is required")
        subnets.append(Subnet(str(subnet_id), str(zone), bool(item.get("is_public"))))
    return tuple(subnets)


def _parse_listeners(raw: Any, lb_type: str, api_port: int) -> tuple[Listener, ...]:
    listeners: list[Listener] = []
    if raw and lb_type != NLB:
        raise SpecError("additional_listeners", f"are supported by NLBs only, not by type '{lb_type}'")
    seen = {api_port}
    for index, item in enumerate(raw):
        where = f"additional_listeners[{index}]"
        port = item["port"]
        if not 1 <= port <= 65535:
            raise SpecError(f"{where}.port", f"{port} is not a port number")
        if item["protocol"].upper() != "TCP":
            raise SpecError(f"{where}.protocol", "additional listeners are TCP only")
        if int(port) in seen:
            raise SpecError(f"{where}.port", f"port {port} is already used by another listener")
        seen.add(int(port))
        listeners.append(Listener(int(port), int(port), ADDITIONAL_TARGET_GROUP_PREFIX))
    return tuple(listeners)


def _parse_secondary(raw: Mapping[str, Any] | None, primary: LbSpec) -> LbSpec | None:
    if raw is None or not raw["enabled"]:
        return None
    if primary.type == DISABLED:
        raise SpecError("secondary.enabled", "a secondary load balancer needs a primary one (type is 'disabled')")
    name = raw["name"]
    if not name:
        raise SpecError("secondary.name", "is required: the secondary load balancer needs its own name")
    check_lb_name(name, "secondary.name")
    if name == primary.name:
        raise SpecError("secondary.name", f"'{name}' is the primary load balancer's name; names are region-unique")
    scheme = raw["scheme"]
    if scheme == primary.scheme:
        raise SpecError("secondary.scheme", f"must differ from the primary load balancer's scheme ('{scheme}')")
    return LbSpec(
        label="secondary",
        type=NLB,
        name=name,
        scheme=scheme,
        health_check_protocol=primary.health_check_protocol,
        api_server_port=primary.api_server_port,
        cross_zone=primary.cross_zone,
        preserve_client_ip=primary.preserve_client_ip,
    )


def parse_spec(params: Mapping[str, Any], cluster: str) -> ElbSpec:
    """Module parameters (as capa_elb's argument spec validated them) as a spec; every mistake raises
    :class:`SpecError` naming the option."""
    lb_type = params["type"]
    scheme = params["scheme"]
    protocol = params["health_check_protocol"].upper()
    if protocol not in HEALTH_CHECK_PROTOCOLS:
        raise SpecError("health_check_protocol", f"'{protocol}' is not one of {', '.join(HEALTH_CHECK_PROTOCOLS)}")
    port = params["api_server_port"]
    if not 1 <= port <= 65535:
        raise SpecError("api_server_port", f"{port} is not a port number")
    name = params["name"]
    if name:
        check_lb_name(name, "name")
    elif lb_type == EXTERNAL:
        raise SpecError("name", "is required for type 'external' (the name of the existing load balancer)")
    elif lb_type in (CLASSIC, NLB):
        # CAPA names an NLB after "<namespace>-<cluster>"; there is no namespace here, so both use the cluster.
        name = generate_lb_name(cluster)
    primary = LbSpec(
        label="primary",
        type=lb_type,
        name=name or None,
        scheme=scheme,
        health_check_protocol=protocol,
        api_server_port=port,
        additional_listeners=_parse_listeners(params["additional_listeners"], lb_type, port),
        cross_zone=params["cross_zone_load_balancing"],
        preserve_client_ip=params["preserve_client_ip"],
    )
    spec = ElbSpec(
        state=params["state"],
        primary=primary,
        secondary=_parse_secondary(params["secondary"], primary),
        vpc_id=params["vpc_id"],
        subnets=_parse_subnets(params["subnets"]),
        security_group_ids=tuple(params["security_group_ids"]),
    )
    _check_present_needs(spec)
    return spec


def _check_present_needs(spec: ElbSpec) -> None:
    check_resource_id(spec.vpc_id, "vpc", "vpc_id")
    for index, group_id in enumerate(spec.security_group_ids):
        check_resource_id(group_id, "sg", f"security_group_ids[{index}]")
    if spec.state != "present":
        return
    managed = [lb for lb in spec.load_balancers if lb.managed_type]
    if not managed:
        return
    if not spec.vpc_id:
        raise SpecError("vpc_id", "is required to create a load balancer")
    if not spec.subnets:
        raise SpecError("subnets", "is required to create a load balancer (capa_subnet's 'subnets' result)")
    if not spec.security_group_ids:
        raise SpecError("security_group_ids", "is required (at least the cluster's apiserver-lb security group)")
    for lb in managed:
        if not choose_subnets(spec.subnets, lb.scheme):
            raise SpecError("subnets", f"no subnet fits the {lb.label} load balancer's scheme '{lb.scheme}'")


# subnets -------------------------------------------------------------------------------------------------------
def choose_subnets(subnets: Iterable[Subnet], scheme: str) -> list[Subnet]:
    """One subnet per AZ (load balancers take one per zone), in the given order.

    Internet-facing load balancers (and internal ones in a network without private subnets) use public
    subnets; internal ones use private subnets.
    """
    subnets = list(subnets)
    private = [s for s in subnets if not s.is_public]
    public = [s for s in subnets if s.is_public]
    pool = public if scheme == INTERNET_FACING or not private else private
    chosen: dict[str, Subnet] = {}
    for subnet in pool:
        chosen.setdefault(subnet.availability_zone, subnet)
    return list(chosen.values())


# classic ELB ---------------------------------------------------------------------------------------------------
def classic_listeners(lb: LbSpec) -> list[dict[str, Any]]:
    return [
        {"Protocol": "TCP", "LoadBalancerPort": lb.api_server_port, "InstanceProtocol": "TCP", "InstancePort": 6443}
    ]


def classic_health_check(lb: LbSpec) -> dict[str, Any]:
    target = f"HTTPS:{KUBE_API_PORT}{READYZ_PATH}" if lb.health_check_protocol == "HTTPS" else f"TCP:{KUBE_API_PORT}"
    return {
        "Target": target,
        "Interval": HC_INTERVAL,
        "Timeout": HC_TIMEOUT,
        "HealthyThreshold": HC_HEALTHY,
        "UnhealthyThreshold": HC_UNHEALTHY,
    }


def classic_attributes(lb: LbSpec) -> dict[str, Any]:
    return {
        "CrossZoneLoadBalancing": {"Enabled": lb.cross_zone},
        "ConnectionSettings": {"IdleTimeout": CLASSIC_IDLE_TIMEOUT},
    }


def classic_attribute_drift(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> list[str]:
    """Names of the attribute groups whose values differ: each group compares its wanted keys only (AWS keeps
    attributes we do not set)."""
    groups = [Field(group, comparison="allow_more_present") for group in desired]
    return differences(groups, desired, current or {}).names


def health_check_drift(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> list[str]:
    """Keys of a health check that differ; a missing health check differs in every key."""
    return differences([Field(key) for key in desired], desired, current or {}).names


def listener_drift(
    current: Iterable[Mapping[str, Any]], desired: Iterable[Mapping[str, Any]]
) -> tuple[list[int], list[dict[str, Any]]]:
    """``(ports_to_delete, listeners_to_create)`` for a classic ELB; a changed listener is in both."""

    def key(listener: Mapping[str, Any]) -> tuple:
        return (
            int(listener["LoadBalancerPort"]),
            str(listener["Protocol"]).upper(),
            int(listener["InstancePort"]),
            str(listener.get("InstanceProtocol") or listener["Protocol"]).upper(),
        )

    current_by_key = {key(c): c for c in current}
    desired_by_key = {key(d): dict(d) for d in desired}
    delete = sorted({k[0] for k in current_by_key if k not in desired_by_key})
    create = [d for k, d in desired_by_key.items() if k not in current_by_key]
    return delete, create


# ``(to_remove, to_add)`` of two id sets: order never matters for subnets or security groups.
set_drift = set_changes


# NLB -----------------------------------------------------------------------------------------------------------
def lb_attributes(lb: LbSpec) -> dict[str, str]:
    return {CROSS_ZONE_ATTRIBUTE: "true" if lb.cross_zone else "false"}


def target_group_attributes(lb: LbSpec) -> dict[str, str]:
    # Without client IP preservation a control-plane node reaching the NLB may be routed to itself and time out
    # (hairpinning), which is why CAPA turns it off unless asked.
    return {
        TG_CONNECTION_TERMINATION: "false",
        TG_DRAINING_INTERVAL: "300",
        TG_PRESERVE_CLIENT_IP: "true" if lb.preserve_client_ip else "false",
    }


def attribute_drift(current: Mapping[str, str] | None, desired: Mapping[str, str]) -> dict[str, str]:
    """The desired key/value attributes AWS does not have yet (AWS answers every value as a string)."""
    current = current or {}
    return {k: v for k, v in desired.items() if str(current.get(k, "")).lower() != v.lower()}


def attributes_as_dict(attributes: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    return {a["Key"]: str(a.get("Value", "")) for a in attributes or ()}


def as_attributes(values: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in values.items()]


def target_group_health_check(lb: LbSpec, listener: Listener) -> dict[str, Any]:
    """The API target group checks 6443 (HTTPS ``/readyz`` on request); an additional one checks its port."""
    if listener.prefix == API_TARGET_GROUP_PREFIX:
        check = {
            "HealthCheckProtocol": lb.health_check_protocol,
            "HealthCheckPort": str(KUBE_API_PORT),
            "HealthCheckIntervalSeconds": HC_INTERVAL,
            "HealthCheckTimeoutSeconds": HC_TIMEOUT,
            "HealthyThresholdCount": HC_HEALTHY,
            "UnhealthyThresholdCount": HC_UNHEALTHY,
        }
        if lb.health_check_protocol == "HTTPS":
            check["HealthCheckPath"] = READYZ_PATH
        return check
    return {"HealthCheckProtocol": "TCP", "HealthCheckPort": str(listener.target_port)}


# An AWS description, handed back as the caller passed it (a dict stays a dict the caller may update).
Described = TypeVar("Described", bound=Mapping[str, Any])


def match_target_group(groups: Iterable[Described], listener: Listener, taken: Iterable[str] = ()) -> Described | None:
    """The target group serving ``listener``: CAPA matches by name prefix, port and protocol, not exact name."""
    taken = set(taken)
    for group in groups:
        if (
            group["TargetGroupName"].startswith(listener.prefix)
            and int(group.get("Port") or 0) == listener.target_port
            and str(group.get("Protocol", "")).upper() == listener.protocol
            and group["TargetGroupArn"] not in taken
        ):
            return group
    return None


def match_listener(listeners: Iterable[Described], listener: Listener) -> Described | None:
    for current in listeners:
        if int(current.get("Port") or 0) == listener.port and str(current.get("Protocol", "")).upper() == "TCP":
            return current
    return None


def forwards_to(listener: Mapping[str, Any]) -> str | None:
    for action in listener.get("DefaultActions") or ():
        if action.get("Type") == "forward":
            if action.get("TargetGroupArn"):
                return action["TargetGroupArn"]
            groups = (action.get("ForwardConfig") or {}).get("TargetGroups") or []
            if len(groups) == 1:
                return groups[0].get("TargetGroupArn")
    return None


@dataclass
class Conditions:
    """CAPA's ``LoadBalancerReady`` condition as a dict result."""

    status: bool
    reason: str | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "LoadBalancerReady": {
                "status": "True" if self.status else "False",
                "reason": self.reason,
                "message": self.message,
            }
        }
