# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster spec users write (``capa_cluster``), declared once.

``CLUSTER_OPTIONS`` declares every field once, as :class:`~..kernel.options.Option` values (name, type, default,
choices, description, ``comparison``, ``immutable``). Derived from it:

* the argument spec ``capa_cluster_spec`` validates against (:func:`argument_spec`);
* the module's DOCUMENTATION and the typed cluster spec, the dataclasses of ``cluster_types.py`` (both written by
  ``tools/gen_specs.py``, since ansible-doc and a type checker read static text; a unit test fails when they drift).

One spelling of "unset": ``None``. A field without a default is ``None`` when not written, and an empty string
written for such a field means the same (:func:`normalise`), so nothing downstream tests for ``""``.

:func:`load` turns what the user wrote into the typed spec (argument-spec validation, then :func:`check_cluster`:
the checks an argument spec cannot express - CIDRs, AZs, names, cross-field rules - each naming the field, before
any AWS call).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import fields, is_dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from ..eks import nodegroup_plan
from ..eks.nodegroup_plan import check_scaling
from ..kernel import options as _options
from ..kernel.errors import SpecError
from ..kernel.options import Option, by_name
from ..kernel.validation import (
    check_availability_zone,
    check_availability_zones,
    check_cluster_name,
    check_port_range,
    check_resource_id,
    check_subnet_cidrs,
    check_tags,
    check_vpc_cidr,
    parse_cidr,
    parse_kubernetes_version,
)
from ..kubeadm import bootstrap_tokens as tokens
from ..kubeadm import etcd_snapshot
from ..machines import machine_spec as machine
from ..machines.asg_plan import PROCESSES as SUSPENDABLE_PROCESSES
from ..machines.asg_plan import check_pool_sizes
from ..machines.group_workload import NODE_OPTIONS
from ..machines.plan import (
    HEALTH_OPTIONS,
    MIN_CERTIFICATES_EXPIRY_DAYS,
    HealthCheck,
    check_replicas,
    check_rollout,
)
from ..network import vpc
from ..network.elb_plan import check_lb_name
from ..workload.access import KUBERNETES_API, KubernetesApiSettings
from .cluster_types import ClusterSpec, IngressRule, MachinePool

UNMANAGED_ROLES = ("bastion", "apiserver-lb", "lb", "controlplane", "node")
EKS_ROLES = ("bastion", "node-eks-additional")
EKS_VERSION = re.compile(r"^1\.\d{1,2}$")
# EBS root volume sizes AWS accepts for the types a root volume can have; below 8 GiB no CAPA image boots.
PROTOCOLS = ("tcp", "udp", "icmp", "-1", "4", "50", "58")
CNI_RULE_KEYS = frozenset(("description", "protocol", "from_port", "to_port"))
POOL_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def opt(name: str, description: str, type: str = "str", **settings: Any) -> Option:
    for key in ("choices", "options"):
        if key in settings and settings[key] is not None:
            settings[key] = tuple(settings[key])
    return Option(name=name, description=description, type=type, **settings)


def _rule_options() -> tuple[Option, ...]:
    return (
        opt("description", "What the rule is for (shown in AWS)."),
        opt("protocol", "IP protocol.", choices=PROTOCOLS, default="tcp"),
        opt("from_port", "First port (not for protocols -1, 4, 50).", type="int"),
        opt("to_port", "Last port (not for protocols -1, 4, 50).", type="int"),
        opt("cidr_blocks", "Source CIDR blocks.", type="list", elements="str", default=[], comparison="set"),
        opt(
            "source_security_group_ids",
            "Source security group ids.",
            type="list",
            elements="str",
            default=[],
            comparison="set",
        ),
        opt(
            "source_security_group_roles",
            "Source security groups by cluster role (bastion, apiserver-lb, lb, controlplane, node).",
            type="list",
            elements="str",
            default=[],
            comparison="set",
        ),
    )


def _role_identity_options(chained: bool) -> tuple[Option, ...]:
    options = [
        opt("role_arn", "ARN of the role to assume.", required=True),
        opt("external_id", "External id the role's trust policy requires.", no_log=False),
        opt("session_name", "Session name (default capa-<cluster>)."),
        opt("duration_seconds", "Lifetime of the credentials, 900 to 43200.", type="int", default=3600),
    ]
    if chained:
        options.append(
            opt(
                "source_identity",
                "A role assumed first, whose credentials assume role_arn.",
                type="dict",
                options=_role_identity_options(False),
            )
        )
    return tuple(options)


# ---------------------------------------------------------------------------------------------------------------
# Machine fields: machines/machine_spec.py declares them once (types, choices, defaults); the cluster spec takes
# them with its own wording, its two own spellings (additional_security_group_ids: added to the role's groups;
# bootstrap_backend: the type of bootstrap data follows from the role) and its documented defaults
# (_cluster_defaults: instance_type t3.large, root_volume.size 80).
# ---------------------------------------------------------------------------------------------------------------
MACHINE_OPTIONS: tuple[Option, ...] = (
    machine.INSTANCE_TYPE.but(description="Instance type."),
    machine.AMI.but(description="AMI or its lookup."),
    machine.ROOT_VOLUME.but(description="Root volume."),
    machine.SSH_KEY_NAME.but(description="SSH key pair name; unset means the cluster's ssh_key_name."),
    machine.IAM_INSTANCE_PROFILE.but(
        description="Instance profile of the machines; unset means none. clusterawsadm's are named "
        "control-plane.<suffix> and nodes.<suffix>, suffix cluster-api-provider-aws.sigs.k8s.io."
    ),
    machine.SECURITY_GROUP_IDS.but(
        name="additional_security_group_ids",
        description="Security groups added to the role's groups.",
        comparison="set",
    ),
    machine.TENANCY,
    machine.PLACEMENT_GROUP_NAME.but(description="Placement group."),
    machine.SPOT_MARKET_OPTIONS.but(description="Run on spot."),
    machine.IMDS.but(description="Instance metadata options (IMDSv2 required by default, safer than CAPA)."),
    opt(
        "bootstrap_backend",
        "Where bootstrap data waits for the machine.",
        choices=machine.BACKENDS,
        default=machine.SECRETS_MANAGER,
    ),
)


