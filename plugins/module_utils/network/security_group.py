# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster's role security groups and their ingress rules (CAPA pkg/cloud/services/securitygroup).

Three layers, pure first:

* :func:`parse_spec` turns module parameters into a :class:`SecurityGroupSpec` and rejects bad input (before any
  AWS call);
* :func:`desired_rules` builds every role's ingress rules from the spec and the groups' ids, and
  :func:`explode_permissions` / :func:`diff_rules` / :func:`to_permissions` translate between AWS's grouped
  ``IpPermissions`` and single-source :class:`Rule` values compared as sets;
* :class:`SecurityGroupTier` observes (one describe), creates missing groups, then revokes and authorises
  the rule differences, one call per group and direction.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from ..aws.ec2 import delete_when_free, describe, require_by_ids, tags_of, wait_for_leaving_instances
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import (
    OWNED,
    cloud_provider_tag_key,
    either_tag_filter,
    is_owned,
    repair_tags,
    security_group_description,
    security_group_name,
    tag_specifications,
)
from ..kernel.tier import Outcome
from ..kernel.validation import check_port_range, check_resource_id, parse_cidr
from .blockers import finder

# Role names (api/v1beta2 SecurityGroupRole values).
BASTION = "bastion"
APISERVER_LB = "apiserver-lb"
LB = "lb"
CONTROLPLANE = "controlplane"
NODE = "node"
NODE_EKS_ADDITIONAL = "node-eks-additional"
KNOWN_ROLES = (BASTION, APISERVER_LB, LB, CONTROLPLANE, NODE, NODE_EKS_ADDITIONAL)

KIND_ROLES = {"unmanaged": (APISERVER_LB, LB, CONTROLPLANE, NODE), "eks": (NODE_EKS_ADDITIONAL,)}

PROTOCOLS = ("tcp", "udp", "icmp", "-1", "4", "50", "58")
# AWS answers protocols by name where it has one and by number otherwise; both sides of a diff go through
# normalise_protocol so "6" and "tcp" (or "all" and "-1") are the same rule.
_PROTOCOL_ALIASES = {"6": "tcp", "17": "udp", "1": "icmp", "all": "-1", "icmpv6": "58"}
# Protocols that carry ports; for every other one AWS ignores ports and describes the rule without them.
_PORTED = ("tcp", "udp", "icmp", "58")

ANYWHERE = "0.0.0.0/0"
KUBE_API_PORT = 6443
NODE_PORT_RANGE = (30000, 32767)

CALICO_RULES = (
    {"description": "bgp (calico)", "protocol": "tcp", "from_port": 179, "to_port": 179},
    {"description": "IP-in-IP (calico)", "protocol": "4", "from_port": None, "to_port": None},
)

# How a single-source rule names its source: the IpPermissions list it lives in and the key inside.
SOURCE_KINDS = {
    "cidr_block": ("IpRanges", "CidrIp"),
    "cidr_ipv6": ("Ipv6Ranges", "CidrIpv6"),
    "prefix_list_id": ("PrefixListIds", "PrefixListId"),
    "source_security_group_id": ("UserIdGroupPairs", "GroupId"),
}


# rules ---------------------------------------------------------------------------------------------------------
def normalise_protocol(protocol: Any) -> str:
    value = str(protocol).lower()
    return _PROTOCOL_ALIASES.get(value, value)


def has_ports(protocol: str) -> bool:
    return normalise_protocol(protocol) in _PORTED


@dataclass(frozen=True, order=True)
class Rule:
    """One ingress rule with one source: the unit CAPA diffs (description included)."""

    protocol: str
    from_port: int | None
    to_port: int | None
    source_kind: str
    source: str
    description: str = ""

    @classmethod
    def make(
        cls, protocol: Any, from_port: Any, to_port: Any, source_kind: str, source: str, description: str | None
    ) -> Rule:
        protocol = normalise_protocol(protocol)
        if not has_ports(protocol):
            from_port = to_port = None
        return cls(
            protocol,
            None if from_port is None else int(from_port),
            None if to_port is None else int(to_port),
            source_kind,
            source,
            description or "",
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "from_port": self.from_port,
            "to_port": self.to_port,
            "description": self.description,
            self.source_kind: self.source,
        }


