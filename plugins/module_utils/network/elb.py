# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the control-plane load balancer of a self-managed cluster (CAPA pkg/cloud/services/elb).

Classic ELB (CAPA's API default), NLB (elbv2, what CAPA's templates use), an existing load balancer used as it is
(``external``) or none at all (``disabled``), plus an optional secondary NLB. Pure decisions live in
:mod:`._elb_plan`; this file observes (one describe per resource type), applies the differences through
``ctx.ops.call`` and reports the load balancers, the control-plane endpoint and CAPA's ``LoadBalancerReady``
condition.

Registering control-plane instances is not done here: capa_instance does it with the ``name`` and
``target_group_arns`` this tier returns.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..aws import elb as _elb
from ..aws import elbv2 as _elbv2
from ..aws.ec2 import delete_when_free
from ..aws.errors import missing_as_none
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import OWNED, ROLE_APISERVER, cloud_provider_tag_key, dict_to_tags, is_owned, repair_tags
from ..kernel.tier import Outcome
from ..kernel.waiting import wait_until
from . import elb_plan as plan
from .blockers import finder
from .elb_plan import (
    CLASSIC,
    DISABLED,
    EXTERNAL,
    NLB,
    TARGET_GROUP_PREFIXES,
    Conditions,
    ElbSpec,
    LbSpec,
    Listener,
    as_attributes,
    attribute_drift,
    attributes_as_dict,
    choose_subnets,
    classic_attribute_drift,
    classic_attributes,
    classic_health_check,
    classic_listeners,
    forwards_to,
    health_check_drift,
    lb_attributes,
    listener_drift,
    match_listener,
    match_target_group,
    parse_spec,
    set_drift,
    target_group_attributes,
    target_group_health_check,
    target_group_name,
)

WAIT_DNS = "WaitForDNSName"
WAIT_EXTERNAL = "WaitForExternalControlPlaneEndpoint"


class ElbTier:
    def parse(self, params: Mapping[str, Any]) -> ElbSpec:
        return parse_spec(params, params["cluster_name"])  # every rule of the spec is checked as it is parsed

    def validate(self, spec: ElbSpec, region: str | None) -> None:
        pass

    def reconcile(self, ctx: Context, spec: ElbSpec) -> Outcome:
        if spec.state == "absent":
            return Outcome(*_Deletion(ctx, spec).run())
        return Outcome(*_Build(ctx, spec).run())


# observed state --------------------------------------------------------------------------------------------------
@dataclass
class ClassicState:
    description: dict[str, Any]
    tags: dict[str, str]
    attributes: dict[str, Any] | None
    managed: bool


@dataclass
class V2State:
    description: dict[str, Any]
    managed: bool
    attributes: dict[str, str] = field(default_factory=dict)
    target_groups: list[dict[str, Any]] = field(default_factory=list)
    target_group_attributes: dict[str, dict[str, str]] = field(default_factory=dict)
    listeners: list[dict[str, Any]] = field(default_factory=list)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)  # ARN -> tags

    @property
    def arn(self) -> str:
        return self.description["LoadBalancerArn"]


def _check_identity(lb: LbSpec, found_vpc: str | None, found_scheme: str | None, vpc_id: str | None) -> None:
    """Load balancer names are region-unique: one with our name elsewhere is someone else's."""
    if vpc_id and not is_placeholder(vpc_id) and found_vpc and found_vpc != vpc_id:
        raise ReconcileError(
            f"load balancer names are unique within a region: '{lb.name}' already exists in {found_vpc}, "
            f"not in {vpc_id}"
        )
    if found_scheme and found_scheme != lb.scheme:
        raise ReconcileError(
            f"load balancer names are unique within a region: '{lb.name}' already exists with scheme "
            f"'{found_scheme}', not '{lb.scheme}'"
        )


def refuse_type_change(ctx: Context, lb: LbSpec) -> None:
    """Before creating a load balancer: one of the other type with its name, owned by the cluster, means the spec
    changed the type. That would move the API endpoint every certificate and kubeconfig names, so it is refused
    (read-only requests only; checked when creating, so a steady run makes no extra request)."""
    if lb.type == CLASSIC:
        other = _elbv2.describe_load_balancers_by_name(ctx, [lb.aws_name]).get(lb.aws_name)
        tags = _elbv2.describe_tags(ctx, [other["LoadBalancerArn"]]).get(other["LoadBalancerArn"], {}) if other else {}
        kind = "network (nlb)"
    else:
        other = _elb.describe_load_balancer(ctx, lb.aws_name)
        tags = _elb.describe_tags(ctx, [lb.aws_name]).get(lb.aws_name, {}) if other else {}
        kind = "classic"
    if other is not None and is_owned(tags, ctx.cluster):
        raise SpecError(
            "type",
            f"'{lb.type}': cluster {ctx.cluster} already has the {kind} load balancer '{lb.name}'; the type of the "
            "control-plane load balancer cannot change (the API endpoint would move)",
        )