def _cluster_defaults(machine: Mapping[str, Option]) -> dict[str, Option]:
    """The machine fields with the defaults the cluster spec documents."""
    root_volume = machine["root_volume"]
    volume = by_name(root_volume.options or ())
    return {
        **machine,
        "instance_type": machine["instance_type"].but(default="t3.large"),
        "root_volume": root_volume.but(
            options=tuple({**volume, "size": volume["size"].but(description="Size in GiB.", default=80)}.values())
        ),
    }


_MACHINE = _cluster_defaults(by_name(MACHINE_OPTIONS))
# Machine pools have no tenancy or placement group (an auto scaling group or fleet places its instances).
POOL_EXCLUDED = ("tenancy", "placement_group_name")


def machine_fields(exclude: Iterable[str] = ()) -> tuple[Option, ...]:
    return tuple(option for name, option in _MACHINE.items() if name not in exclude)


# ---------------------------------------------------------------------------------------------------------------

# How a group's machines leave the cluster (Cluster API's Machine fields), declared once with capa_instance's.
_NODE = by_name(NODE_OPTIONS)
DRAIN_OPTIONS = (_NODE["node_drain_timeout"], _NODE["node_volume_detach_timeout"])

# kubernetes_api without defaults, in the cluster spec and as the controller's setting: how a controller reaches the
# API servers (a proxy, a mode) is often the controller's, not a cluster's, so a key the spec leaves unset takes the
# controller's value before the modules' defaults (merge_kubernetes_api).
CONTROLLER_SETTING = "capa_kubernetes_api"  # the roles' variable for capa_cluster_spec's kubernetes_api
CONTROLLER_KUBERNETES_API: tuple[Option, ...] = tuple(o.but(default=None) for o in KUBERNETES_API.options or ())

ADDON_OPTIONS: tuple[Option, ...] = (
    opt(
        "enabled",
        "Apply the addons (capa_addons) once the control plane serves: a CNI and the AWS cloud controller manager, "
        "recorded in kube-system/clusterapi-aws-addons (ClusterResourceSet-style). Needs the Kubernetes API "
        "(kubernetes_api).",
        type="bool",
        default=False,
    ),
    opt("cni", "The CNI: calico, or none (bring your own).", choices=("calico", "none"), default="calico"),
    opt("cloud_controller_manager", "Apply the AWS cloud controller manager.", type="bool", default=True),
    opt(
        "strategy",
        "ApplyOnce (a ClusterResourceSet's default) or Reconcile (apply again when the manifests change).",
        choices=("ApplyOnce", "Reconcile"),
        default="ApplyOnce",
    ),
)

ETCD_BACKUP_OPTIONS: tuple[Option, ...] = (
    opt(
        "enabled",
        "Snapshot etcd into an S3 bucket the cluster owns (capa_etcd_snapshot) on every run of the cluster role, "
        "when the newest snapshot is older than last_snapshot_min_age. Needs the Kubernetes API (kubernetes_api).",
        type="bool",
        default=False,
    ),
    opt("bucket", "The bucket (default <name>-etcd-snapshots-<account>-<region>)."),
    opt("kms_key_id", "The KMS key of the bucket and its snapshots (default the AWS managed key aws/s3)."),
    opt("retention_days", "Days a snapshot is kept (the bucket's lifecycle rule).", type="int", default=30),
    opt(
        "last_snapshot_min_age",
        "Minutes: a run takes a snapshot only when the newest is at least this old (0: every run).",
        type="int",
        default=15,
    ),
    opt(
        "delete_with_cluster",
        "Delete the bucket and every snapshot in it when the cluster is deleted (default: they outlive it).",
        type="bool",
        default=False,
    ),
)

NETWORK_OPTIONS: tuple[Option, ...] = (
    opt(
        "vpc",
        "The cluster VPC: managed (created and owned) unless id is given.",
        type="dict",
        default={},
        options=(
            *vpc.VPC_OPTIONS,
            opt("availability_zone_usage_limit", "How many AZs the default layout uses.", type="int", default=3),
            opt(
                "availability_zone_selection",
                "How AZs are picked: Ordered (alphabetical) or Random (stable per cluster).",
                choices=("Ordered", "Random"),
                default="Ordered",
            ),
        ),
    ),
    opt(
        "subnets",
        "Subnets; empty means CAPA's layout (a public and a private subnet per AZ, CIDRs carved from the VPC). "
        "Entries with only id are existing subnets (bring your own).",
        type="list",
        elements="dict",
        default=[],
        options=(
            opt("id", "An existing subnet to use."),
            opt("availability_zone", "AZ of a subnet to create.", immutable=True),
            opt("cidr_block", "CIDR block of a subnet to create.", immutable=True),
            opt("is_public", "Public (routes to the internet gateway) or private.", type="bool", default=False),
            opt("tags", "Extra tags for this subnet.", type="dict", default={}),
        ),
    ),
    opt(
        "nat_gateways",
        "NAT gateways: one per AZ (CAPA), a single one for the cluster, or none (private subnets have no egress).",
        choices=("per_az", "single", "none"),
        default="per_az",
    ),
    opt(
        "cni_ingress_rules",
        "CNI rules on the control-plane and node groups: calico (TCP 179 and IP-in-IP), none, or a list of rules "
        "with description, protocol, from_port and to_port.",
        type="raw",
        default="calico",
    ),
    opt(
        "security_group_overrides",
        "Role to an existing security group id to use instead (bring your own).",
        type="dict",
        default={},
    ),
    opt(
        "additional_control_plane_ingress_rules",
        "Extra ingress rules on the control-plane group.",
        type="list",
        elements="dict",
        default=[],
        options=_rule_options(),
    ),
    opt(
        "additional_node_ingress_rules",
        "Extra ingress rules on the node group.",
        type="list",
        elements="dict",
        default=[],
        options=_rule_options(),
    ),
    opt(
        "node_port_ingress_cidr_blocks",
        "Sources allowed to reach NodePort services.",
        type="list",
        elements="str",
        default=["0.0.0.0/0"],
        comparison="set",
    ),
)