def explode_permissions(permissions: Iterable[Mapping[str, Any]] | None) -> set[Rule]:
    """AWS's ``IpPermissions`` (several sources per entry) as single-source rules."""
    rules: set[Rule] = set()
    for permission in permissions or ():
        for kind, (list_key, id_key) in SOURCE_KINDS.items():
            for source in permission.get(list_key) or ():
                rules.add(
                    Rule.make(
                        permission["IpProtocol"],
                        permission.get("FromPort"),
                        permission.get("ToPort"),
                        kind,
                        source[id_key],
                        source.get("Description"),
                    )
                )
    return rules


def to_permissions(rules: Iterable[Rule]) -> list[dict[str, Any]]:
    """Single-source rules grouped back into ``IpPermissions`` (one entry per protocol and port range).

    Revocations carry the descriptions too: they come from the described rule, and moto (unlike AWS, as far
    as AWS documents) only revokes a rule whose description matches.
    """
    grouped: dict[tuple[str, int | None, int | None], dict[str, Any]] = {}
    for rule in sorted(rules):
        key = (rule.protocol, rule.from_port, rule.to_port)
        permission = grouped.get(key)
        if permission is None:
            permission = {"IpProtocol": rule.protocol}
            if rule.from_port is not None:
                permission.update(FromPort=rule.from_port, ToPort=rule.to_port)
            grouped[key] = permission
        list_key, id_key = SOURCE_KINDS[rule.source_kind]
        entry = {id_key: rule.source}
        if rule.description:
            entry["Description"] = rule.description
        permission.setdefault(list_key, []).append(entry)
    return list(grouped.values())


def diff_rules(current: Iterable[Rule], desired: Iterable[Rule]) -> tuple[list[Rule], list[Rule]]:
    """``(to_revoke, to_authorize)``: a rule whose description changed is in both, as CAPA replaces it."""
    current, desired = set(current), set(desired)
    return sorted(current - desired), sorted(desired - current)


# spec ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IngressRuleSpec:
    """A user rule before its sources are resolved to ids."""

    description: str
    protocol: str
    from_port: int | None
    to_port: int | None
    cidr_blocks: tuple[str, ...] = ()
    group_ids: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()


@dataclass(frozen=True)
class SecurityGroupSpec:
    state: str = "present"
    vpc_id: str | None = None
    kind: str = "unmanaged"
    vpc_cidr_block: str | None = None
    bastion_enabled: bool = False
    bastion_cidrs: tuple[str, ...] = (ANYWHERE,)
    cni_rules: tuple[IngressRuleSpec, ...] = ()
    control_plane_rules: tuple[IngressRuleSpec, ...] = ()
    node_rules: tuple[IngressRuleSpec, ...] = ()
    node_port_cidrs: tuple[str, ...] = (ANYWHERE,)
    lb_type: str = "classic"
    lb_scheme: str = "internet-facing"
    lb_rules: tuple[IngressRuleSpec, ...] = ()
    lb_listener_ports: tuple[int, ...] = ()
    preserve_client_ip: bool = False
    api_server_port: int = KUBE_API_PORT
    nat_gateway_ips: tuple[str, ...] = ()
    overrides: Mapping[str, str] = field(default_factory=dict)

    @property
    def roles(self) -> tuple[str, ...]:
        return ((BASTION,) if self.bastion_enabled else ()) + KIND_ROLES[self.kind]


def _list(value: Any) -> list[Any]:
    return list(value or [])