# present ---------------------------------------------------------------------------------------------------------
class _Build:
    def __init__(self, ctx: Context, spec: ElbSpec) -> None:
        self.ctx = ctx
        self.spec = spec

    def run(self) -> tuple[Any, Any]:
        before: dict[str, Any] = {"load_balancer": None, "secondary_load_balancer": None}
        after: dict[str, Any] = {"load_balancer": None, "secondary_load_balancer": None}
        key = {"primary": "load_balancer", "secondary": "secondary_load_balancer"}
        ready = Conditions(status=False, reason=WAIT_EXTERNAL, message="no load balancer (type disabled)")
        nlbs = [lb for lb in self.spec.load_balancers if lb.type == NLB]
        v2_found = _elbv2.describe_load_balancers_by_name(self.ctx, [lb.aws_name for lb in nlbs]) if nlbs else {}
        v2_states = _V2Observer(self.ctx).observe(v2_found, managed_only=False) if v2_found else {}
        for lb in self.spec.load_balancers:
            if lb.type == DISABLED:
                continue
            if lb.type == CLASSIC:
                old, new = _ClassicLb(self.ctx, self.spec, lb).run()
            elif lb.type == NLB:
                old, new = _NetworkLb(self.ctx, self.spec, lb, v2_states.get(lb.aws_name)).run()
            else:
                old, new = _external(self.ctx, self.spec, lb)
            before[key[lb.label]], after[key[lb.label]] = old, new
        primary = after["load_balancer"]
        if primary is not None:
            ready = _readiness(after)
        after["endpoint"] = {"host": primary["dns_name"], "port": primary["port"]} if primary else None
        before["endpoint"] = (
            {"host": before["load_balancer"]["dns_name"], "port": before["load_balancer"]["port"]}
            if before["load_balancer"]
            else None
        )
        after["conditions"] = ready.as_dict()
        return before, after


def _readiness(after: Mapping[str, Any]) -> Conditions:
    for key in ("load_balancer", "secondary_load_balancer"):
        lb = after.get(key)
        if lb is None:
            continue
        if not lb.get("dns_name") or is_placeholder(lb["dns_name"]):
            return Conditions(False, WAIT_DNS, f"{lb['name']} has no DNS name yet")
        if lb.get("state") not in (None, "active"):
            return Conditions(False, WAIT_DNS, f"{lb['name']} is {lb['state']}")
    return Conditions(True)


def _external(ctx: Context, spec: ElbSpec, lb: LbSpec) -> tuple[Any, Any]:
    """An existing load balancer, validated and used as it is: never tagged, changed or deleted."""
    found = _elb.describe_load_balancer(ctx, lb.aws_name)
    if found is not None:
        _check_identity(lb, found.get("VPCId"), found.get("Scheme"), spec.vpc_id)
        summary = _classic_summary(lb, found, managed=False)
        return summary, summary
    v2 = _elbv2.describe_load_balancers_by_name(ctx, [lb.aws_name]).get(lb.aws_name)
    if v2 is None:
        raise ReconcileError(f"name: no load balancer named '{lb.name}' exists in region {ctx.region}")
    _check_identity(lb, v2.get("VpcId"), v2.get("Scheme"), spec.vpc_id)
    state = V2State(description=v2, managed=False, target_groups=_elbv2.target_groups_of(ctx, v2["LoadBalancerArn"]))
    summary = _v2_summary(lb, state)
    return summary, summary