BASTION_OPTIONS: tuple[Option, ...] = (
    opt("enabled", "Create a bastion in a public subnet.", type="bool", default=False),
    opt(
        "allowed_cidr_blocks",
        "Sources allowed to SSH to the bastion.",
        type="list",
        elements="str",
        default=["0.0.0.0/0"],
        comparison="set",
    ),
    _MACHINE["instance_type"].but(description="Instance type of the bastion.", default="t3.micro"),
    opt("ami_id", "AMI of the bastion (default the newest Canonical Ubuntu 24.04)."),
    _MACHINE["ssh_key_name"].but(description="SSH key pair of the bastion; unset means the cluster's ssh_key_name."),
)

LOAD_BALANCER_OPTIONS: tuple[Option, ...] = (
    opt(
        "type",
        "Load balancer type.",
        choices=("classic", "nlb", "external", "disabled"),
        default="classic",
        immutable=True,
    ),
    opt("scheme", "Scheme.", choices=("internet-facing", "internal"), default="internet-facing"),
    opt("name", "Name; for external, the existing load balancer to register with."),
    opt("health_check_protocol", "Health check protocol.", choices=("TCP", "HTTPS"), default="TCP"),
    opt(
        "additional_listeners",
        "Extra listeners (NLB).",
        type="list",
        elements="dict",
        default=[],
        options=(
            opt("port", "Listener port.", type="int", required=True),
            opt("protocol", "Listener protocol.", choices=("TCP",), default="TCP"),
        ),
    ),
    opt(
        "ingress_rules",
        "Ingress rules of the apiserver-lb group (default TCP 6443 from anywhere).",
        type="list",
        elements="dict",
        default=[],
        options=_rule_options(),
    ),
    opt("preserve_client_ip", "NLB client IP preservation (off, as in CAPA).", type="bool", default=False),
    opt("cross_zone_load_balancing", "Cross-zone load balancing.", type="bool", default=False),
)

CONTROL_PLANE_OPTIONS: tuple[Option, ...] = (
    opt("replicas", "Number of control-plane machines (odd).", type="int", default=1),
    *machine_fields(),
    opt(
        "rollout",
        "Rolling replacement.",
        type="dict",
        default={},
        options=(opt("max_surge", "Extra machines during a rollout.", type="int", default=1),),
    ),
    opt(
        "rollout_before_certificates_expiry_days",
        "Replace machines whose certificates expire within this many days (KCP's certificatesExpiryDays, "
        "at least 7); unset means off.",
        type="int",
    ),
    *HEALTH_OPTIONS,
    *DRAIN_OPTIONS,
)

MACHINE_DEPLOYMENT_OPTIONS: tuple[Option, ...] = (
    opt("name", "Name, unique in the cluster.", required=True),
    opt("replicas", "Number of machines.", type="int", default=1),
    *machine_fields(),
    opt(
        "failure_domains",
        "AZs to spread over (default all private subnets' AZs).",
        type="list",
        elements="str",
        default=[],
        comparison="set",
    ),
    opt(
        "rollout",
        "Rolling replacement and scale-in.",
        type="dict",
        default={},
        options=(
            opt("max_surge", "Extra machines during a rollout.", type="int", default=1),
            opt("max_unavailable", "Machines that may be missing during a rollout.", type="int", default=0),
            opt(
                "deletion_policy",
                "Which machines go first on scale-in.",
                choices=("Random", "Newest", "Oldest"),
                default="Random",
            ),
        ),
    ),
    *HEALTH_OPTIONS,
    *DRAIN_OPTIONS,
    _NODE["min_ready_seconds"],
)


MACHINE_POOL_OPTIONS: tuple[Option, ...] = (
    opt("name", "Name of the pool, its launch template and group; unique in the account and region.", required=True),
    opt(
        "kind",
        "asg (a launch template and an auto scaling group) or fleet (an EC2 Fleet).",
        choices=("asg", "fleet"),
        default="asg",
        immutable=True,
    ),
    opt("min_size", "Minimum size.", type="int", default=1),
    opt("max_size", "Maximum size.", type="int", default=1),
    opt("desired_capacity", "Desired capacity (a fleet's target capacity).", type="int"),
    opt("externally_managed_replicas", "A cluster autoscaler owns desired capacity.", type="bool", default=False),
    opt(
        "bootstrap_token_ttl",
        "Seconds the pool's bootstrap token stays valid (kind unmanaged): one token per pool, rotated by a run "
        "that finds less than half of it left. Choose it longer than twice the time between two runs.",
        type="int",
        default=tokens.DEFAULT_POOL_TTL,
        no_log=False,  # a lifetime in seconds, not the token
    ),
    opt(
        "failure_domains",
        "AZs of the pool (default every private subnet's).",
        type="list",
        elements="str",
        default=[],
        comparison="set",
    ),
    *machine_fields(exclude=POOL_EXCLUDED),
    opt(
        "mixed_instances_policy",
        "Instance type overrides and the on-demand/spot split.",
        type="dict",
        options=(
            opt(
                "instances_distribution",
                "How capacity splits between on-demand and spot.",
                type="dict",
                default={},
                options=(
                    opt("on_demand_base_capacity", "On-demand instances first.", type="int", default=0),
                    opt(
                        "on_demand_percentage_above_base_capacity",
                        "Percent on-demand above the base.",
                        type="int",
                        default=100,
                    ),
                    opt(
                        "spot_allocation_strategy",
                        "Spot allocation strategy.",
                        choices=(
                            "lowest-price",
                            "capacity-optimized",
                            "capacity-optimized-prioritized",
                            "price-capacity-optimized",
                        ),
                        default="lowest-price",
                    ),
                    opt(
                        "on_demand_allocation_strategy",
                        "On-demand allocation strategy.",
                        choices=("prioritized", "lowest-price"),
                        default="prioritized",
                    ),
                ),
            ),
            opt(
                "overrides",
                "Instance types to use.",
                type="list",
                elements="dict",
                default=[],
                options=(opt("instance_type", "Instance type.", required=True),),
            ),
        ),
    ),
    opt(
        "suspended_processes",
        "Auto scaling processes to suspend.",
        type="list",
        elements="str",
        default=[],
        choices=SUSPENDABLE_PROCESSES,  # the auto scaling group processes asg_plan knows
        comparison="set",
    ),
    opt("capacity_rebalance", "Capacity rebalancing for spot.", type="bool", default=False),
    opt("default_cooldown", "Default cooldown (s).", type="int", default=300),
    opt("default_instance_warmup", "Default instance warm-up (s).", type="int", default=300),
    opt(
        "refresh_preferences",
        "Instance refresh on template changes.",
        type="dict",
        default={},
        options=(
            opt("disable", "Never start a refresh.", type="bool", default=False),
            opt("min_healthy_percentage", "Healthy capacity kept during a refresh.", type="int", default=90),
            opt("instance_warmup", "Warm-up of refreshed instances (s).", type="int"),
        ),
    ),
    opt(
        "drain_on_scale_in",
        "Drain nodes before scale-in through a lifecycle hook (default on for spot pools).",
        type="bool",
    ),
)