def _parse_rule(raw: Any, field_path: str, roles: tuple[str, ...], with_sources: bool) -> IngressRuleSpec:
    if not isinstance(raw, Mapping):
        raise SpecError(field_path, "must be a dict with protocol, from_port, to_port and description")
    protocol = normalise_protocol(raw.get("protocol") if raw.get("protocol") is not None else "")
    if protocol not in PROTOCOLS:
        raise SpecError(f"{field_path}.protocol", f"'{raw.get('protocol')}' is not one of {', '.join(PROTOCOLS)}")
    from_port, to_port = raw.get("from_port"), raw.get("to_port")
    check_port_range(from_port, to_port, protocol, field_path)
    if not has_ports(protocol):
        from_port = to_port = None
    cidrs: list[str] = []
    group_ids: list[str] = []
    source_roles: list[str] = []
    if with_sources:
        for index, cidr in enumerate(_list(raw.get("cidr_blocks"))):
            cidrs.append(str(parse_cidr(cidr, f"{field_path}.cidr_blocks[{index}]")))
        for index, group_id in enumerate(_list(raw.get("source_security_group_ids"))):
            check_resource_id(group_id, "sg", f"{field_path}.source_security_group_ids[{index}]")
            group_ids.append(group_id)
        for index, role in enumerate(_list(raw.get("source_security_group_roles"))):
            _check_role(role, roles, f"{field_path}.source_security_group_roles[{index}]")
            source_roles.append(role)
    return IngressRuleSpec(
        description=str(raw.get("description") or ""),
        protocol=protocol,
        from_port=None if from_port is None else int(from_port),
        to_port=None if to_port is None else int(to_port),
        cidr_blocks=tuple(cidrs),
        group_ids=tuple(group_ids),
        roles=tuple(source_roles),
    )


def _check_role(role: Any, roles: tuple[str, ...], field_path: str) -> None:
    if role not in KNOWN_ROLES:
        raise SpecError(field_path, f"'{role}' is not a security group role ({', '.join(KNOWN_ROLES)})")
    if role not in roles:
        raise SpecError(field_path, f"role '{role}' has no group in this configuration ({', '.join(roles)})")


def _parse_rules(raw: Any, field_path: str, roles: tuple[str, ...], with_sources: bool = True) -> tuple:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SpecError(field_path, "must be a list of rules")
    return tuple(_parse_rule(r, f"{field_path}[{i}]", roles, with_sources) for i, r in enumerate(raw))


def _parse_cidrs(raw: Any, field_path: str) -> tuple[str, ...]:
    return tuple(str(parse_cidr(c, f"{field_path}[{i}]")) for i, c in enumerate(_list(raw)))


def _parse_cni(raw: Any, roles: tuple[str, ...]) -> tuple[IngressRuleSpec, ...]:
    if raw is None or raw == "calico":
        raw = [dict(r) for r in CALICO_RULES]
    elif raw == "none":
        return ()
    elif isinstance(raw, str):
        raise SpecError("cni_ingress_rules", f"'{raw}' is not 'calico', 'none' or a list of rules")
    return _parse_rules(raw, "cni_ingress_rules", roles, with_sources=False)


def _parse_nat_ips(raw: Any) -> tuple[str, ...]:
    ips = []
    for index, value in enumerate(_list(raw)):
        if is_placeholder(value):
            ips.append(value)
            continue
        try:
            ips.append(str(ipaddress.IPv4Address(value)))
        except ValueError:
            raise SpecError(f"nat_gateway_ips[{index}]", f"'{value}' is not an IPv4 address") from None
    return tuple(ips)


def _parse_overrides(raw: Any, roles: tuple[str, ...]) -> dict[str, str]:
    overrides = dict(raw or {})
    for role, group_id in overrides.items():
        _check_role(role, roles, f"security_group_overrides.{role}")
        if not group_id or is_placeholder(group_id):
            raise SpecError(f"security_group_overrides.{role}", "must be the id of an existing security group")
        check_resource_id(group_id, "sg", f"security_group_overrides.{role}")
    return overrides