# classic ---------------------------------------------------------------------------------------------------------
class _ClassicLb:
    def __init__(self, ctx: Context, spec: ElbSpec, lb: LbSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.lb = lb
        self.client = ctx.client("elb")
        self.subnets = [s.id for s in choose_subnets(spec.subnets, lb.scheme)]
        self.groups = list(spec.security_group_ids)

    def observe(self) -> ClassicState | None:
        found = _elb.describe_load_balancer(self.ctx, self.lb.aws_name)
        if found is None:
            return None
        _check_identity(self.lb, found.get("VPCId"), found.get("Scheme"), self.spec.vpc_id)
        tags = _elb.describe_tags(self.ctx, [self.lb.aws_name]).get(self.lb.aws_name, {})
        attributes = _elb.describe_attributes(self.ctx, self.lb.aws_name)
        return ClassicState(found, tags, attributes, is_owned(tags, self.ctx.cluster))

    def run(self) -> tuple[Any, Any]:
        state = self.observe()
        before = _classic_summary(self.lb, state.description, state.managed) if state else None
        if state is None:
            refuse_type_change(self.ctx, self.lb)
            description = self._create()
            self._configure_health_check("created")
            self._modify_attributes(list(classic_attributes(self.lb)), "created")
            return before, _classic_summary(self.lb, description, managed=True)
        if not state.managed:
            # CAPA uses a load balancer of that name without its ownership tag as it is.
            return before, before
        description = dict(state.description)
        self._converge(state, description)
        return before, _classic_summary(self.lb, description, managed=True)

    def _create(self) -> dict[str, Any]:
        name = self.lb.aws_name
        tags = self.ctx.tags(ROLE_APISERVER, name)
        created = self.ctx.ops.call(
            self.client,
            "create_load_balancer",
            resource=name,
            reason="missing",
            predicted={"DNSName": placeholder("dns", name)},
            LoadBalancerName=name,
            Listeners=classic_listeners(self.lb),
            Subnets=self.subnets,
            SecurityGroups=self.groups,
            Scheme=self.lb.scheme,
            Tags=dict_to_tags(tags),
        )
        return {
            "LoadBalancerName": name,
            "DNSName": created.get("DNSName"),
            "Scheme": self.lb.scheme,
            "Subnets": self.subnets,
            "SecurityGroups": self.groups,
            "HealthCheck": classic_health_check(self.lb),
            "ListenerDescriptions": [{"Listener": li} for li in classic_listeners(self.lb)],
            "VPCId": self.spec.vpc_id,
        }

    def _converge(self, state: ClassicState, description: dict[str, Any]) -> None:
        name = self.lb.aws_name
        drift = classic_attribute_drift(state.attributes, classic_attributes(self.lb))
        if drift:
            self._modify_attributes(drift, f"attributes differ: {', '.join(drift)}")
        # A load balancer created outside the module (or by moto) may have no health check yet: that is drift too.
        check_drift = health_check_drift(description.get("HealthCheck"), classic_health_check(self.lb))
        if check_drift:
            self._configure_health_check(f"health check differs: {', '.join(check_drift)}")
            description["HealthCheck"] = classic_health_check(self.lb)
        repair_tags(self.ctx, "elb", name, name, state.tags, self.ctx.tags(ROLE_APISERVER, name))
        self._converge_listeners(description)
        self._converge_subnets(description)
        remove, add = set_drift(description.get("SecurityGroups") or [], self.groups)
        if remove or add:
            self.ctx.ops.call(
                self.client,
                "apply_security_groups_to_load_balancer",
                resource=name,
                reason=f"security groups differ (+{add} -{remove})",
                LoadBalancerName=name,
                SecurityGroups=self.groups,
            )
            description["SecurityGroups"] = self.groups

    def _converge_listeners(self, description: dict[str, Any]) -> None:
        current = [d["Listener"] for d in description.get("ListenerDescriptions") or []]
        delete, create = listener_drift(current, classic_listeners(self.lb))
        if delete:
            self.ctx.ops.call(
                self.client,
                "delete_load_balancer_listeners",
                resource=self.lb.aws_name,
                reason=f"listeners not in the spec on port(s) {delete}",
                LoadBalancerName=self.lb.aws_name,
                LoadBalancerPorts=delete,
            )
        if create:
            self.ctx.ops.call(
                self.client,
                "create_load_balancer_listeners",
                resource=self.lb.aws_name,
                reason=f"listener missing on port {self.lb.api_server_port}",
                LoadBalancerName=self.lb.aws_name,
                Listeners=create,
            )
        if delete or create:
            description["ListenerDescriptions"] = [{"Listener": li} for li in classic_listeners(self.lb)]

    def _converge_subnets(self, description: dict[str, Any]) -> None:
        current = description.get("Subnets") or []
        detach, attach = set_drift(current, self.subnets)
        if not detach and not attach:
            return
        calls = []
        if detach:
            calls.append(("detach_load_balancer_from_subnets", detach, "subnets not in the spec"))
        if attach:
            calls.append(("attach_load_balancer_to_subnets", attach, "subnets missing"))
        # A classic ELB takes one subnet per zone and at least one subnet at any time: detach first (freeing the
        # zones the new subnets go to) unless that would leave it with none.
        if set(detach) >= set(current):
            calls.reverse()
        for method, subnets, reason in calls:
            self.ctx.ops.call(
                self.client,
                method,
                resource=self.lb.aws_name,
                reason=f"{reason}: {', '.join(subnets)}",
                LoadBalancerName=self.lb.aws_name,
                Subnets=subnets,
            )
        description["Subnets"] = self.subnets

    def _configure_health_check(self, reason: str) -> None:
        self.ctx.ops.call(
            self.client,
            "configure_health_check",
            resource=self.lb.aws_name,
            reason=reason,
            LoadBalancerName=self.lb.aws_name,
            HealthCheck=classic_health_check(self.lb),
        )

    def _modify_attributes(self, groups: list[str], reason: str) -> None:
        desired = classic_attributes(self.lb)
        self.ctx.ops.call(
            self.client,
            "modify_load_balancer_attributes",
            resource=self.lb.aws_name,
            reason=reason,
            LoadBalancerName=self.lb.aws_name,
            LoadBalancerAttributes={g: desired[g] for g in groups},
        )


def _classic_summary(lb: LbSpec, description: Mapping[str, Any], managed: bool) -> dict[str, Any]:
    check = description.get("HealthCheck")
    return {
        "type": CLASSIC,
        "name": description["LoadBalancerName"],
        "arn": None,
        "dns_name": description.get("DNSName"),
        "scheme": description.get("Scheme"),
        "port": lb.api_server_port,
        "managed": managed,
        "state": None,
        "subnets": sorted(description.get("Subnets") or []),
        "security_groups": sorted(description.get("SecurityGroups") or []),
        "target_group_arns": [],
        "health_check": (
            {
                "target": check.get("Target"),
                "interval": check.get("Interval"),
                "timeout": check.get("Timeout"),
                "healthy_threshold": check.get("HealthyThreshold"),
                "unhealthy_threshold": check.get("UnhealthyThreshold"),
            }
            if check
            else None
        ),
    }


# NLB -------------------------------------------------------------------------------------------------------------
class _V2Observer:
    """Target groups, listeners, attributes and tags of described elbv2 load balancers, each type asked once."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def observe(self, found: Mapping[str, dict[str, Any]], managed_only: bool) -> dict[str, V2State]:
        ctx = self.ctx
        states = {name: V2State(description=d, managed=False) for name, d in found.items()}
        for state in states.values():
            state.target_groups = _elbv2.target_groups_of(ctx, state.arn)
            state.listeners = _elbv2.listeners_of(ctx, state.arn)
        arns = [a for s in states.values() for a in _arns_of(s)]
        tags = _elbv2.describe_tags(ctx, arns)
        for state in states.values():
            state.tags = {a: tags.get(a, {}) for a in _arns_of(state)}
            state.managed = is_owned(state.tags.get(state.arn), ctx.cluster)
            if managed_only or not state.managed:
                continue
            state.attributes = attributes_as_dict(_elbv2.attributes_of_load_balancer(ctx, state.arn))
            for group in _own_target_groups(state):
                arn = group["TargetGroupArn"]
                state.target_group_attributes[arn] = attributes_as_dict(_elbv2.attributes_of_target_group(ctx, arn))
        return states


def _arns_of(state: V2State) -> list[str]:
    return (
        [state.arn] + [g["TargetGroupArn"] for g in state.target_groups] + [li["ListenerArn"] for li in state.listeners]
    )


def _own_target_groups(state: V2State) -> list[dict[str, Any]]:
    return [g for g in state.target_groups if g["TargetGroupName"].startswith(TARGET_GROUP_PREFIXES)]


class _NetworkLb:
    def __init__(self, ctx: Context, spec: ElbSpec, lb: LbSpec, state: V2State | None) -> None:
        self.ctx = ctx
        self.spec = spec
        self.lb = lb
        self.state = state
        self.client = ctx.client("elbv2")
        self.subnets = [s.id for s in choose_subnets(spec.subnets, lb.scheme)]
        self.groups = list(spec.security_group_ids)
        self.tags = ctx.tags(ROLE_APISERVER, lb.name)

    def run(self) -> tuple[Any, Any]:
        state = self.state
        if state is not None:
            d = state.description
            _check_identity(self.lb, d.get("VpcId"), d.get("Scheme"), self.spec.vpc_id)
        before = _v2_summary(self.lb, state) if state else None
        if state is None:
            refuse_type_change(self.ctx, self.lb)
            state = self._create()
            self._modify_attributes(state, lb_attributes(self.lb), "created")
        elif not state.managed:
            return before, before
        else:
            self._converge_lb(state)
        self._wait_active(state)
        self._converge_listeners(state)
        return before, _v2_summary(self.lb, state)

    # load balancer -------------------------------------------------------------------------------------------
    def _create(self) -> V2State:
        name = self.lb.aws_name
        predicted = {
            "LoadBalancers": [
                {
                    "LoadBalancerArn": placeholder("lb", name),
                    "LoadBalancerName": name,
                    "DNSName": placeholder("dns", name),
                    "Scheme": self.lb.scheme,
                    "VpcId": self.spec.vpc_id,
                    "State": {"Code": "provisioning"},
                    "Type": "network",
                    "AvailabilityZones": [{"SubnetId": s} for s in self.subnets],
                    "SecurityGroups": self.groups,
                }
            ]
        }
        created = self.ctx.ops.call(
            self.client,
            "create_load_balancer",
            resource=name,
            reason="missing",
            predicted=predicted,
            Name=name,
            Type="network",
            Scheme=self.lb.scheme,
            Subnets=self.subnets,
            SecurityGroups=self.groups,
            Tags=dict_to_tags(self.tags),
        )
        description = created["LoadBalancers"][0]
        return V2State(description=description, managed=True, tags={description["LoadBalancerArn"]: self.tags})

    def _wait_active(self, state: V2State) -> None:
        """CAPA waits for ``active`` before it adds target groups and listeners (LoadBalancerAvailable)."""
        if self.ctx.check_mode or not self.ctx.wait or _state_code(state.description) == "active":
            return

        state.description = wait_until(
            lambda: _elbv2.describe_load_balancer(self.ctx, state.arn),
            lambda d: d is not None and _state_code(d) == "active",
            self.ctx,
            f"load balancer {self.lb.aws_name} to become active",
            delay=10.0,
            failed=_activation_failure,
        )

    def _converge_lb(self, state: V2State) -> None:
        name, arn = self.lb.aws_name, state.arn
        drift = attribute_drift(state.attributes, lb_attributes(self.lb))
        if drift:
            self._modify_attributes(state, drift, f"attributes differ: {', '.join(sorted(drift))}")
        self._ensure_tags(state, arn, name)
        current_subnets = [z["SubnetId"] for z in state.description.get("AvailabilityZones") or [] if z.get("SubnetId")]
        remove, add = set_drift(current_subnets, self.subnets)
        if remove or add:
            self.ctx.ops.call(
                self.client,
                "set_subnets",
                resource=name,
                reason=f"subnets differ (+{add} -{remove})",
                LoadBalancerArn=arn,
                Subnets=self.subnets,
            )
            state.description["AvailabilityZones"] = [{"SubnetId": s} for s in self.subnets]
        remove, add = set_drift(state.description.get("SecurityGroups") or [], self.groups)
        if remove or add:
            self.ctx.ops.call(
                self.client,
                "set_security_groups",
                resource=name,
                reason=f"security groups differ (+{add} -{remove})",
                LoadBalancerArn=arn,
                SecurityGroups=self.groups,
            )
            state.description["SecurityGroups"] = self.groups

    def _modify_attributes(self, state: V2State, values: Mapping[str, str], reason: str) -> None:
        self.ctx.ops.call(
            self.client,
            "modify_load_balancer_attributes",
            resource=self.lb.aws_name,
            reason=reason,
            LoadBalancerArn=state.arn,
            Attributes=as_attributes(values),
        )
        state.attributes.update(values)

    def _ensure_tags(self, state: V2State, arn: str, label: str) -> None:
        repair_tags(self.ctx, "elbv2", arn, label, state.tags.get(arn, {}), self.tags)

    # target groups and listeners -----------------------------------------------------------------------------
    def _converge_listeners(self, state: V2State) -> None:
        used_groups: list[str] = []
        used_listeners: list[str] = []
        for listener in self.lb.listeners:
            group = match_target_group(state.target_groups, listener, taken=used_groups)
            if group is None:
                group = self._create_target_group(state, listener)
            else:
                self._converge_target_group(state, group, listener)
            used_groups.append(group["TargetGroupArn"])
            used_listeners.append(self._ensure_listener(state, listener, group["TargetGroupArn"]))
        self._delete_unused(state, used_listeners, used_groups)

    def _create_target_group(self, state: V2State, listener: Listener) -> dict[str, Any]:
        name = target_group_name(listener.prefix)
        check = target_group_health_check(self.lb, listener)
        created = self.ctx.ops.call(
            self.client,
            "create_target_group",
            resource=f"{self.lb.aws_name}/{name}",
            reason=f"missing for listener {listener.port}",
            predicted={
                "TargetGroups": [
                    {
                        "TargetGroupArn": placeholder("tg", name),
                        "TargetGroupName": name,
                        "Port": listener.target_port,
                        "Protocol": listener.protocol,
                        **check,
                    }
                ]
            },
            Name=name,
            Protocol=listener.protocol,
            Port=listener.target_port,
            VpcId=self.spec.vpc_id,
            TargetType="instance",
            HealthCheckEnabled=True,
            Tags=dict_to_tags(self.tags),
            **check,
        )
        group = created["TargetGroups"][0]
        state.target_groups.append(group)
        state.tags[group["TargetGroupArn"]] = dict(self.tags)
        desired = target_group_attributes(self.lb)
        self._modify_target_group_attributes(group, desired, "created")
        state.target_group_attributes[group["TargetGroupArn"]] = dict(desired)
        return group

    def _converge_target_group(self, state: V2State, group: dict[str, Any], listener: Listener) -> None:
        arn, label = group["TargetGroupArn"], f"{self.lb.aws_name}/{group['TargetGroupName']}"
        desired_check = target_group_health_check(self.lb, listener)
        drift = health_check_drift(group, desired_check)
        if drift:
            self.ctx.ops.call(
                self.client,
                "modify_target_group",
                resource=label,
                reason=f"health check differs: {', '.join(drift)}",
                TargetGroupArn=arn,
                **desired_check,
            )
            group.update(desired_check)
        attributes = state.target_group_attributes.setdefault(arn, {})
        drift_attributes = attribute_drift(attributes, target_group_attributes(self.lb))
        if drift_attributes:
            self._modify_target_group_attributes(
                group, drift_attributes, f"attributes differ: {', '.join(sorted(drift_attributes))}"
            )
            attributes.update(drift_attributes)
        self._ensure_tags(state, arn, label)

    def _modify_target_group_attributes(self, group: Mapping[str, Any], values: Mapping[str, str], reason: str) -> None:
        self.ctx.ops.call(
            self.client,
            "modify_target_group_attributes",
            resource=f"{self.lb.aws_name}/{group['TargetGroupName']}",
            reason=reason,
            TargetGroupArn=group["TargetGroupArn"],
            Attributes=as_attributes(values),
        )

    def _ensure_listener(self, state: V2State, listener: Listener, group_arn: str) -> str:
        label = f"{self.lb.aws_name}:{listener.port}"
        actions = [{"Type": "forward", "TargetGroupArn": group_arn}]
        current = match_listener(state.listeners, listener)
        if current is None:
            created = self.ctx.ops.call(
                self.client,
                "create_listener",
                resource=label,
                reason="missing",
                predicted={"Listeners": [{"ListenerArn": placeholder("listener", label), "Port": listener.port}]},
                LoadBalancerArn=state.arn,
                Protocol="TCP",
                Port=listener.port,
                DefaultActions=actions,
                Tags=dict_to_tags(self.tags),
            )
            current = {**created["Listeners"][0], "Protocol": "TCP", "DefaultActions": actions}
            state.listeners.append(current)
            state.tags[current["ListenerArn"]] = dict(self.tags)
            return current["ListenerArn"]
        if forwards_to(current) != group_arn:
            self.ctx.ops.call(
                self.client,
                "modify_listener",
                resource=label,
                reason="forwards to another target group",
                ListenerArn=current["ListenerArn"],
                DefaultActions=actions,
            )
            current["DefaultActions"] = actions
        self._ensure_tags(state, current["ListenerArn"], label)
        return current["ListenerArn"]

    def _delete_unused(self, state: V2State, listeners: list[str], groups: list[str]) -> None:
        """Listeners and target groups of ours the spec no longer has (an additional listener removed)."""
        for current in list(state.listeners):
            if current["ListenerArn"] not in listeners:
                self.ctx.ops.call(
                    self.client,
                    "delete_listener",
                    resource=f"{self.lb.aws_name}:{current.get('Port')}",
                    reason="listener not in the spec",
                    ListenerArn=current["ListenerArn"],
                )
                state.listeners.remove(current)
        for group in _own_target_groups(state):
            if group["TargetGroupArn"] not in groups and is_owned(
                state.tags.get(group["TargetGroupArn"]), self.ctx.cluster
            ):
                self.ctx.ops.call(
                    self.client,
                    "delete_target_group",
                    resource=f"{self.lb.aws_name}/{group['TargetGroupName']}",
                    reason="target group not in the spec",
                    TargetGroupArn=group["TargetGroupArn"],
                )
                state.target_groups.remove(group)


def _state_code(description: Mapping[str, Any]) -> str | None:
    return (description.get("State") or {}).get("Code")


def _activation_failure(description: Mapping[str, Any] | None) -> str | None:
    if description is None:
        return "it no longer exists"
    return (description.get("State") or {}).get("Reason") if _state_code(description) == "failed" else None


def _v2_summary(lb: LbSpec, state: V2State) -> dict[str, Any]:
    d = state.description
    api = next((g for g in state.target_groups if g["TargetGroupName"].startswith(TARGET_GROUP_PREFIXES[0])), None)
    lb_type = {"network": NLB, "application": "alb", "gateway": "gateway"}.get(d.get("Type", "network"), NLB)
    return {
        "type": lb_type,
        "name": d["LoadBalancerName"],
        "arn": d["LoadBalancerArn"],
        "dns_name": d.get("DNSName"),
        "scheme": d.get("Scheme"),
        "port": lb.api_server_port,
        "managed": state.managed,
        "state": _state_code(d),
        "subnets": sorted(z["SubnetId"] for z in d.get("AvailabilityZones") or [] if z.get("SubnetId")),
        "security_groups": sorted(d.get("SecurityGroups") or []),
        # The API server's target group first, then by port: stable however AWS orders them.
        "target_group_arns": [
            g["TargetGroupArn"]
            for g in sorted(
                state.target_groups, key=lambda g: (g is not api, int(g.get("Port") or 0), g["TargetGroupName"])
            )
        ],
        "health_check": (
            {
                "protocol": api.get("HealthCheckProtocol"),
                "port": api.get("HealthCheckPort"),
                "path": api.get("HealthCheckPath"),
                "interval": api.get("HealthCheckIntervalSeconds"),
                "timeout": api.get("HealthCheckTimeoutSeconds"),
                "healthy_threshold": api.get("HealthyThresholdCount"),
                "unhealthy_threshold": api.get("UnhealthyThresholdCount"),
            }
            if api
            else None
        ),
    }


# absent ----------------------------------------------------------------------------------------------------------
class _Deletion:
    """Deletes the cluster's load balancers (owned ones only) and the classic ELBs its cloud provider made."""

    def __init__(self, ctx: Context, spec: ElbSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.elb = ctx.client("elb")
        self.elbv2 = ctx.client("elbv2")

    def run(self) -> tuple[Any, Any]:
        classic = self._classic_to_delete()
        nlbs = [lb for lb in self.spec.load_balancers if lb.type == NLB]
        found = _elbv2.describe_load_balancers_by_name(self.ctx, [lb.aws_name for lb in nlbs]) if nlbs else {}
        states = _V2Observer(self.ctx).observe(found, managed_only=True) if found else {}
        by_name = {lb.name: lb for lb in self.spec.load_balancers}
        before = {
            "classic": sorted(d["LoadBalancerName"] for d in classic),
            "nlb": sorted(name for name, s in states.items() if s.managed),
        }
        for description in classic:
            self.ctx.ops.call(
                self.elb,
                "delete_load_balancer",
                resource=description["LoadBalancerName"],
                reason="cluster deleted",
                LoadBalancerName=description["LoadBalancerName"],
            )
        for name, state in states.items():
            if state.managed:
                self._delete_v2(by_name[name], state)
        self._wait_gone(classic, [s for s in states.values() if s.managed])
        after = {
            "load_balancer": None,
            "secondary_load_balancer": None,
            "endpoint": None,
            "conditions": Conditions(False, "Deleted").as_dict(),
        }
        return before, after

    def _classic_to_delete(self) -> list[dict[str, Any]]:
        """The owned primary classic ELB and every classic ELB tagged ``kubernetes.io/cluster/<cluster>=owned``.

        The Resource Groups Tagging API would find the second kind in one request, but it does not list classic
        ELBs everywhere (moto, air-gapped partitions); DescribeLoadBalancers and DescribeTags in chunks of 20 (the
        API's limit) is CAPA's fallback and works everywhere.
        """
        everything = _elb.describe_load_balancers(self.ctx)
        tags = _elb.describe_tags(self.ctx, [d["LoadBalancerName"] for d in everything])
        primary = self.spec.primary
        keep = primary.name if primary.type == EXTERNAL else None
        provider_key = cloud_provider_tag_key(self.ctx.cluster)
        doomed = []
        for description in everything:
            name = description["LoadBalancerName"]
            own = tags.get(name, {})
            ours = name == primary.name and primary.type == CLASSIC and is_owned(own, self.ctx.cluster)
            if name != keep and (ours or own.get(provider_key) == OWNED):
                doomed.append(description)
        return doomed

    def _delete_v2(self, lb: LbSpec, state: V2State) -> None:
        # Listeners first, explicitly: a target group cannot be deleted while a listener forwards to it
        # (ResourceInUse). Then the load balancer (AWS would remove listeners with it, but any we had not seen
        # would keep our target groups in use), and the target groups last, when nothing can use them any more.
        for listener in state.listeners:
            self.ctx.ops.call(
                self.elbv2,
                "delete_listener",
                resource=f"{lb.aws_name}:{listener.get('Port')}",
                reason="cluster deleted",
                ListenerArn=listener["ListenerArn"],
            )
        self.ctx.ops.call(
            self.elbv2,
            "delete_load_balancer",
            resource=lb.aws_name,
            reason="cluster deleted",
            LoadBalancerArn=state.arn,
        )
        for group in state.target_groups:
            if not is_owned(state.tags.get(group["TargetGroupArn"]), self.ctx.cluster):
                continue
            label = f"{lb.aws_name}/{group['TargetGroupName']}"
            # AWS may answer ResourceInUse for a moment after the listeners using the group are gone.
            delete_when_free(
                self.ctx,
                functools.partial(
                    missing_as_none,
                    self.ctx.ops.call,
                    self.elbv2,
                    "delete_target_group",
                    resource=label,
                    reason="cluster deleted",
                    TargetGroupArn=group["TargetGroupArn"],
                ),
                f"target group {label}",
                blockers=finder(self.ctx, target_group_arn=group["TargetGroupArn"]),
            )

    def _wait_gone(self, classic: list[dict[str, Any]], v2: list[V2State]) -> None:
        if self.ctx.check_mode or not self.ctx.wait:
            return
        for description in classic:
            name = description["LoadBalancerName"]
            wait_until(
                functools.partial(_elb.describe_load_balancer, self.ctx, name),
                lambda d: d is None,
                self.ctx,
                f"{name} deleted",
            )
        for state in v2:
            name = state.description["LoadBalancerName"]
            wait_until(
                functools.partial(_elbv2.describe_load_balancers_by_name, self.ctx, [name]),
                lambda d: not d,
                self.ctx,
                f"{name} deleted",
            )


def module_argument_spec() -> dict[str, Any]:
    """capa_elb's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        vpc_id=dict(type="str"),
        subnets=dict(type="list", elements="dict", default=[]),
        security_group_ids=dict(type="list", elements="str", default=[]),
        type=dict(type="str", default=plan.CLASSIC, choices=list(plan.TYPES)),
        scheme=dict(type="str", default=plan.INTERNET_FACING, choices=list(plan.SCHEMES)),
        name=dict(type="str"),
        health_check_protocol=dict(type="str", default="TCP", choices=list(plan.HEALTH_CHECK_PROTOCOLS)),
        api_server_port=dict(type="int", default=6443),
        additional_listeners=dict(
            type="list",
            elements="dict",
            default=[],
            options=dict(port=dict(type="int", required=True), protocol=dict(type="str", default="TCP")),
        ),
        cross_zone_load_balancing=dict(type="bool", default=False),
        preserve_client_ip=dict(type="bool", default=False),
        secondary=dict(
            type="dict",
            options=dict(
                enabled=dict(type="bool", default=False),
                name=dict(type="str"),
                scheme=dict(type="str", default=plan.INTERNAL, choices=list(plan.SCHEMES)),
            ),
        ),
    )