LOG_TYPES = ("api_server", "audit", "authenticator", "controller_manager", "scheduler")

NODE_GROUP_OPTIONS: tuple[Option, ...] = (
    opt("name", "Name, unique in the cluster.", required=True, immutable=True),
    opt("version", "Kubernetes major.minor; unset means the control plane's."),
    opt("release_version", "AMI release version."),
    opt(
        "scaling",
        "Size.",
        type="dict",
        default={},
        options=(
            opt("min_size", "Minimum.", type="int", default=1),
            opt("max_size", "Maximum.", type="int", default=3),
            opt("desired_size", "Desired.", type="int", default=2),
        ),
    ),
    opt("externally_managed_replicas", "A cluster autoscaler owns desired size.", type="bool", default=False),
    nodegroup_plan.INSTANCE_TYPES.but(default=list(nodegroup_plan.DEFAULT_INSTANCE_TYPES)),
    nodegroup_plan.CAPACITY_TYPE,
    nodegroup_plan.AMI_TYPE.but(default=nodegroup_plan.DEFAULT_AMI_TYPE),
    nodegroup_plan.DISK_SIZE.but(default=nodegroup_plan.DEFAULT_DISK_SIZE),
    opt("labels", "Kubernetes labels.", type="dict", default={}),
    opt(
        "taints",
        "Kubernetes taints.",
        type="list",
        elements="dict",
        default=[],
        options=(
            opt("key", "Key.", required=True, no_log=False),
            opt("value", "Value."),
            opt(
                "effect",
                "Effect.",
                choices=("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"),
                default="NO_SCHEDULE",
            ),
        ),
    ),
    opt(
        "update_config",
        "How many nodes may be replaced at once.",
        type="dict",
        default={},
        options=(
            opt("max_unavailable", "Nodes.", type="int"),
            opt("max_unavailable_percentage", "Percent of nodes.", type="int"),
        ),
    ),
    nodegroup_plan.NODE_ROLE_ARN,
    opt("tags", "Extra tags.", type="dict", default={}),
)

FARGATE_PROFILE_OPTIONS: tuple[Option, ...] = (
    opt("name", "Name.", required=True, immutable=True),
    opt("pod_execution_role_arn", "An existing pod execution role; unset means created and owned.", immutable=True),
    opt(
        "selectors",
        "Which pods run on Fargate.",
        type="list",
        elements="dict",
        default=[],
        immutable=True,
        options=(
            opt("namespace", "Namespace.", required=True),
            opt("labels", "Pod labels.", type="dict", default={}),
        ),
    ),
    opt("tags", "Extra tags.", type="dict", default={}),
)

EKS_OPTIONS: tuple[Option, ...] = (
    opt("name", "EKS cluster name; unset means the cluster name.", immutable=True),
    opt("version", "Kubernetes major.minor; upgraded one minor at a time.", default="1.31"),
    opt("role_arn", "An existing control-plane role to use."),
    opt("role_name", "Control-plane role to use or create; default <cluster>-iam-service-role."),
    opt("restrict_private_subnets", "Give EKS only the private subnets.", type="bool", default=False),
    opt(
        "endpoint_access",
        "API endpoint access.",
        type="dict",
        default={},
        options=(
            opt("public", "Public endpoint.", type="bool", default=True),
            opt("private", "Private endpoint.", type="bool", default=False),
            opt(
                "public_cidrs",
                "Who may reach the public endpoint.",
                type="list",
                elements="str",
                default=["0.0.0.0/0"],
                comparison="set",
            ),
        ),
    ),
    opt(
        "logging",
        "Control-plane log types to enable.",
        type="dict",
        default={},
        options=tuple(
            opt(kind, f"Send {kind.replace('_', ' ')} logs to CloudWatch.", type="bool", default=False)
            for kind in LOG_TYPES
        ),
    ),
    opt(
        "encryption_config",
        "KMS secrets encryption: can be added, never changed or removed.",
        type="dict",
        default={},
        immutable=True,
        options=(
            opt("provider", "KMS key ARN; unset means none."),
            opt("resources", "What to encrypt.", type="list", elements="str", default=["secrets"]),
        ),
    ),
    opt(
        "access_config",
        "Authentication mode.",
        type="dict",
        default={},
        options=(
            opt(
                "authentication_mode",
                "How IAM principals are mapped.",
                choices=("CONFIG_MAP", "API", "API_AND_CONFIG_MAP"),
                default="CONFIG_MAP",
            ),
            opt("bootstrap_cluster_creator_admin_permissions", "Make the creator an admin.", type="bool", default=True),
        ),
    ),
    opt(
        "addons",
        "Addons to manage; unset means addons are not managed, [] deletes those the collection installed.",
        type="list",
        elements="dict",
        options=(
            opt("name", "Addon name.", required=True),
            opt("version", "Addon version; unset means the default."),
            opt("configuration", "Configuration values (JSON)."),
            opt("service_account_role_arn", "IRSA role of the addon."),
            opt(
                "conflict_resolution",
                "How to resolve conflicts.",
                choices=("overwrite", "none", "preserve"),
                default="overwrite",
            ),
        ),
    ),
    opt("associate_oidc_provider", "Create and own the IAM OIDC provider for IRSA.", type="bool", default=False),
    opt("oidc_thumbprint", "Thumbprint of the issuer's root CA; unset means fetch it."),
    opt(
        "iam_authenticator",
        "aws-auth mappings (and access entries in API modes).",
        type="dict",
        default={},
        options=(
            opt(
                "map_roles",
                "Role mappings: rolearn, username, groups. aws-auth gets each role's ARN without its IAM path (the"
                " authenticator matches the assumed role, which has none); an access entry gets it as given.",
                type="list",
                elements="dict",
                default=[],
            ),
            opt("map_users", "User mappings: userarn, username, groups.", type="list", elements="dict", default=[]),
        ),
    ),
    opt("node_groups", "Managed node groups.", type="list", elements="dict", default=[], options=NODE_GROUP_OPTIONS),
    opt(
        "fargate_profiles",
        "Fargate profiles.",
        type="list",
        elements="dict",
        default=[],
        options=FARGATE_PROFILE_OPTIONS,
    ),
)