def parse_spec(params: Mapping[str, Any]) -> SecurityGroupSpec:
    """Module parameters (as :func:`module_argument_spec` validated them) as a spec; every mistake raises
    :class:`SpecError` naming the option."""
    kind = params["kind"]
    bastion = params["bastion"]
    roles = ((BASTION,) if bastion["enabled"] else ()) + KIND_ROLES[kind]
    lb = params["control_plane_load_balancer"]
    vpc_cidr = params["vpc_cidr_block"]
    if vpc_cidr and not is_placeholder(vpc_cidr):
        vpc_cidr = str(parse_cidr(vpc_cidr, "vpc_cidr_block"))
    port = params["api_server_port"]
    if not 1 <= port <= 65535:
        raise SpecError("api_server_port", f"{port} is not a port number")
    listener_ports = []
    for index, listener in enumerate(lb["additional_listeners"]):
        if not 1 <= listener["port"] <= 65535:
            raise SpecError(f"control_plane_load_balancer.additional_listeners[{index}].port", "is not a port number")
        if listener["protocol"].upper() != "TCP":
            raise SpecError(
                f"control_plane_load_balancer.additional_listeners[{index}].protocol", "NLB listeners are TCP only"
            )
        listener_ports.append(listener["port"])
    spec = SecurityGroupSpec(
        state=params["state"],
        vpc_id=params["vpc_id"],
        kind=kind,
        vpc_cidr_block=vpc_cidr,
        bastion_enabled=bastion["enabled"],
        bastion_cidrs=_parse_cidrs(bastion["allowed_cidr_blocks"], "bastion.allowed_cidr_blocks"),
        cni_rules=_parse_cni(params["cni_ingress_rules"], roles),
        control_plane_rules=_parse_rules(
            params["additional_control_plane_ingress_rules"], "additional_control_plane_ingress_rules", roles
        ),
        node_rules=_parse_rules(params["additional_node_ingress_rules"], "additional_node_ingress_rules", roles),
        node_port_cidrs=_parse_cidrs(params["node_port_ingress_cidr_blocks"], "node_port_ingress_cidr_blocks"),
        lb_type=lb["type"],
        lb_scheme=lb["scheme"],
        lb_rules=_parse_rules(lb["ingress_rules"], "control_plane_load_balancer.ingress_rules", roles),
        lb_listener_ports=tuple(listener_ports),
        preserve_client_ip=lb["preserve_client_ip"],
        api_server_port=port,
        nat_gateway_ips=_parse_nat_ips(params["nat_gateway_ips"]),
        overrides=_parse_overrides(params["security_group_overrides"], roles),
    )
    _check_needs(spec)
    return spec


def _check_needs(spec: SecurityGroupSpec) -> None:
    """Options some rules cannot do without, checked up front rather than half-way through a run."""
    if spec.kind == "unmanaged" and not spec.vpc_cidr_block:
        if spec.lb_scheme == "internal":
            raise SpecError("vpc_cidr_block", "is required for an internal control-plane load balancer")
        if spec.lb_type == "nlb" and not spec.preserve_client_ip:
            raise SpecError("vpc_cidr_block", "is required for an NLB control-plane load balancer")
    needs_controlplane = [r for r in spec.control_plane_rules + spec.node_rules + spec.lb_rules if not _has_source(r)]
    if needs_controlplane and CONTROLPLANE not in spec.roles:
        raise SpecError(
            "additional_control_plane_ingress_rules",
            "rules without cidr_blocks or source security groups default to the controlplane group, "
            f"which a '{spec.kind}' cluster does not have; give a source",
        )


def _has_source(rule: IngressRuleSpec) -> bool:
    return bool(rule.cidr_blocks or rule.group_ids or rule.roles)


# desired rules -------------------------------------------------------------------------------------------------
def _tcp(port: int, description: str, kind: str, sources: Iterable[str], to_port: int | None = None) -> set[Rule]:
    return {Rule.make("tcp", port, to_port or port, kind, s, description) for s in sources}


def _from_groups(ids: Mapping[str, str], *roles: str) -> list[str]:
    return [ids[r] for r in roles if r in ids]


def _resolve(rule: IngressRuleSpec, ids: Mapping[str, str]) -> set[Rule]:
    """A user rule exploded per source; with no source at all CAPA uses the controlplane group."""
    group_ids = list(rule.group_ids) + [ids[r] for r in rule.roles]
    if not rule.cidr_blocks and not group_ids:
        group_ids = _from_groups(ids, CONTROLPLANE)
    rules = {
        Rule.make(rule.protocol, rule.from_port, rule.to_port, "cidr_block", c, rule.description)
        for c in rule.cidr_blocks
    }
    rules |= {
        Rule.make(rule.protocol, rule.from_port, rule.to_port, "source_security_group_id", g, rule.description)
        for g in group_ids
    }
    return rules


