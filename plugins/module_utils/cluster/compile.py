# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster spec compiled into the parameters of every module call the roles make.

:func:`compile_steps` is pure: the typed cluster spec in, per role the parameters of each module call out, for the
spec's state (present: in CAPA's order; absent: what deletion needs). The CAPA rules live here, not in Jinja:

* the security groups per machine role (control plane ``node + lb + controlplane``, workers and pools
  ``node + lb``, EKS pools ``node-eks-additional`` + the EKS cluster group - CAPA's ``instances.go`` and
  ``launchtemplate.go``), the bastion's ``bastion`` group;
* which load balancers a control plane registers with (none when the load balancer is disabled), and where its
  API endpoint comes from (the load balancer's, or ``control_plane_endpoint`` when there is none);
* the fleet capacity mapping (target capacity = desired capacity, else min size; on-demand = the distribution's
  base; instance types = the overrides), the bootstrap type per pool (``eks`` on an EKS cluster, else ``kubeadm``),
  the Kubernetes version of pool nodes (the EKS minor, or the cluster's), the ssh key each machine inherits;
* the sections each kind has (no control plane or machine deployments on EKS, no EKS on a self-managed cluster).

What a step needs from an earlier one (a VPC id, the subnets, a security group id, the endpoint, the load
balancers) it names with a reference, ``{"$ref": "network.vpc.id"}``, which :func:`resolve` replaces with the
value once that output exists (the ``clusterapi.aws.capa_resolve`` filter, used by the roles). An ``optional``
reference that finds nothing is dropped (its key, or its list item); ``where`` keeps the list items that match.

The cluster's own values (``cluster_name``, ``region``, ``identity``, ``additional_tags``) are explicit
parameters of every step, so they beat a play's ``module_defaults`` while everything the spec does not set
(``profile``, ``endpoint_url``, ``aws_config``, ``wait_timeout``, ...) still comes from it.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from ..network.elb_plan import generate_lb_name
from .cluster_spec import load, merge_kubernetes_api, plain, roles_for
from .cluster_types import (
    Bastion,
    ClusterSpec,
    ControlPlane,
    FargateProfile,
    IngressRule,
    MachineDeployment,
    MachinePool,
    NodeGroup,
)

REF = "$ref"
# The machine groups capa_cluster_info tells apart (its CONTROL_PLANE_GROUP / BASTION_GROUP; a unit test keeps them
# equal): not imported, so that capa_cluster_spec does not bundle the whole status reader.
CONTROL_PLANE_GROUP = "control-plane"
BASTION_GROUP = "bastion"
PRESENT, ABSENT = "present", "absent"
# CAPA's security groups per kind of machine (pkg/cloud/services/ec2/instances.go, launchtemplate.go).
CONTROL_PLANE_GROUPS = ("node", "lb", "controlplane")
WORKER_GROUPS = ("node", "lb")
EKS_POOL_GROUP = "node-eks-additional"


class UnresolvedReference(Exception):
    """A reference names an output that does not exist (yet)."""


# references ----------------------------------------------------------------------------------------------------------
def ref(path: str, optional: bool = False, where: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A parameter value taken from an earlier step's output: ``<output>.<key>.<key>...``."""
    marker: dict[str, Any] = {REF: path}
    if optional:
        marker["optional"] = True
    if where:
        marker["where"] = dict(where)
    return marker


def is_ref(value: Any) -> bool:
    return isinstance(value, Mapping) and REF in value


_DROP = object()


def resolve(value: Any, outputs: Mapping[str, Any]) -> Any:
    """``value`` with every reference replaced by the output it names. Raises UnresolvedReference."""
    resolved = _resolve(value, outputs)
    return None if resolved is _DROP else resolved


def _resolve(value: Any, outputs: Mapping[str, Any]) -> Any:
    if is_ref(value):
        return _lookup(value, outputs)
    if isinstance(value, Mapping):
        items = {key: _resolve(item, outputs) for key, item in value.items()}
        return {key: item for key, item in items.items() if item is not _DROP}
    if isinstance(value, (list, tuple)):
        return [item for item in (_resolve(element, outputs) for element in value) if item is not _DROP]
    return value


def _lookup(marker: Mapping[str, Any], outputs: Mapping[str, Any]) -> Any:
    path = str(marker[REF])
    found: Any = outputs
    for key in path.split("."):
        if isinstance(found, Mapping) and key in found and found[key] is not None:
            found = found[key]
        elif marker.get("optional"):
            return _DROP
        else:
            raise UnresolvedReference(f"{path}: the earlier output it names has no '{key}' ({_known(found)})")
    if marker.get("where"):
        found = [item for item in found if all(item.get(k) == v for k, v in marker["where"].items())]
    if marker.get("optional") and found in ("", [], {}):
        return _DROP
    return found


def _known(found: Any) -> str:
    if isinstance(found, Mapping):
        return "it has " + (", ".join(sorted(map(str, found))) or "nothing")
    return f"it is {type(found).__name__}"


def unresolved(value: Any) -> list[str]:
    """The paths of the references left in ``value``."""
    if is_ref(value):
        return [str(value[REF])]
    if isinstance(value, Mapping):
        return [path for item in value.values() for path in unresolved(item)]
    if isinstance(value, (list, tuple)):
        return [path for item in value for path in unresolved(item)]
    return []


def prune(value: Any) -> Any:
    """Parameters without their unset (``None``) keys: a module then applies its own default, as if omitted."""
    if isinstance(value, Mapping) and not is_ref(value):
        return {key: prune(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple)):
        return [prune(item) for item in value]
    return value


# the steps -----------------------------------------------------------------------------------------------------------
def compile_steps(spec: ClusterSpec, output_dir: str) -> dict[str, Any]:
    """Every module call of the cluster's roles for ``spec.state``. ``output_dir``: absolute, or ``""`` (none).

    Sections a kind does not have are ``None``.
    """
    unmanaged = spec.kind == "unmanaged"
    sections: dict[str, Any] = {
        # Reads only, before the first change: what the spec needs from the account (capa_preflight).
        "preflight": common(spec, spec=plain(spec)) if spec.state == PRESENT else None,
        "network": network_steps(spec),
        "bastion": {"instance": bastion_params(spec)},
        "control_plane": control_plane_steps(spec, output_dir) if unmanaged else None,
        # Both kinds: an eks cluster has no machine deployments (the spec refuses them), but deleting one still
        # removes every worker group capa_cluster_info finds.
        "machine_deployment": machine_deployment_steps(spec),
        "machine_pool": machine_pool_steps(spec),
        "eks_control_plane": {"cluster": eks_cluster_params(spec, output_dir)} if not unmanaged else None,
        "eks_node_groups": eks_node_group_steps(spec) if not unmanaged else None,
        # A cluster being deleted has no Nodes to read.
        "cluster_info": common(
            spec,
            spec=plain(spec),
            kubernetes_api=plain(spec.kubernetes_api) if spec.state == PRESENT else {"mode": "none"},
        ),
        "external_resources": (
            common(spec, state=ABSENT) if spec.state == ABSENT and spec.external_resource_gc else None
        ),
    }
    return {
        "cluster": spec.name,
        "kind": spec.kind,
        "region": spec.region,
        "state": spec.state,
        # Where the cluster's status.json goes; None: nowhere (capa_output_dir "").
        "output_dir": f"{output_dir}/{spec.name}" if output_dir else None,
        **{name: None if section is None else prune(section) for name, section in sections.items()},
    }


def common(cluster: ClusterSpec, **params: Any) -> dict[str, Any]:
    """What every module of the cluster takes from the spec; the rest of a group's module_defaults still applies."""
    return {
        "cluster_name": cluster.name,
        "region": cluster.region,
        "identity": plain(cluster.identity),
        "additional_tags": dict(cluster.additional_tags) or None,
        "wait_timeout": cluster.wait_timeout,
        **params,
    }


def _group_ids(roles: Sequence[str]) -> list[dict[str, Any]]:
    return [ref(f"network.security_groups.{role}.id") for role in roles]


def _rules(rules: Sequence[IngressRule]) -> list[dict[str, Any]]:
    return [plain(rule) for rule in rules]


# network ---------------------------------------------------------------------------------------------------------
def network_steps(spec: ClusterSpec) -> dict[str, Any]:
    network = spec.network
    byo_vpc = network.vpc.id
    if spec.state == ABSENT:
        return {
            "security_group": common(
                spec,
                state=ABSENT,
                vpc_id=byo_vpc,
                kind=spec.kind,
                security_group_overrides=dict(network.security_group_overrides),
            ),
            "subnet": common(spec, state=ABSENT, vpc_id=byo_vpc, subnets=plain(network.subnets)),
            "vpc": common(spec, state=ABSENT, id=byo_vpc),
        }
    balancer = spec.control_plane_load_balancer
    return {
        "vpc": common(
            spec,
            id=byo_vpc,
            cidr_block=network.vpc.cidr_block,
            secondary_cidr_blocks=list(network.vpc.secondary_cidr_blocks),
        ),
        "subnet": common(
            spec,
            vpc_id=ref("vpc.vpc.id"),
            vpc_cidr_block=ref("vpc.vpc.cidr_block"),
            internet_gateway_id=ref("vpc.vpc.internet_gateway_id", optional=True),
            subnets=plain(network.subnets),
            availability_zone_usage_limit=network.vpc.availability_zone_usage_limit,
            availability_zone_selection=network.vpc.availability_zone_selection,
            nat_gateways=network.nat_gateways,
        ),
        "security_group": common(
            spec,
            vpc_id=ref("vpc.vpc.id"),
            vpc_cidr_block=ref("vpc.vpc.cidr_block"),
            kind=spec.kind,
            bastion={"enabled": spec.bastion.enabled, "allowed_cidr_blocks": list(spec.bastion.allowed_cidr_blocks)},
            cni_ingress_rules=network.cni_ingress_rules,
            additional_control_plane_ingress_rules=_rules(network.additional_control_plane_ingress_rules),
            additional_node_ingress_rules=_rules(network.additional_node_ingress_rules),
            node_port_ingress_cidr_blocks=list(network.node_port_ingress_cidr_blocks),
            control_plane_load_balancer={
                "type": balancer.type,
                "scheme": balancer.scheme,
                "ingress_rules": _rules(balancer.ingress_rules),
                "additional_listeners": plain(balancer.additional_listeners),
                "preserve_client_ip": balancer.preserve_client_ip,
            },
            nat_gateway_ips=ref("subnet.nat_gateway_ips"),
            security_group_overrides=dict(network.security_group_overrides),
        ),
    }


# machines --------------------------------------------------------------------------------------------------------
def _ssh_key(spec: ClusterSpec, own: str | None) -> str | None:
    """A machine's own key, else the cluster's."""
    return own or spec.ssh_key_name


def _machine(spec: ClusterSpec, machine: ControlPlane | MachineDeployment | MachinePool) -> dict[str, Any]:
    """The machine fields every group and pool passes as they are (no tenancy or placement group for pools)."""
    params = {
        "ami": plain(machine.ami),
        "instance_type": machine.instance_type,
        "root_volume": plain(machine.root_volume),
        "ssh_key_name": _ssh_key(spec, machine.ssh_key_name),
        "iam_instance_profile": machine.iam_instance_profile,
        "spot_market_options": plain(machine.spot_market_options),
        "imds": plain(machine.imds),
    }
    if not isinstance(machine, MachinePool):
        params.update(tenancy=machine.tenancy, placement_group_name=machine.placement_group_name)
    return params


def _kubeadm_bootstrap(endpoint: Mapping[str, Any], backend: str, token_ttl: int) -> dict[str, Any]:
    return {
        "type": "kubeadm",
        "endpoint_host": endpoint["host"],
        "endpoint_port": endpoint["port"],
        "backend": backend,
        "token_ttl": token_ttl,
    }


def bastion_params(spec: ClusterSpec) -> dict[str, Any]:
    """The bastion: in the first public subnet with only the bastion group; removed when not enabled."""
    bastion: Bastion = spec.bastion
    wanted = spec.state == PRESENT and bastion.enabled
    return common(
        spec,
        state=PRESENT if wanted else ABSENT,
        name=BASTION_GROUP,
        role="bastion",
        replicas=1,
        subnets=ref("network.subnets") if wanted else [],
        public_ip=True,
        instance_type=bastion.instance_type,
        ami={"id": bastion.ami_id},
        ssh_key_name=_ssh_key(spec, bastion.ssh_key_name),
        security_group_ids=_group_ids(("bastion",)) if wanted else [],
        bootstrap={"type": "none"},
    )


def control_plane_endpoint(spec: ClusterSpec) -> Any:
    """The load balancer's endpoint, or the one the spec gives when there is none (type disabled)."""
    if spec.control_plane_load_balancer.type == "disabled":
        return plain(spec.control_plane_endpoint)
    return ref("elb.endpoint")


def _endpoint_parts(endpoint: Any) -> dict[str, Any]:
    if is_ref(endpoint):
        return {"host": ref(endpoint[REF] + ".host"), "port": ref(endpoint[REF] + ".port")}
    return dict(endpoint)


def control_plane_steps(spec: ClusterSpec, output_dir: str) -> dict[str, Any]:
    balancer = spec.control_plane_load_balancer
    external = balancer.type == "external"
    if spec.state == ABSENT:
        # A load balancer the cluster does not own outlives it: the machines leave it before they go.
        return {
            "external_lb": common(spec, type="external", name=balancer.name, subnets=[]) if external else None,
            "instance": common(
                spec,
                state=ABSENT,
                name=CONTROL_PLANE_GROUP,
                role="control-plane",
                load_balancers=[ref("external_lb.load_balancer")] if external else [],
                cluster_deletion=True,
            ),
            "elb": common(spec, state=ABSENT, type=balancer.type, name=balancer.name),
            "kubeadm": common(spec, state=ABSENT, output_dir=output_dir),
            # The snapshots outlive the cluster unless the spec says otherwise (a restore may still need them).
            "etcd_snapshot": (
                etcd_snapshot_params(spec, present=False)
                if spec.etcd_backup.enabled and spec.etcd_backup.delete_with_cluster
                else None
            ),
        }
    endpoint = control_plane_endpoint(spec)
    machines = spec.control_plane
    # Machines register with every load balancer capa_elb returns; a disabled one has none.
    registrations = (
        []
        if balancer.type == "disabled"
        else [ref("elb.load_balancer"), ref("elb.secondary_load_balancer", optional=True)]
    )
    return {
        "elb": common(
            spec,
            vpc_id=ref("network.vpc.id"),
            subnets=ref("network.subnets"),
            security_group_ids=_group_ids(("apiserver-lb",)),
            type=balancer.type,
            scheme=balancer.scheme,
            name=balancer.name,
            health_check_protocol=balancer.health_check_protocol,
            additional_listeners=plain(balancer.additional_listeners),
            cross_zone_load_balancing=balancer.cross_zone_load_balancing,
            preserve_client_ip=balancer.preserve_client_ip,
        ),
        "endpoint": endpoint,
        "kubeadm": common(spec, kubernetes_version=spec.kubernetes_version, endpoint=endpoint, output_dir=output_dir),
        "instance": common(
            spec,
            name=CONTROL_PLANE_GROUP,
            role="control-plane",
            replicas=machines.replicas,
            subnets=ref("network.subnets"),
            kubernetes_version=spec.kubernetes_version,
            **_machine(spec, machines),
            security_group_ids=_group_ids(CONTROL_PLANE_GROUPS) + list(machines.additional_security_group_ids),
            bootstrap=_kubeadm_bootstrap(
                _endpoint_parts(endpoint), machines.bootstrap_backend, spec.bootstrap_token_ttl
            ),
            load_balancers=registrations,
            rollout={"max_surge": machines.rollout.max_surge, "max_unavailable": 0},
            rollout_before_certificates_expiry_days=machines.rollout_before_certificates_expiry_days,
            **_health(machines),
            kubernetes_api=plain(spec.kubernetes_api),
            node_drain_timeout=machines.node_drain_timeout,
            node_volume_detach_timeout=machines.node_volume_detach_timeout,
        ),
        "addons": addons_params(spec, endpoint) if spec.addons.enabled else None,
        "etcd_snapshot": etcd_snapshot_params(spec, present=True) if spec.etcd_backup.enabled else None,
        # What playbooks/restore.yml picks a snapshot from.
        "etcd_snapshots": common(spec, bucket=spec.etcd_backup.bucket) if spec.etcd_backup.enabled else None,
    }


def etcd_snapshot_params(spec: ClusterSpec, present: bool) -> dict[str, Any]:
    """capa_etcd_snapshot: after the control plane in the role, and alone in playbooks/etcd_snapshot.yml - so the
    endpoint is named without a reference to another step's output: the load balancer by type and name (the
    module reads its DNS name), or the spec's own endpoint when there is none."""
    backup = spec.etcd_backup
    if not present:
        return common(spec, state=ABSENT, bucket=backup.bucket)
    balancer = spec.control_plane_load_balancer
    if balancer.type == "disabled":
        where: dict[str, Any] = {"endpoint": plain(spec.control_plane_endpoint)}
    else:
        name = balancer.name or generate_lb_name(spec.name)
        where = {"control_plane_load_balancer": {"type": balancer.type, "name": name}}
    return common(
        spec,
        bucket=backup.bucket,
        kms_key_id=backup.kms_key_id,
        retention_days=backup.retention_days,
        last_snapshot_min_age=backup.last_snapshot_min_age,
        kubernetes_api=plain(spec.kubernetes_api),
        **where,
    )


def addons_params(spec: ClusterSpec, endpoint: Any) -> dict[str, Any]:
    """capa_addons once the control plane serves: its CNI and cloud controller manager (ClusterResourceSet-style)."""
    return common(
        spec,
        kubernetes_version=spec.kubernetes_version,
        endpoint=_endpoint_parts(endpoint),
        kubernetes_api=plain(spec.kubernetes_api),
        cni=spec.addons.cni,
        cloud_controller_manager={"enabled": spec.addons.cloud_controller_manager},
        strategy=spec.addons.strategy,
    )


def _health(group: ControlPlane | MachineDeployment) -> dict[str, Any]:
    """capa_instance's health-check options (MachineHealthCheck's fields) as the section gives them."""
    return {
        "max_unhealthy": group.max_unhealthy,
        "unhealthy_range": group.unhealthy_range,
        "unhealthy_node_conditions": [plain(c) for c in group.unhealthy_node_conditions],
        "node_startup_timeout": group.node_startup_timeout,
    }


def machine_deployment_steps(spec: ClusterSpec) -> dict[str, Any]:
    deployments = spec.machine_deployments
    names = [deployment.name for deployment in deployments]
    if spec.state == ABSENT:
        # The whole cluster goes: its machines leave without a drain (Cluster API skips it on cluster deletion).
        leftover = common(spec, state=ABSENT, role="node", cluster_deletion=True)
        return {
            "instances": [{**leftover, "name": name} for name in names],
            "names": names,
            "leftover": leftover,
        }
    return {"instances": [_deployment(spec, deployment) for deployment in deployments], "names": names}


def _deployment(spec: ClusterSpec, deployment: MachineDeployment) -> dict[str, Any]:
    return common(
        spec,
        name=deployment.name,
        role="node",
        replicas=deployment.replicas,
        subnets=ref("network.subnets"),
        failure_domains=list(deployment.failure_domains),
        kubernetes_version=spec.kubernetes_version,
        **_machine(spec, deployment),
        security_group_ids=_group_ids(WORKER_GROUPS) + list(deployment.additional_security_group_ids),
        bootstrap=_kubeadm_bootstrap(
            _endpoint_parts(ref("control_plane.endpoint")), deployment.bootstrap_backend, spec.bootstrap_token_ttl
        ),
        rollout=plain(deployment.rollout),
        **_health(deployment),
        kubernetes_api=plain(spec.kubernetes_api),
        node_drain_timeout=deployment.node_drain_timeout,
        node_volume_detach_timeout=deployment.node_volume_detach_timeout,
        min_ready_seconds=deployment.min_ready_seconds,
    )


# machine pools ---------------------------------------------------------------------------------------------------
def machine_pool_steps(spec: ClusterSpec) -> dict[str, Any]:
    pools = spec.machine_pools
    asg = [pool for pool in pools if pool.kind == "asg"]
    fleet = [pool for pool in pools if pool.kind == "fleet"]
    if spec.state == ABSENT:
        leftover = common(spec, state=ABSENT)
        return {
            "asg": [{**leftover, "name": pool.name} for pool in asg],
            "fleet": [{**leftover, "name": pool.name} for pool in fleet],
            "names": [pool.name for pool in asg],
            "leftover": leftover,
        }
    return {
        "asg": [_asg(spec, pool) for pool in asg],
        "fleet": [_fleet(spec, pool) for pool in fleet],
        "names": [pool.name for pool in asg],
    }


def _pool(spec: ClusterSpec, pool: MachinePool) -> dict[str, Any]:
    """What an auto scaling group and a fleet pool both take: placement, machines, groups, bootstrap."""
    eks = spec.kind == "eks"
    if eks:
        groups = [
            ref(f"network.security_groups.{EKS_POOL_GROUP}.id"),
            ref("eks_control_plane.cluster.security_group_id", optional=True),
        ]
        bootstrap = {"type": "eks", "eks_cluster_name": spec.eks.name or spec.name}
    else:
        groups = _group_ids(WORKER_GROUPS)
        bootstrap = _kubeadm_bootstrap(
            _endpoint_parts(ref("control_plane.endpoint")), pool.bootstrap_backend, pool.bootstrap_token_ttl
        )
    return {
        "name": pool.name,
        "subnets": ref("network.subnets"),
        # Unset, not empty: the module then takes every private subnet's zone.
        "failure_domains": list(pool.failure_domains) or None,
        # Pool nodes run the control plane's version: EKS's major.minor, or the self-managed cluster's.
        "kubernetes_version": spec.eks.version if eks else spec.kubernetes_version,
        **_machine(spec, pool),
        "security_group_ids": groups + list(pool.additional_security_group_ids),
        "bootstrap": {**bootstrap, "backend": pool.bootstrap_backend},
        # kubeadm pools mint their join token through it; both kinds' Nodes are awaited through it.
        "kubernetes_api": plain(spec.kubernetes_api),
    }


def _asg(spec: ClusterSpec, pool: MachinePool) -> dict[str, Any]:
    return common(
        spec,
        **_pool(spec, pool),
        min_size=pool.min_size,
        max_size=pool.max_size,
        desired_capacity=pool.desired_capacity,
        externally_managed_replicas=pool.externally_managed_replicas,
        mixed_instances_policy=plain(pool.mixed_instances_policy),
        suspended_processes=list(pool.suspended_processes),
        capacity_rebalance=pool.capacity_rebalance,
        default_cooldown=pool.default_cooldown,
        default_instance_warmup=pool.default_instance_warmup,
        refresh_preferences=plain(pool.refresh_preferences),
        lifecycle_hooks=[],
        drain_on_scale_in=pool.drain_on_scale_in,
    )


def _fleet(spec: ClusterSpec, pool: MachinePool) -> dict[str, Any]:
    """A fleet of type maintain: its target is the pool's desired capacity (else min size), the distribution's
    on-demand base is its on-demand target, the overrides are its instance types."""
    params = _pool(spec, pool)
    del params["spot_market_options"]
    policy = pool.mixed_instances_policy
    distribution = policy.instances_distribution if policy else None
    return common(
        spec,
        **params,
        total_target_capacity=pool.desired_capacity if pool.desired_capacity is not None else pool.min_size,
        on_demand_target_capacity=distribution.on_demand_base_capacity if distribution else 0,
        instance_types=[override.instance_type for override in policy.overrides] if policy else [],
        spot_allocation_strategy=distribution.spot_allocation_strategy if distribution else None,
    )


# EKS ---------------------------------------------------------------------------------------------------------------
def eks_name(spec: ClusterSpec) -> str:
    return spec.eks.name or spec.name


def eks_cluster_params(spec: ClusterSpec, output_dir: str) -> dict[str, Any]:
    eks = spec.eks
    wanted = spec.state == PRESENT
    return common(
        spec,
        state=spec.state,
        name=eks.name,
        version=eks.version,
        role_arn=eks.role_arn,
        role_name=eks.role_name,
        subnets=ref("network.subnets") if wanted else [],
        restrict_private_subnets=eks.restrict_private_subnets,
        security_group_ids=_group_ids((EKS_POOL_GROUP,)) if wanted else [],
        endpoint_access=plain(eks.endpoint_access),
        logging=plain(eks.logging),
        # Encryption can be added, never changed or removed: without a provider the module is not told about it.
        encryption_config=plain(eks.encryption_config) if eks.encryption_config.provider else None,
        access_config=plain(eks.access_config),
        addons=plain(eks.addons),
        associate_oidc_provider=eks.associate_oidc_provider,
        oidc_thumbprint=eks.oidc_thumbprint,
        iam_authenticator=plain(eks.iam_authenticator),
        # CAPA maps the instance profile of every machine pool of an EKS cluster: their nodes join as its role.
        node_instance_profiles=(
            _unique(p.iam_instance_profile for p in spec.machine_pools if p.iam_instance_profile) if wanted else []
        ),
        output_dir=output_dir,
        kubernetes_api=plain(spec.kubernetes_api) if wanted else None,
    )


def eks_node_group_steps(spec: ClusterSpec) -> dict[str, Any]:
    eks = spec.eks
    if spec.state == ABSENT:
        # Fargate profiles and node groups go before the control plane (EKS refuses to delete a cluster that has them).
        gone = common(spec, state=ABSENT, eks_cluster_name=eks_name(spec))
        return {
            "fargate_profiles": [{**gone, "name": profile.name} for profile in eks.fargate_profiles],
            "node_groups": [{**gone, "name": group.name} for group in eks.node_groups],
        }
    return {
        "node_groups": [_node_group(spec, group) for group in eks.node_groups],
        "fargate_profiles": [_fargate_profile(spec, profile) for profile in eks.fargate_profiles],
    }


def _node_group(spec: ClusterSpec, group: NodeGroup) -> dict[str, Any]:
    return common(
        spec,
        name=group.name,
        eks_cluster_name=eks_name(spec),
        version=group.version,
        release_version=group.release_version,
        scaling=plain(group.scaling),
        externally_managed_replicas=group.externally_managed_replicas,
        instance_types=list(group.instance_types),
        capacity_type=group.capacity_type,
        ami_type=group.ami_type,
        disk_size=group.disk_size,
        labels=dict(group.labels),
        taints=plain(group.taints),
        update_config=plain(group.update_config),
        node_role_arn=group.node_role_arn,
        subnets=ref("network.subnets"),
        tags=dict(group.tags),
        # The node group's Nodes are awaited through the cluster's API after it was created or resized.
        kubernetes_api=plain(spec.kubernetes_api),
    )


def _fargate_profile(spec: ClusterSpec, profile: FargateProfile) -> dict[str, Any]:
    return common(
        spec,
        name=profile.name,
        eks_cluster_name=eks_name(spec),
        pod_execution_role_arn=profile.pod_execution_role_arn,
        # Fargate runs pods in private subnets only.
        subnets=ref("network.subnets", where={"is_public": False}),
        selectors=plain(profile.selectors),
        tags=dict(profile.tags),
    )


# deletion of what the spec no longer lists -------------------------------------------------------------------------
def leftover_groups(resources: Mapping[str, Any]) -> dict[str, list[str]]:
    """The worker groups and auto scaling group pools ``capa_cluster_info`` found, by the role that deletes them.

    Machines launched by ``capa_instance`` are machine deployments unless they are the control plane or the
    bastion; machines of an auto scaling group name their pool.
    """
    instances = resources.get("instance") or []
    machine_groups = [i.get("group") for i in instances if i.get("launched_by") == "machine"]
    pools = [i.get("pool") for i in instances if i.get("launched_by") == "asg"]
    return {
        "machine_deployment": _unique(g for g in machine_groups if g and g not in (CONTROL_PLANE_GROUP, BASTION_GROUP)),
        "machine_pool": _unique(p for p in pools if p),
    }


def _unique(names: Any) -> list[str]:
    return list(dict.fromkeys(names))


# what capa_cluster_spec returns ------------------------------------------------------------------------------------
def compile_cluster(
    cluster: Mapping[str, Any],
    default_region: str | None,
    state: str | None = None,
    output_dir: str = ".capa",
    kubernetes_api: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``capa_cluster_spec``'s result for a ``cluster`` the argument spec validated. Raises SpecError.

    ``state`` overrides the spec's (delete.yml deletes a cluster whose spec says present); ``output_dir`` is taken
    from the current directory, ``""`` meaning no local file; ``kubernetes_api`` is the controller's setting, for
    the keys the spec leaves unset.
    """
    settings = merge_kubernetes_api(cluster.get("kubernetes_api"), kubernetes_api)
    spec = load({**cluster, "state": state or cluster["state"], "kubernetes_api": settings}, default_region)
    return {
        "cluster": plain(spec),
        "steps": compile_steps(spec, os.path.realpath(output_dir) if output_dir else ""),
        "security_group_roles": list(roles_for(spec.kind)),
    }