CLUSTER_OPTIONS: tuple[Option, ...] = (
    opt("name", "Cluster name: lower-case letters, digits and -, at most 40 characters.", required=True),
    opt("region", "AWS region (default from module_defaults of group/clusterapi.aws.capa, then AWS_REGION)."),
    opt(
        "kind", "unmanaged (kubeadm on EC2) or eks.", choices=("unmanaged", "eks"), default="unmanaged", immutable=True
    ),
    opt(
        "state",
        "present reconciles the cluster; absent deletes everything it owns.",
        choices=("present", "absent"),
        default="present",
    ),
    opt("kubernetes_version", "Kubernetes version of the machines, e.g. v1.31.2.", default="v1.31.2"),
    opt(
        "identity",
        "A role to assume for every request of this cluster.",
        type="dict",
        options=_role_identity_options(True),
    ),
    opt("additional_tags", "Tags added to every resource the cluster creates.", type="dict", default={}),
    opt(
        "wait_timeout",
        "Seconds each step of this cluster may wait in all (resources becoming available, machines joining, EKS "
        "creating or upgrading); it wins over module_defaults. Unset: the group/clusterapi.aws.capa module_defaults "
        "give it, else each module's own budget - 600, and sized for EKS (AWS documents 10 to 15 minutes for a "
        "cluster) 1800 for the EKS control plane and node groups, 900 for Fargate profiles.",
        type="int",
    ),
    opt(
        "external_resource_gc",
        "On delete, first remove the load balancers, target groups and security groups the in-cluster cloud "
        "provider created (tagged kubernetes.io/cluster/<name>: owned), as CAPA's ExternalResourceGC does.",
        type="bool",
        default=True,
    ),
    _MACHINE["ssh_key_name"].but(description="SSH key pair for machines that name none; unset means no key."),
    KUBERNETES_API.but(
        description=[
            "How the controller reaches the cluster's Kubernetes API server (and, through it, etcd): the machines "
            "count once their Nodes joined, control-plane changes keep etcd quorum, machines are drained before "
            "they go.",
            "A key left unset takes the controller's setting (capa_cluster_spec's kubernetes_api, the roles' "
            "capa_kubernetes_api variable), then C(mode=auto) and C(timeout=10).",
        ],
        options=CONTROLLER_KUBERNETES_API,
    ),
    opt(
        "bootstrap_token_ttl",
        "Seconds the bootstrap token each control-plane and worker machine joins with stays valid (kind unmanaged; "
        "CABPK's --bootstrap-token-ttl): minted per machine in the cluster, renewed while the machine has not "
        "joined, deleted once it has; the first control-plane machine's kubeadm init token expires too.",
        type="int",
        default=tokens.DEFAULT_MACHINE_TTL,
        no_log=False,  # a lifetime in seconds, not the token
    ),
    opt("addons", "Addons applied to the cluster (kind unmanaged).", type="dict", default={}, options=ADDON_OPTIONS),
    opt(
        "etcd_backup",
        "etcd snapshots in S3 (kind unmanaged): restore one with playbooks/restore.yml.",
        type="dict",
        default={},
        options=ETCD_BACKUP_OPTIONS,
    ),
    opt("network", "The cluster network.", type="dict", default={}, options=NETWORK_OPTIONS),
    opt("bastion", "The bastion host.", type="dict", default={}, options=BASTION_OPTIONS),
    opt(
        "control_plane_endpoint",
        "The API endpoint when control_plane_load_balancer.type is disabled (CAPA waits for someone to set it).",
        type="dict",
        default={},
        options=(
            opt("host", "DNS name or address of the API endpoint."),
            opt("port", "Port of the API endpoint.", type="int", default=6443),
        ),
    ),
    opt(
        "control_plane_load_balancer",
        "The control-plane load balancer.",
        type="dict",
        default={},
        options=LOAD_BALANCER_OPTIONS,
    ),
    opt("control_plane", "The control-plane machines.", type="dict", default={}, options=CONTROL_PLANE_OPTIONS),
    opt(
        "machine_deployments",
        "Worker machine deployments.",
        type="list",
        elements="dict",
        default=[],
        options=MACHINE_DEPLOYMENT_OPTIONS,
    ),
    opt(
        "machine_pools",
        "Machine pools: auto scaling groups (kind asg) or EC2 fleets (kind fleet) of worker machines. In an eks "
        "cluster they are self-managed nodes: nodeadm bootstrap, the EKS-optimised AL2023 image of eks.version "
        "unless ami says otherwise, and the EKS cluster security group added to the pool's groups.",
        type="list",
        elements="dict",
        default=[],
        options=MACHINE_POOL_OPTIONS,
    ),
    opt(
        "eks",
        "EKS control plane, node groups and Fargate profiles (kind eks).",
        type="dict",
        default={},
        options=EKS_OPTIONS,
    ),
)

# Sections only one kind uses: the other kind would silently ignore them, so writing them is a mistake.
KIND_SECTIONS = {"unmanaged": ("eks",), "eks": ("control_plane", "machine_deployments", "addons", "etcd_backup")}


# derived: the argument spec, the unset spelling, the typed spec -------------------------------------------------------
def argument_spec() -> dict[str, Any]:
    """``CLUSTER_OPTIONS`` as AnsibleModule / ArgumentSpecValidator take it (the ``options`` of ``cluster``)."""
    return _options.argument_spec(CLUSTER_OPTIONS)