def _resolve_all(rules: Iterable[IngressRuleSpec], ids: Mapping[str, str]) -> set[Rule]:
    out: set[Rule] = set()
    for rule in rules:
        out |= _resolve(rule, ids)
    return out


def _ssh_from_bastion(spec: SecurityGroupSpec, ids: Mapping[str, str]) -> set[Rule]:
    return _tcp(22, "SSH", "source_security_group_id", _from_groups(ids, BASTION)) if spec.bastion_enabled else set()


def _cni(spec: SecurityGroupSpec, ids: Mapping[str, str]) -> set[Rule]:
    sources = tuple(_from_groups(ids, CONTROLPLANE, NODE))
    return _resolve_all((replace(r, group_ids=sources) for r in spec.cni_rules), ids)


def _apiserver_lb_sources(spec: SecurityGroupSpec) -> list[str]:
    if spec.lb_scheme == "internal":
        return [spec.vpc_cidr_block] if spec.vpc_cidr_block else []
    # Until the NAT gateways have addresses CAPA opens the port to everyone rather than lock the nodes out.
    if not spec.nat_gateway_ips or any(is_placeholder(ip) for ip in spec.nat_gateway_ips):
        return [ANYWHERE]
    return [f"{ip}/32" for ip in spec.nat_gateway_ips]


def _lb_rules(spec: SecurityGroupSpec) -> set[Rule]:
    if spec.lb_type != "nlb":
        return set()
    source = ANYWHERE if spec.preserve_client_ip else spec.vpc_cidr_block
    if source is None:  # _check_needs refuses this spec before any request
        raise SpecError("vpc_cidr_block", "is required for an NLB control-plane load balancer")
    rules = _tcp(KUBE_API_PORT, "Kubernetes API (NLB)", "cidr_block", [source])
    for port in spec.lb_listener_ports:
        rules |= _tcp(port, f"NLB additional listener {port}", "cidr_block", [source])
    return rules


def desired_rules(spec: SecurityGroupSpec, ids: Mapping[str, str]) -> dict[str, set[Rule]]:
    """Every role's ingress rules, CAPA's defaults plus the user's, with sources resolved through ``ids``."""
    sg = "source_security_group_id"
    out: dict[str, set[Rule]] = {}
    if spec.bastion_enabled:
        out[BASTION] = _tcp(22, "SSH", "cidr_block", spec.bastion_cidrs)
    if spec.kind == "eks":
        out[NODE_EKS_ADDITIONAL] = _resolve_all(spec.control_plane_rules, ids) | _ssh_from_bastion(spec, ids)
        return out
    cni = _cni(spec, ids)
    out[CONTROLPLANE] = (
        _tcp(KUBE_API_PORT, "Kubernetes API", sg, _from_groups(ids, APISERVER_LB, CONTROLPLANE, NODE))
        | _tcp(2379, "etcd", sg, _from_groups(ids, CONTROLPLANE))
        | _tcp(2380, "etcd peer", sg, _from_groups(ids, CONTROLPLANE))
        | _ssh_from_bastion(spec, ids)
        | cni
        | _resolve_all(spec.control_plane_rules, ids)
    )
    out[NODE] = (
        _tcp(NODE_PORT_RANGE[0], "Node Port Services", "cidr_block", spec.node_port_cidrs, NODE_PORT_RANGE[1])
        | _tcp(10250, "Kubelet API", sg, _from_groups(ids, CONTROLPLANE, NODE))
        | _ssh_from_bastion(spec, ids)
        | cni
        | _resolve_all(spec.node_rules, ids)
    )
    api = _tcp(spec.api_server_port, "Kubernetes API", "cidr_block", _apiserver_lb_sources(spec))
    if spec.lb_rules:
        api |= _resolve_all(spec.lb_rules, ids)
    else:
        api |= _tcp(spec.api_server_port, "Kubernetes API", "cidr_block", [ANYWHERE])
    out[APISERVER_LB] = api
    out[LB] = _lb_rules(spec)
    return out