def module_argument_spec() -> dict[str, Any]:
    """capa_cluster_spec's options: the spec, a state to compile for instead of the spec's, the output directory,
    the controller's kubernetes_api settings."""
    return dict(
        cluster=dict(type="dict", required=True, options=argument_spec()),
        state=dict(type="str", choices=["present", "absent"]),
        output_dir=dict(type="str", default=".capa"),
        kubernetes_api=dict(type="dict", options=_options.argument_spec(CONTROLLER_KUBERNETES_API)),
    )


def invalid_message(error: SpecError) -> str:
    """What a user has to fix - the cluster spec or the controller's kubernetes_api setting - and why."""
    what = CONTROLLER_SETTING if error.field.startswith(CONTROLLER_SETTING) else "capa_cluster"
    return f"{what} is invalid: {error}"


def merge_kubernetes_api(spec: Mapping[str, Any] | None, controller: Mapping[str, Any] | None) -> dict[str, Any]:
    """The cluster's ``kubernetes_api``: the keys its spec sets, else the controller's, else the modules' defaults.

    Raises SpecError naming the setting (``capa_kubernetes_api.<key>`` for the controller's, checked first).
    """
    given = {key: value for key, value in (controller or {}).items() if value is not None}
    KubernetesApiSettings.from_params(given).validate(CONTROLLER_SETTING)
    given.update({key: value for key, value in (spec or {}).items() if value is not None})
    merged = KubernetesApiSettings.from_params(given)
    merged.validate("capa_cluster.kubernetes_api")
    return dict(plain(merged))


def normalise(value: Any, options: Sequence[Option] = CLUSTER_OPTIONS) -> Any:
    """Validated parameters with one spelling of unset: ``""`` in a string field without a default is ``None``."""
    if not isinstance(value, Mapping):
        return value
    out = dict(value)
    for option in options:
        item = out.get(option.name)
        if option.type == "str" and option.default is None and item == "":
            out[option.name] = None
        elif option.options is not None and option.type == "dict":
            out[option.name] = normalise(item, option.options)
        elif option.options is not None and option.type == "list" and isinstance(item, list):
            out[option.name] = [normalise(element, option.options) for element in item]
    return out


def roles_for(kind: str) -> tuple[str, ...]:
    return EKS_ROLES if kind == "eks" else UNMANAGED_ROLES


def load(params: Mapping[str, Any], default_region: str | None) -> ClusterSpec:
    """The typed spec of validated parameters (``cluster`` after the argument spec), checked; ``region`` resolved.

    Raises SpecError naming the field.
    """
    spec = ClusterSpec.from_params(normalise(params))
    check_cluster(spec, default_region)
    return spec if spec.region else replace(spec, region=default_region)


def plain(value: Any) -> Any:
    """The typed spec (or a part of it) as the plain dicts and lists Ansible passes around."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


# checks an argument spec cannot express ------------------------------------------------------------------------------
def check_cluster(spec: ClusterSpec, default_region: str | None) -> None:
    """Everything an argument spec cannot check, each error naming the field (``capa_cluster.<path>``)."""
    check_cluster_name(spec.name, "capa_cluster.name")
    check_tags(spec.additional_tags, "capa_cluster.additional_tags")
    if spec.wait_timeout is not None and spec.wait_timeout < 1:
        raise SpecError("capa_cluster.wait_timeout", f"must be at least 1 second (is {spec.wait_timeout})")
    region = spec.region or default_region
    if not region:
        raise SpecError(
            "capa_cluster.region",
            "no region given here, in module_defaults of group/clusterapi.aws.capa, nor in AWS_REGION / "
            "AWS_DEFAULT_REGION",
        )
    _check_network(spec, region)
    for index, cidr in enumerate(spec.bastion.allowed_cidr_blocks):
        _check_source_cidr(cidr, f"capa_cluster.bastion.allowed_cidr_blocks[{index}]")
    _check_kind_sections(spec)
    if spec.kind == "eks":
        _check_eks(spec)
    else:
        parse_kubernetes_version(spec.kubernetes_version, "capa_cluster.kubernetes_version")
        _check_load_balancer(spec)
    _check_machines(spec, region)
    _check_machine_pools(spec, region)
    if spec.kind != "eks":
        tokens.check_token_ttl(spec.bootstrap_token_ttl, "capa_cluster.bootstrap_token_ttl")
        for index, pool in enumerate(spec.machine_pools):
            tokens.check_token_ttl(pool.bootstrap_token_ttl, f"capa_cluster.machine_pools[{index}].bootstrap_token_ttl")
        etcd_snapshot.check_settings(etcd_snapshot_spec(spec), region, "capa_cluster.etcd_backup.")


def etcd_snapshot_spec(spec: ClusterSpec) -> etcd_snapshot.SnapshotSpec:
    """The cluster's ``etcd_backup`` as capa_etcd_snapshot's typed spec (the endpoint comes with the compile)."""
    backup = spec.etcd_backup
    return etcd_snapshot.SnapshotSpec(
        cluster=spec.name,
        state=spec.state,
        bucket=backup.bucket,
        kms_key_id=backup.kms_key_id,
        retention_days=backup.retention_days,
        last_snapshot_min_age=backup.last_snapshot_min_age,
        endpoint_host=None,
        endpoint_port=6443,
        kubernetes_api=KubernetesApiSettings(),
    )


def _check_kind_sections(spec: ClusterSpec) -> None:
    """A section the cluster's kind does not use must be left as it defaults (unwritten)."""
    declared = by_name(CLUSTER_OPTIONS)
    for section in KIND_SECTIONS[spec.kind]:
        option = declared[section]
        unset = _options.defaults(option.options or ()) if option.type == "dict" else option.default
        if plain(getattr(spec, section)) != unset:
            raise SpecError(f"capa_cluster.{section}", f"is not used by kind {spec.kind}; remove it")


def _check_eks(spec: ClusterSpec) -> None:
    eks = spec.eks
    field = "capa_cluster.eks"
    if not EKS_VERSION.match(eks.version):
        raise SpecError(f"{field}.version", f"'{eks.version}' is not a Kubernetes major.minor version like 1.31")
    if not spec.network.subnets and spec.network.vpc.availability_zone_usage_limit < 2:
        raise SpecError("capa_cluster.network.vpc.availability_zone_usage_limit", "EKS needs subnets in at least 2 AZs")
    if eks.role_arn and eks.role_name:
        raise SpecError(f"{field}.role_arn", "give role_arn or role_name, not both")
    for key, items in (("node_groups", eks.node_groups), ("fargate_profiles", eks.fargate_profiles)):
        _check_unique_names([item.name for item in items], f"{field}.{key}", check_cluster_name)
    for index, group in enumerate(eks.node_groups):
        scaling = group.scaling
        check_scaling(scaling.min_size, scaling.max_size, scaling.desired_size, f"{field}.node_groups[{index}]")
    control_plane_minor = int(eks.version.split(".")[1])
    for index, group in enumerate(eks.node_groups):
        where = f"{field}.node_groups[{index}].version"
        if group.version is None:
            continue
        if not EKS_VERSION.match(group.version):
            raise SpecError(where, f"'{group.version}' is not a Kubernetes major.minor version like 1.31")
        # Kubernetes' version skew policy: kubelets never newer than the API server, at most 3 minors older.
        minor = int(group.version.split(".")[1])
        if not control_plane_minor - 3 <= minor <= control_plane_minor:
            raise SpecError(
                where, f"'{group.version}' must be the control plane's {eks.version} or up to 3 minors older"
            )
    for index, cidr in enumerate(eks.endpoint_access.public_cidrs):
        _check_source_cidr(cidr, f"{field}.endpoint_access.public_cidrs[{index}]")
    for index, profile in enumerate(eks.fargate_profiles):
        if not profile.selectors:
            raise SpecError(f"{field}.fargate_profiles[{index}].selectors", "needs at least one selector")


def _check_unique_names(names: Sequence[str], field: str, check: Any) -> None:
    for index, name in enumerate(names):
        where = f"{field}[{index}].name"
        check(name, where)
        if name in names[:index]:
            raise SpecError(where, f"'{name}' is used twice")


def _check_pool_name(name: str, where: str) -> None:
    if not 3 <= len(name) <= 128 or not POOL_NAME.match(name):
        raise SpecError(where, f"'{name}': 3 to 128 lower-case letters, digits and -")


def _check_machine_pools(spec: ClusterSpec, region: str) -> None:
    _check_unique_names([pool.name for pool in spec.machine_pools], "capa_cluster.machine_pools", _check_pool_name)
    for index, pool in enumerate(spec.machine_pools):
        _check_machine_pool(pool, f"capa_cluster.machine_pools[{index}]", region)


def _check_machine_pool(pool: MachinePool, where: str, region: str) -> None:
    check_pool_sizes(pool.min_size, pool.max_size, pool.desired_capacity, where)
    check_availability_zones(pool.failure_domains, region, f"{where}.failure_domains")
    _check_machine(pool, where)
    policy = pool.mixed_instances_policy
    if pool.spot_market_options is not None and policy is not None:
        raise SpecError(where, "spot_market_options and mixed_instances_policy exclude each other")
    if policy is not None:
        distribution = policy.instances_distribution
        field = f"{where}.mixed_instances_policy.instances_distribution"
        if distribution.on_demand_base_capacity < 0:
            raise SpecError(f"{field}.on_demand_base_capacity", "must not be negative")
        if not 0 <= distribution.on_demand_percentage_above_base_capacity <= 100:
            raise SpecError(f"{field}.on_demand_percentage_above_base_capacity", "is a percentage: 0 to 100")
    if pool.kind == "fleet" and not (policy and policy.overrides):
        raise SpecError(f"{where}.mixed_instances_policy.overrides", "a fleet needs its instance types listed here")


def _check_load_balancer(spec: ClusterSpec) -> None:
    balancer = spec.control_plane_load_balancer
    field = "capa_cluster.control_plane_load_balancer"
    if balancer.type == "external" and not balancer.name:
        raise SpecError(f"{field}.name", "an external load balancer is given by its name")
    if balancer.type == "disabled" and not spec.control_plane_endpoint.host:
        raise SpecError(
            "capa_cluster.control_plane_endpoint.host",
            "with no load balancer (type disabled), the API endpoint must be given here",
        )
    if balancer.additional_listeners and balancer.type != "nlb":
        raise SpecError(f"{field}.additional_listeners", "additional listeners need type nlb")
    if balancer.name is not None:
        check_lb_name(balancer.name, f"{field}.name")
    if balancer.preserve_client_ip and balancer.type != "nlb":
        raise SpecError(f"{field}.preserve_client_ip", "client IP preservation is a setting of type nlb only")
    for index, rule in enumerate(balancer.ingress_rules):
        check_rule(rule, f"{field}.ingress_rules[{index}]")
    port = spec.control_plane_endpoint.port
    if not 1 <= port <= 65535:
        raise SpecError("capa_cluster.control_plane_endpoint.port", f"{port} is not a port number")