# the tier ------------------------------------------------------------------------------------------------------
@dataclass
class _Group:
    role: str
    group_id: str
    name: str
    managed: bool
    rules: set[Rule]
    tags: dict[str, str]
    created: bool = False  # by this run


def _vpc_id_to_create_in(spec: SecurityGroupSpec) -> str:
    if not spec.vpc_id:
        raise SpecError("vpc_id", "is required when state is present")
    return spec.vpc_id


class SecurityGroupTier:
    def parse(self, params: Mapping[str, Any]) -> SecurityGroupSpec:
        return parse_spec(params)

    def validate(self, spec: SecurityGroupSpec, region: str | None) -> None:
        check_resource_id(spec.vpc_id, "vpc", "vpc_id")
        if spec.state == "present":
            _vpc_id_to_create_in(spec)

    def reconcile(self, ctx: Context, spec: SecurityGroupSpec) -> Outcome:
        vpc_id = spec.vpc_id
        owned = self._observe_owned(ctx, vpc_id)
        if spec.state == "absent":
            # Overrides only need to be left alone here, which their ids alone allow: no describe.
            before = self._summary(ctx, spec, owned, {}) or None
            self._delete(ctx, owned, set(spec.overrides.values()))
            return Outcome(before, None)
        overrides = self._observe_overrides(ctx, spec, vpc_id)
        before = self._summary(ctx, spec, owned, overrides) or None
        groups = self._ensure_groups(ctx, spec, _vpc_id_to_create_in(spec), owned, overrides)
        ids = {role: g.group_id for role, g in groups.items()}
        desired = desired_rules(spec, ids)
        for role in spec.roles:
            group = groups[role]
            # The cloud provider owns the lb group's rules once the group exists; CAPA sets them at creation only.
            if group.managed and (role != LB or group.created):
                self._converge_rules(ctx, group, desired.get(role, set()))
        self._warn_unused(ctx, spec, owned)
        return Outcome(before, self._summary(ctx, spec, {g.name: g for g in groups.values() if g.managed}, overrides))

    # observe -------------------------------------------------------------------------------------------------
    def _observe_owned(self, ctx: Context, vpc_id: str | None) -> dict[str, _Group]:
        """The cluster's groups by name, from one describe (none can exist in a VPC still to be created)."""
        if is_placeholder(vpc_id):
            return {}
        # The status read-back's request (the cluster's groups and the cloud provider's, anywhere), this VPC's owned
        # ones picked here: a run that changes nothing asks it once (kernel/shared_reads.py).
        found = describe(ctx, "describe_security_groups", "SecurityGroups", Filters=either_tag_filter(ctx.cluster))
        owned = [g for g in found if is_owned(tags_of(g), ctx.cluster) and (not vpc_id or g.get("VpcId") == vpc_id)]
        return {g["GroupName"]: _as_group(ctx, g, role=None) for g in owned}

    def _observe_overrides(self, ctx: Context, spec: SecurityGroupSpec, vpc_id: str | None) -> dict[str, _Group]:
        if not spec.overrides:
            return {}
        found = require_by_ids(
            ctx, "describe_security_groups", "SecurityGroups", "GroupIds", list(spec.overrides.values())
        )
        by_id = {g["GroupId"]: g for g in found}
        groups = {}
        for role, group_id in spec.overrides.items():
            group = by_id[group_id]
            if vpc_id and group.get("VpcId") != vpc_id:
                raise ReconcileError(
                    f"security_group_overrides.{role}: {group_id} is in {group.get('VpcId')}, not in {vpc_id}"
                )
            groups[role] = _as_group(ctx, group, role=role, managed=False)
        return groups

    # converge ------------------------------------------------------------------------------------------------
    def _ensure_groups(
        self,
        ctx: Context,
        spec: SecurityGroupSpec,
        vpc_id: str,
        owned: Mapping[str, _Group],
        overrides: Mapping[str, _Group],
    ) -> dict[str, _Group]:
        """Every role's group, creating the missing ones first so that rules can reference any of them."""
        groups: dict[str, _Group] = {}
        for role in spec.roles:
            if role in overrides:
                groups[role] = overrides[role]
                continue
            name = security_group_name(ctx.cluster, role)
            tags = ctx.tags(role, name, _extra_tags(ctx, role))
            group = owned.get(name)
            if group is None:
                group = self._create(ctx, role, name, vpc_id, tags)
            else:
                repair_tags(ctx, "ec2", group.group_id, name, group.tags, tags)
            group.role = role
            groups[role] = group
        return groups

    def _create(self, ctx: Context, role: str, name: str, vpc_id: str, tags: dict[str, str]) -> _Group:
        created = ctx.ops.call(
            ctx.client("ec2"),
            "create_security_group",
            resource=name,
            reason="missing",
            predicted={"GroupId": placeholder("sg", name)},
            GroupName=name,
            Description=security_group_description(ctx.cluster, role),
            VpcId=vpc_id,
            TagSpecifications=tag_specifications("security-group", tags),
        )
        return _Group(role, created["GroupId"], name, True, set(), dict(tags), created=True)

    def _converge_rules(self, ctx: Context, group: _Group, desired: set[Rule]) -> None:
        revoke, authorize = diff_rules(group.rules, desired)
        ec2 = ctx.client("ec2")
        # Revoke first: a rule whose description changed is revoked and authorised again, and AWS would
        # refuse the authorisation of a duplicate (same protocol, ports and source) while the old one exists.
        if revoke:
            ctx.ops.call(
                ec2,
                "revoke_security_group_ingress",
                resource=group.name,
                reason=f"{len(revoke)} rule(s) not in the spec: {_brief(revoke)}",
                GroupId=group.group_id,
                IpPermissions=to_permissions(revoke),
            )
        if authorize:
            ctx.ops.call(
                ec2,
                "authorize_security_group_ingress",
                resource=group.name,
                reason=f"{len(authorize)} rule(s) missing: {_brief(authorize)}",
                GroupId=group.group_id,
                IpPermissions=to_permissions(authorize),
            )
        group.rules = set(desired)

    def _warn_unused(self, ctx: Context, spec: SecurityGroupSpec, owned: Mapping[str, _Group]) -> None:
        wanted = {security_group_name(ctx.cluster, r) for r in spec.roles}
        for name in sorted(set(owned) - wanted):
            ctx.warn(
                f"security group {name} ({owned[name].group_id}) is owned by the cluster but no role uses it; "
                "it is kept until state=absent"
            )

    # delete --------------------------------------------------------------------------------------------------
    def _delete(self, ctx: Context, owned: Mapping[str, _Group], keep: set[str]) -> None:
        ec2 = ctx.client("ec2")
        doomed = [g for g in owned.values() if g.group_id not in keep]
        # The groups reference each other (controlplane <-> node), and AWS refuses to delete a group another
        # group's rule names, so every rule goes before any group does.
        for group in doomed:
            if group.rules:
                ctx.ops.call(
                    ec2,
                    "revoke_security_group_ingress",
                    resource=group.name,
                    reason="cluster deleted",
                    GroupId=group.group_id,
                    IpPermissions=to_permissions(group.rules),
                )
        if doomed and ctx.wait and not ctx.check_mode:
            # The cluster's deletion terminates its machines without waiting: they hold these groups until gone.
            wait_for_leaving_instances(
                ctx,
                [{"Name": "instance.group-id", "Values": [g.group_id for g in doomed]}],
                "the cluster's machines that use its security groups to be terminated",
            )
        for group in doomed:
            self._delete_group(ctx, group)

    def _delete_group(self, ctx: Context, group: _Group) -> None:
        ec2 = ctx.client("ec2")

        def attempt() -> None:
            ctx.ops.call(
                ec2, "delete_security_group", resource=group.name, reason="cluster deleted", GroupId=group.group_id
            )

        if ctx.check_mode:
            attempt()
            return
        delete_when_free(
            ctx,
            attempt,
            f"security group {group.name} ({group.group_id})",
            blockers=finder(ctx, group_id=group.group_id),
        )

    # report --------------------------------------------------------------------------------------------------
    def _summary(
        self, ctx: Context, spec: SecurityGroupSpec, owned: Mapping[str, _Group], overrides: Mapping[str, _Group]
    ) -> dict[str, Any]:
        by_role = {role: owned.get(security_group_name(ctx.cluster, role)) for role in spec.roles}
        by_role.update(overrides)
        return {
            role: {
                "id": g.group_id,
                "name": g.name,
                "managed": g.managed,
                "ingress_rules": [r.as_dict() for r in sorted(g.rules)],
            }
            for role, g in by_role.items()
            if g is not None
        }