def _check_network(spec: ClusterSpec, region: str) -> None:
    network = spec.network
    vpc = network.vpc
    field = "capa_cluster.network"
    check_resource_id(vpc.id, "vpc", f"{field}.vpc.id")
    vpc_cidrs: list[str] = []
    if not vpc.id:
        vpc_cidrs.append(str(check_vpc_cidr(vpc.cidr_block, f"{field}.vpc.cidr_block")))
        blocks = [ipaddress.ip_network(vpc_cidrs[0])]
        for index, cidr in enumerate(vpc.secondary_cidr_blocks):
            block = check_vpc_cidr(cidr, f"{field}.vpc.secondary_cidr_blocks[{index}]")
            clash = next((other for other in blocks if block.overlaps(other)), None)
            if clash is not None:
                raise SpecError(f"{field}.vpc.secondary_cidr_blocks[{index}]", f"'{cidr}' overlaps '{clash}'")
            blocks.append(block)
            vpc_cidrs.append(cidr)
    if vpc.availability_zone_usage_limit < 1:
        raise SpecError(f"{field}.vpc.availability_zone_usage_limit", "must be at least 1")
    _check_subnets(spec, vpc_cidrs, region, f"{field}.subnets")
    _check_cni(network.cni_ingress_rules, f"{field}.cni_ingress_rules")
    roles = roles_for(spec.kind)
    for role, group_id in network.security_group_overrides.items():
        if role not in roles:
            raise SpecError(
                f"{field}.security_group_overrides.{role}", f"is not a security group role ({', '.join(roles)})"
            )
        check_resource_id(group_id, "sg", f"{field}.security_group_overrides.{role}")
    for key, rules in (
        ("additional_control_plane_ingress_rules", network.additional_control_plane_ingress_rules),
        ("additional_node_ingress_rules", network.additional_node_ingress_rules),
    ):
        for index, rule in enumerate(rules):
            check_rule(rule, f"{field}.{key}[{index}]", roles)
    for index, cidr in enumerate(network.node_port_ingress_cidr_blocks):
        _check_source_cidr(cidr, f"{field}.node_port_ingress_cidr_blocks[{index}]")


def _check_subnets(spec: ClusterSpec, vpc_cidrs: list[str], region: str, field: str) -> None:
    subnets = spec.network.subnets
    byo_vpc = spec.network.vpc.id is not None
    if byo_vpc and not subnets:
        raise SpecError(field, "a VPC you bring (network.vpc.id) needs its subnets listed by id")
    for index, subnet in enumerate(subnets):
        where = f"{field}[{index}]"
        if subnet.id:
            check_resource_id(subnet.id, "subnet", f"{where}.id")
            continue
        if byo_vpc:
            raise SpecError(where, "subnets of a VPC you bring must be given by id; the collection creates none there")
        if not subnet.availability_zone or not subnet.cidr_block:
            raise SpecError(where, "give either id, or availability_zone and cidr_block")
        check_availability_zone(subnet.availability_zone, region, f"{where}.availability_zone")
    check_subnet_cidrs([{"cidr_block": s.cidr_block} for s in subnets], vpc_cidrs, field)
    if subnets and not byo_vpc and not any(s.id or s.is_public for s in subnets):
        raise SpecError(field, "a managed VPC needs at least one public subnet (is_public: true)")


def _check_cni(rules: Any, field: str) -> None:
    if rules in ("calico", "none", None):
        return
    if not isinstance(rules, list):
        raise SpecError(field, "must be 'calico', 'none' or a list of rules")
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise SpecError(f"{field}[{index}]", "must be a rule with description, protocol, from_port and to_port")
        unknown = set(rule) - CNI_RULE_KEYS
        if unknown:
            raise SpecError(f"{field}[{index}]", f"unknown key(s) {', '.join(sorted(unknown))}")
        protocol = str(rule.get("protocol", "tcp"))
        if protocol not in PROTOCOLS:
            raise SpecError(f"{field}[{index}].protocol", f"'{protocol}' is not one of {', '.join(PROTOCOLS)}")
        check_port_range(rule.get("from_port"), rule.get("to_port"), protocol, f"{field}[{index}]")


def check_rule(rule: IngressRule, field: str, roles: tuple[str, ...] = UNMANAGED_ROLES) -> None:
    check_port_range(rule.from_port, rule.to_port, rule.protocol or "tcp", field)
    for index, cidr in enumerate(rule.cidr_blocks):
        _check_source_cidr(cidr, f"{field}.cidr_blocks[{index}]")
    for index, group_id in enumerate(rule.source_security_group_ids):
        check_resource_id(group_id, "sg", f"{field}.source_security_group_ids[{index}]")
    for index, role in enumerate(rule.source_security_group_roles):
        if role not in roles:
            raise SpecError(
                f"{field}.source_security_group_roles[{index}]", f"'{role}' is not one of {', '.join(roles)}"
            )


def _check_source_cidr(cidr: str, field: str) -> None:
    try:
        ipaddress.ip_network(cidr, strict=True)
    except ValueError as e:
        raise SpecError(field, f"'{cidr}' is not a valid CIDR block ({e})") from None


def _check_machines(spec: ClusterSpec, region: str) -> None:
    control_plane = spec.control_plane
    where = "capa_cluster.control_plane"
    HealthCheck.of(control_plane).validate(where)
    days = control_plane.rollout_before_certificates_expiry_days
    if days is not None and days < MIN_CERTIFICATES_EXPIRY_DAYS:
        raise SpecError(f"{where}.rollout_before_certificates_expiry_days", f"{days}: at least 7 (as KCP's)")
    if control_plane.replicas < 1:
        raise SpecError(f"{where}.replicas", f"{control_plane.replicas}: a cluster needs its control plane (1, 3, 5)")
    check_replicas(control_plane.replicas, where, control_plane=True)
    check_rollout(control_plane.rollout.max_surge, 0, where, control_plane=True)
    _check_machine(control_plane, where)
    field = "capa_cluster.machine_deployments"
    _check_unique_names([d.name for d in spec.machine_deployments], field, check_cluster_name)
    for index, deployment in enumerate(spec.machine_deployments):
        where = f"{field}[{index}]"
        check_availability_zones(deployment.failure_domains, region, f"{where}.failure_domains")
        _check_machine(deployment, where)
        check_replicas(deployment.replicas, where)
        HealthCheck.of(deployment).validate(where)
        check_rollout(deployment.rollout.max_surge, deployment.rollout.max_unavailable, where)


def _check_machine(group: Any, where: str) -> None:
    """What every group of machines shares: root volume, instance metadata, spot - the machines' own rules."""
    spot = group.spot_market_options
    machine.check_machine_fields(
        group.root_volume.size,
        group.root_volume.type,
        group.imds.http_put_response_hop_limit,
        spot.max_price if spot is not None else None,
        spot is not None,
        getattr(group, "tenancy", None),
        where,
    )


__all__ = [
    "CLUSTER_OPTIONS",
    "SpecError",
    "MACHINE_OPTIONS",
    "argument_spec",
    "check_cluster",
    "check_rule",
    "load",
    "module_argument_spec",
    "normalise",
    "parse_cidr",
    "plain",
    "roles_for",
]