def _as_group(ctx: Context, group: Mapping[str, Any], role: str | None, managed: bool | None = None) -> _Group:
    tags = tags_of(group)
    return _Group(
        role=role or tags.get("sigs.k8s.io/cluster-api-provider-aws/role", ""),
        group_id=group["GroupId"],
        name=group["GroupName"],
        managed=is_owned(tags, ctx.cluster) if managed is None else managed,
        rules=explode_permissions(group.get("IpPermissions")),
        tags=tags,
    )


def _extra_tags(ctx: Context, role: str) -> dict[str, str]:
    # Only the lb group is handed to the cloud provider, which finds it by this tag (CAPA tags no other group).
    return {cloud_provider_tag_key(ctx.cluster): OWNED} if role == LB else {}


def _brief(rules: list[Rule], limit: int = 4) -> str:
    shown = [_rule_text(r) for r in rules[:limit]]
    more = f" and {len(rules) - limit} more" if len(rules) > limit else ""
    return "; ".join(shown) + more


def _rule_text(rule: Rule) -> str:
    ports = (
        ""
        if rule.from_port is None
        else f" {rule.from_port}" + (f"-{rule.to_port}" if rule.to_port != rule.from_port else "")
    )
    return f"{rule.protocol}{ports} from {rule.source}" + (f" ({rule.description})" if rule.description else "")


RULE_OPTIONS = dict(
    description=dict(type="str"),
    protocol=dict(type="str", required=True),
    from_port=dict(type="int"),
    to_port=dict(type="int"),
    cidr_blocks=dict(type="list", elements="str", default=[]),
    source_security_group_ids=dict(type="list", elements="str", default=[]),
    source_security_group_roles=dict(type="list", elements="str", default=[]),
)


def module_argument_spec() -> dict[str, Any]:
    """capa_security_group's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        vpc_id=dict(type="str"),
        vpc_cidr_block=dict(type="str"),
        kind=dict(type="str", default="unmanaged", choices=list(KIND_ROLES)),
        bastion=dict(
            type="dict",
            apply_defaults=True,
            options=dict(
                enabled=dict(type="bool", default=False),
                allowed_cidr_blocks=dict(type="list", elements="str", default=["0.0.0.0/0"]),
            ),
        ),
        cni_ingress_rules=dict(type="raw", default="calico"),
        additional_control_plane_ingress_rules=dict(type="list", elements="dict", default=[], options=RULE_OPTIONS),
        additional_node_ingress_rules=dict(type="list", elements="dict", default=[], options=RULE_OPTIONS),
        node_port_ingress_cidr_blocks=dict(type="list", elements="str", default=["0.0.0.0/0"]),
        control_plane_load_balancer=dict(
            type="dict",
            apply_defaults=True,
            options=dict(
                type=dict(type="str", default="classic", choices=["classic", "nlb", "external", "disabled"]),
                scheme=dict(type="str", default="internet-facing", choices=["internet-facing", "internal"]),
                ingress_rules=dict(type="list", elements="dict", default=[], options=RULE_OPTIONS),
                additional_listeners=dict(
                    type="list",
                    elements="dict",
                    default=[],
                    options=dict(port=dict(type="int", required=True), protocol=dict(type="str", default="TCP")),
                ),
                preserve_client_ip=dict(type="bool", default=False),
            ),
        ),
        api_server_port=dict(type="int", default=6443),
        nat_gateway_ips=dict(type="list", elements="str", default=[]),
        security_group_overrides=dict(type="dict", default={}),
    )
