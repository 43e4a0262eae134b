# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster spec users write (``capa_cluster``), declared once.

``CLUSTER_OPTIONS`` is an Ansible argument spec with a description on every option. From it come the
``capa_cluster_spec`` module's argument spec and DOCUMENTATION and every role's ``meta/argument_specs.yml``
(``tools/gen_specs.py`` writes them; a unit test fails when they drift). ``check_cluster`` adds the checks an
argument spec cannot express (CIDRs, AZs, names, cross-field rules), each naming the field, before any AWS call.
"""

from __future__ import annotations

import copy
import ipaddress
import re
from typing import Any

from ..kernel.errors import SpecError
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
)
from ..machines.plan import parse_max_unhealthy

UNMANAGED_ROLES = ("bastion", "apiserver-lb", "lb", "controlplane", "node")
KUBERNETES_VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")
# EBS root volume sizes AWS accepts for the types a root volume can have; below 8 GiB no CAPA image boots.
ROOT_VOLUME_GIB = (8, 16384)
ROOT_VOLUME_TYPES = ("standard", "gp2", "gp3", "io1", "io2")
LB_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$")
EKS_ROLES = ("bastion", "node-eks-additional")
PROTOCOLS = ("tcp", "udp", "icmp", "-1", "4", "50", "58")


def opt(description: str, type: str = "str", **extra: Any) -> dict[str, Any]:
    return dict(type=type, description=description, **extra)


def _rule_options() -> dict[str, Any]:
    return dict(
        description=opt("What the rule is for (shown in AWS).", default=""),
        protocol=opt("IP protocol.", choices=list(PROTOCOLS), default="tcp"),
        from_port=opt("First port (not for protocols -1, 4, 50).", type="int"),
        to_port=opt("Last port (not for protocols -1, 4, 50).", type="int"),
        cidr_blocks=opt("Source CIDR blocks.", type="list", elements="str", default=[]),
        source_security_group_ids=opt("Source security group ids.", type="list", elements="str", default=[]),
        source_security_group_roles=opt(
            "Source security groups by cluster role (bastion, apiserver-lb, lb, controlplane, node).",
            type="list",
            elements="str",
            default=[],
        ),
    )


def _role_identity_options(chained: bool) -> dict[str, Any]:
    options = dict(
        role_arn=opt("ARN of the role to assume.", required=True),
        external_id=opt("External id the role's trust policy requires.", no_log=False),
        session_name=opt("Session name (default capa-<cluster>)."),
        duration_seconds=opt("Lifetime of the credentials, 900 to 43200.", type="int", default=3600),
    )
    if chained:
        options["source_identity"] = opt(
            "A role assumed first, whose credentials assume role_arn.",
            type="dict",
            options=_role_identity_options(False),
        )
    return options


def _ami_options() -> dict[str, Any]:
    return dict(
        id=opt("AMI id; empty means CAPA's lookup.", default=""),
        base_os=opt(
            "Base OS of the looked-up AMI; empty means ubuntu-24.04, or for machine pools of an eks cluster the "
            "EKS-optimised image.",
            default="",
        ),
        owner=opt("Owner account of the looked-up AMI (default CAPA's 819546954734).", default=""),
        name_format=opt(
            "Name format of the lookup (default CAPA's capa-ami-<base_os>-?<kubernetes_version>-*).", default=""
        ),
    )


def _machine_options() -> dict[str, Any]:
    """What every group of machines (control plane, machine deployment) takes besides its size."""
    return dict(
        instance_type=opt("Instance type.", default="t3.large"),
        ami=opt("AMI or its lookup.", type="dict", default={}, options=_ami_options()),
        root_volume=opt("Root volume.", type="dict", default={}, options=_root_volume_options()),
        ssh_key_name=opt("SSH key pair name; empty means the cluster's ssh_key_name.", default=""),
        iam_instance_profile=opt(
            "Instance profile of the machines; empty means none. clusterawsadm's are named control-plane.<suffix> "
            "and nodes.<suffix>, suffix cluster-api-provider-aws.sigs.k8s.io.",
            default="",
        ),
        additional_security_group_ids=opt(
            "Security groups added to the role's groups.", type="list", elements="str", default=[]
        ),
        tenancy=opt("Placement tenancy.", choices=["default", "dedicated", "host"], default="default"),
        placement_group_name=opt("Placement group.", default=""),
        spot_market_options=opt(
            "Run on spot.",
            type="dict",
            options=dict(max_price=opt("Maximum price (USD/hour); empty = on-demand price.", default="")),
        ),
        imds=opt(
            "Instance metadata options (IMDSv2 required by default, safer than CAPA).",
            type="dict",
            default={},
            options=dict(
                http_tokens=opt("IMDSv2 tokens.", choices=["required", "optional"], default="required"),
                http_put_response_hop_limit=opt("Hop limit.", type="int", default=1),
            ),
        ),
        bootstrap_backend=opt(
            "Where bootstrap data waits for the machine.",
            choices=["secrets-manager", "ssm-parameter-store"],
            default="secrets-manager",
        ),
    )


def _root_volume_options() -> dict[str, Any]:
    return dict(
        size=opt("Size in GiB.", type="int", default=80),
        type=opt("EBS volume type.", default="gp3"),
        encrypted=opt("Encrypt the volume (on by default, safer than CAPA).", type="bool", default=True),
    )


NETWORK_OPTIONS: dict[str, Any] = dict(
    vpc=opt(
        "The cluster VPC: managed (created and owned) unless id is given.",
        type="dict",
        default={},
        options=dict(
            id=opt("An existing VPC to use (bring your own): used, never changed or deleted.", default=""),
            cidr_block=opt("Primary CIDR block of a managed VPC.", default="10.0.0.0/16"),
            secondary_cidr_blocks=opt("Secondary CIDR blocks (add-only).", type="list", elements="str", default=[]),
            availability_zone_usage_limit=opt("How many AZs the default layout uses.", type="int", default=3),
            availability_zone_selection=opt(
                "How AZs are picked: Ordered (alphabetical) or Random (stable per cluster).",
                choices=["Ordered", "Random"],
                default="Ordered",
            ),
        ),
    ),
    subnets=opt(
        "Subnets; empty means CAPA's layout (a public and a private subnet per AZ, CIDRs carved from the VPC). "
        "Entries with only id are existing subnets (bring your own).",
        type="list",
        elements="dict",
        default=[],
        options=dict(
            id=opt("An existing subnet to use."),
            availability_zone=opt("AZ of a subnet to create."),
            cidr_block=opt("CIDR block of a subnet to create."),
            is_public=opt("Public (routes to the internet gateway) or private.", type="bool", default=False),
            tags=opt("Extra tags for this subnet.", type="dict", default={}),
        ),
    ),
    nat_gateways=opt(
        "NAT gateways: one per AZ (CAPA), a single one for the cluster, or none (private subnets have no egress).",
        choices=["per_az", "single", "none"],
        default="per_az",
    ),
    cni_ingress_rules=opt(
        "CNI rules on the control-plane and node groups: calico (TCP 179 and IP-in-IP), none, or a list of rules "
        "with description, protocol, from_port and to_port.",
        type="raw",
        default="calico",
    ),
    security_group_overrides=opt(
        "Role to an existing security group id to use instead (bring your own).", type="dict", default={}
    ),
    additional_control_plane_ingress_rules=opt(
        "Extra ingress rules on the control-plane group.",
        type="list",
        elements="dict",
        default=[],
        options=_rule_options(),
    ),
    additional_node_ingress_rules=opt(
        "Extra ingress rules on the node group.", type="list", elements="dict", default=[], options=_rule_options()
    ),
    node_port_ingress_cidr_blocks=opt(
        "Sources allowed to reach NodePort services.", type="list", elements="str", default=["0.0.0.0/0"]
    ),
)

CLUSTER_OPTIONS: dict[str, Any] = dict(
    name=opt("Cluster name: lower-case letters, digits and -, at most 40 characters.", required=True),
    region=opt("AWS region (default from AWS_REGION / AWS_DEFAULT_REGION)."),
    kind=opt("unmanaged (kubeadm on EC2) or eks.", choices=["unmanaged", "eks"], default="unmanaged"),
    state=opt(
        "present reconciles the cluster; absent deletes everything it owns.",
        choices=["present", "absent"],
        default="present",
    ),
    kubernetes_version=opt("Kubernetes version of the machines, e.g. v1.31.2.", default="v1.31.2"),
    identity=opt(
        "A role to assume for every request of this cluster.", type="dict", options=_role_identity_options(True)
    ),
    additional_tags=opt("Tags added to every resource the cluster creates.", type="dict", default={}),
    external_resource_gc=opt(
        "On delete, first remove the load balancers, target groups and security groups the in-cluster cloud "
        "provider created (tagged kubernetes.io/cluster/<name>: owned), as CAPA's ExternalResourceGC does.",
        type="bool",
        default=True,
    ),
    ssh_key_name=opt("SSH key pair for machines that name none; empty means no key.", default=""),
    network=opt("The cluster network.", type="dict", default={}, options=NETWORK_OPTIONS),
    bastion=opt(
        "The bastion host.",
        type="dict",
        default={},
        options=dict(
            enabled=opt("Create a bastion in a public subnet.", type="bool", default=False),
            allowed_cidr_blocks=opt(
                "Sources allowed to SSH to the bastion.", type="list", elements="str", default=["0.0.0.0/0"]
            ),
            instance_type=opt("Instance type of the bastion.", default="t3.micro"),
            ami_id=opt("AMI of the bastion (default the newest Canonical Ubuntu 24.04).", default=""),
            ssh_key_name=opt("SSH key pair of the bastion; empty means the cluster's ssh_key_name.", default=""),
        ),
    ),
    control_plane_endpoint=opt(
        "The API endpoint when control_plane_load_balancer.type is disabled (CAPA waits for someone to set it).",
        type="dict",
        default={},
        options=dict(
            host=opt("DNS name or address of the API endpoint.", default=""),
            port=opt("Port of the API endpoint.", type="int", default=6443),
        ),
    ),
    control_plane_load_balancer=opt(
        "The control-plane load balancer.",
        type="dict",
        default={},
        options=dict(
            type=opt("Load balancer type.", choices=["classic", "nlb", "external", "disabled"], default="classic"),
            scheme=opt("Scheme.", choices=["internet-facing", "internal"], default="internet-facing"),
            name=opt("Name; for external, the existing load balancer to register with.", default=""),
            health_check_protocol=opt("Health check protocol.", choices=["TCP", "HTTPS"], default="TCP"),
            additional_listeners=opt(
                "Extra listeners (NLB).",
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    port=opt("Listener port.", type="int", required=True),
                    protocol=opt("Listener protocol.", choices=["TCP"], default="TCP"),
                ),
            ),
            ingress_rules=opt(
                "Ingress rules of the apiserver-lb group (default TCP 6443 from anywhere).",
                type="list",
                elements="dict",
                default=[],
                options=_rule_options(),
            ),
            preserve_client_ip=opt("NLB client IP preservation (off, as in CAPA).", type="bool", default=False),
            cross_zone_load_balancing=opt("Cross-zone load balancing.", type="bool", default=False),
        ),
    ),
    control_plane=opt(
        "The control-plane machines.",
        type="dict",
        default={},
        options=dict(
            replicas=opt("Number of control-plane machines (odd).", type="int", default=1),
            **_machine_options(),
            rollout=opt(
                "Rolling replacement.",
                type="dict",
                default={},
                options=dict(max_surge=opt("Extra machines during a rollout.", type="int", default=1)),
            ),
            max_unhealthy=opt(
                "Self-healing guard (MachineHealthCheck maxUnhealthy): a count or a percentage like 40%; above it "
                "no unhealthy (stopped, impaired) machine is replaced.",
                type="raw",
                default="100%",
            ),
        ),
    ),
    machine_deployments=opt(
        "Worker machine deployments.",
        type="list",
        elements="dict",
        default=[],
        options=dict(
            name=opt("Name, unique in the cluster.", required=True),
            replicas=opt("Number of machines.", type="int", default=1),
            **_machine_options(),
            failure_domains=opt(
                "AZs to spread over (default all private subnets' AZs).", type="list", elements="str", default=[]
            ),
            rollout=opt(
                "Rolling replacement and scale-in.",
                type="dict",
                default={},
                options=dict(
                    max_surge=opt("Extra machines during a rollout.", type="int", default=1),
                    max_unavailable=opt("Machines that may be missing during a rollout.", type="int", default=0),
                    deletion_policy=opt(
                        "Which machines go first on scale-in.", choices=["Random", "Newest", "Oldest"], default="Random"
                    ),
                ),
            ),
            max_unhealthy=opt(
                "Self-healing guard (MachineHealthCheck maxUnhealthy): a count or a percentage like 40%; above it "
                "no unhealthy (stopped, impaired) machine is replaced.",
                type="raw",
                default="100%",
            ),
        ),
    ),
    machine_pools=opt(
        "Machine pools: auto scaling groups (kind asg) or EC2 fleets (kind fleet) of worker machines. In an eks "
        "cluster they are self-managed nodes: nodeadm bootstrap, the EKS-optimised AL2023 image of eks.version "
        "unless ami says otherwise, and the EKS cluster security group added to the pool's groups.",
        type="list",
        elements="dict",
        default=[],
        options=dict(
            name=opt(
                "Name of the pool, its launch template and group; unique in the account and region.", required=True
            ),
            kind=opt(
                "asg (a launch template and an auto scaling group) or fleet (an EC2 Fleet).",
                choices=["asg", "fleet"],
                default="asg",
            ),
            min_size=opt("Minimum size.", type="int", default=1),
            max_size=opt("Maximum size.", type="int", default=1),
            desired_capacity=opt("Desired capacity (a fleet's target capacity).", type="int"),
            externally_managed_replicas=opt("A cluster autoscaler owns desired capacity.", type="bool", default=False),
            failure_domains=opt(
                "AZs of the pool (default every private subnet's).", type="list", elements="str", default=[]
            ),
            **{k: v for k, v in _machine_options().items() if k not in ("tenancy", "placement_group_name")},
            mixed_instances_policy=opt(
                "Instance type overrides and the on-demand/spot split.",
                type="dict",
                options=dict(
                    instances_distribution=opt(
                        "How capacity splits between on-demand and spot.",
                        type="dict",
                        default={},
                        options=dict(
                            on_demand_base_capacity=opt("On-demand instances first.", type="int", default=0),
                            on_demand_percentage_above_base_capacity=opt(
                                "Percent on-demand above the base.", type="int", default=100
                            ),
                            spot_allocation_strategy=opt(
                                "Spot allocation strategy.",
                                choices=[
                                    "lowest-price",
                                    "capacity-optimized",
                                    "capacity-optimized-prioritized",
                                    "price-capacity-optimized",
                                ],
                                default="lowest-price",
                            ),
                            on_demand_allocation_strategy=opt(
                                "On-demand allocation strategy.",
                                choices=["prioritized", "lowest-price"],
                                default="prioritized",
                            ),
                        ),
                    ),
                    overrides=opt(
                        "Instance types to use.",
                        type="list",
                        elements="dict",
                        default=[],
                        options=dict(instance_type=opt("Instance type.", required=True)),
                    ),
                ),
            ),
            suspended_processes=opt(
                "Auto scaling processes to suspend.",
                type="list",
                elements="str",
                default=[],
                choices=[
                    "Launch",
                    "Terminate",
                    "AddToLoadBalancer",
                    "AlarmNotification",
                    "AZRebalance",
                    "HealthCheck",
                    "InstanceRefresh",
                    "ReplaceUnhealthy",
                    "ScheduledActions",
                ],
            ),
            capacity_rebalance=opt("Capacity rebalancing for spot.", type="bool", default=False),
            default_cooldown=opt("Default cooldown (s).", type="int", default=300),
            default_instance_warmup=opt("Default instance warm-up (s).", type="int", default=300),
            refresh_preferences=opt(
                "Instance refresh on template changes.",
                type="dict",
                default={},
                options=dict(
                    disable=opt("Never start a refresh.", type="bool", default=False),
                    min_healthy_percentage=opt("Healthy capacity kept during a refresh.", type="int", default=90),
                    instance_warmup=opt("Warm-up of refreshed instances (s).", type="int"),
                ),
            ),
            drain_on_scale_in=opt(
                "Drain nodes before scale-in through a lifecycle hook (default on for spot pools).", type="bool"
            ),
        ),
    ),
    eks=opt(
        "EKS control plane, node groups and Fargate profiles (kind eks).",
        type="dict",
        default={},
        options=dict(
            name=opt("EKS cluster name; empty means the cluster name.", default=""),
            version=opt("Kubernetes major.minor; upgraded one minor at a time.", default="1.31"),
            role_arn=opt("An existing control-plane role to use.", default=""),
            role_name=opt("Control-plane role to use or create; default <cluster>-iam-service-role.", default=""),
            restrict_private_subnets=opt("Give EKS only the private subnets.", type="bool", default=False),
            endpoint_access=opt(
                "API endpoint access.",
                type="dict",
                default={},
                options=dict(
                    public=opt("Public endpoint.", type="bool", default=True),
                    private=opt("Private endpoint.", type="bool", default=False),
                    public_cidrs=opt(
                        "Who may reach the public endpoint.", type="list", elements="str", default=["0.0.0.0/0"]
                    ),
                ),
            ),
            logging=opt(
                "Control-plane log types to enable.",
                type="dict",
                default={},
                options={
                    kind: opt(f"Send {kind.replace('_', ' ')} logs to CloudWatch.", type="bool", default=False)
                    for kind in ("api_server", "audit", "authenticator", "controller_manager", "scheduler")
                },
            ),
            encryption_config=opt(
                "KMS secrets encryption: can be added, never changed or removed.",
                type="dict",
                default={},
                options=dict(
                    provider=opt("KMS key ARN; empty means none.", default=""),
                    resources=opt("What to encrypt.", type="list", elements="str", default=["secrets"]),
                ),
            ),
            access_config=opt(
                "Authentication mode.",
                type="dict",
                default={},
                options=dict(
                    authentication_mode=opt(
                        "How IAM principals are mapped.",
                        choices=["CONFIG_MAP", "API", "API_AND_CONFIG_MAP"],
                        default="CONFIG_MAP",
                    ),
                    bootstrap_cluster_creator_admin_permissions=opt(
                        "Make the creator an admin.", type="bool", default=True
                    ),
                ),
            ),
            addons=opt(
                "Addons to manage; unset means addons are not managed, [] deletes those the collection installed.",
                type="list",
                elements="dict",
                options=dict(
                    name=opt("Addon name.", required=True),
                    version=opt("Addon version; empty means the default.", default=""),
                    configuration=opt("Configuration values (JSON).", default=""),
                    service_account_role_arn=opt("IRSA role of the addon.", default=""),
                    conflict_resolution=opt(
                        "How to resolve conflicts.", choices=["overwrite", "none", "preserve"], default="overwrite"
                    ),
                ),
            ),
            associate_oidc_provider=opt("Create and own the IAM OIDC provider for IRSA.", type="bool", default=False),
            oidc_thumbprint=opt("Thumbprint of the issuer's root CA; empty means fetch it.", default=""),
            iam_authenticator=opt(
                "aws-auth mappings (and access entries in API modes).",
                type="dict",
                default={},
                options=dict(
                    map_roles=opt(
                        "Role mappings: rolearn, username, groups.", type="list", elements="dict", default=[]
                    ),
                    map_users=opt(
                        "User mappings: userarn, username, groups.", type="list", elements="dict", default=[]
                    ),
                ),
            ),
            node_groups=opt(
                "Managed node groups.",
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=opt("Name, unique in the cluster.", required=True),
                    version=opt("Kubernetes major.minor; default the control plane's.", default=""),
                    release_version=opt("AMI release version.", default=""),
                    scaling=opt(
                        "Size.",
                        type="dict",
                        default={},
                        options=dict(
                            min_size=opt("Minimum.", type="int", default=1),
                            max_size=opt("Maximum.", type="int", default=3),
                            desired_size=opt("Desired.", type="int", default=2),
                        ),
                    ),
                    externally_managed_replicas=opt(
                        "A cluster autoscaler owns desired size.", type="bool", default=False
                    ),
                    instance_types=opt("Instance types.", type="list", elements="str", default=["t3.large"]),
                    capacity_type=opt("Capacity type.", choices=["ON_DEMAND", "SPOT"], default="ON_DEMAND"),
                    ami_type=opt("AMI type.", default="AL2023_x86_64_STANDARD"),
                    disk_size=opt("Root disk GiB.", type="int", default=20),
                    labels=opt("Kubernetes labels.", type="dict", default={}),
                    taints=opt(
                        "Kubernetes taints.",
                        type="list",
                        elements="dict",
                        default=[],
                        options=dict(
                            key=opt("Key.", required=True, no_log=False),
                            value=opt("Value.", default=""),
                            effect=opt(
                                "Effect.",
                                choices=["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"],
                                default="NO_SCHEDULE",
                            ),
                        ),
                    ),
                    update_config=opt(
                        "How many nodes may be replaced at once.",
                        type="dict",
                        default={},
                        options=dict(
                            max_unavailable=opt("Nodes.", type="int"),
                            max_unavailable_percentage=opt("Percent of nodes.", type="int"),
                        ),
                    ),
                    node_role_arn=opt("An existing node role; empty means one is created and owned.", default=""),
                    tags=opt("Extra tags.", type="dict", default={}),
                ),
            ),
            fargate_profiles=opt(
                "Fargate profiles.",
                type="list",
                elements="dict",
                default=[],
                options=dict(
                    name=opt("Name.", required=True),
                    pod_execution_role_arn=opt(
                        "An existing pod execution role; empty means created and owned.", default=""
                    ),
                    selectors=opt(
                        "Which pods run on Fargate.",
                        type="list",
                        elements="dict",
                        default=[],
                        options=dict(
                            namespace=opt("Namespace.", required=True),
                            labels=opt("Pod labels.", type="dict", default={}),
                        ),
                    ),
                    tags=opt("Extra tags.", type="dict", default={}),
                ),
            ),
        ),
    ),
)


def argument_spec(options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``CLUSTER_OPTIONS`` without descriptions: what AnsibleModule takes as ``options``."""
    result = {}
    for name, option in (options if options is not None else CLUSTER_OPTIONS).items():
        option = {k: copy.deepcopy(v) for k, v in option.items() if k != "description"}
        if "options" in option:
            option["options"] = argument_spec(option["options"])
        result[name] = option
    return result


def roles_for(kind: str) -> tuple[str, ...]:
    return EKS_ROLES if kind == "eks" else UNMANAGED_ROLES


def check_cluster(cluster: dict[str, Any], default_region: str | None) -> None:
    """Everything an argument spec cannot check, each error naming the field (``capa_cluster.<path>``)."""
    check_cluster_name(cluster["name"], "capa_cluster.name")
    check_tags(cluster["additional_tags"], "capa_cluster.additional_tags")
    region = cluster.get("region") or default_region
    if not region:
        raise SpecError("capa_cluster.region", "no region given here nor in AWS_REGION / AWS_DEFAULT_REGION")
    _check_network(cluster["network"], region, cluster["kind"])
    for index, cidr in enumerate(cluster["bastion"]["allowed_cidr_blocks"]):
        _check_source_cidr(cidr, f"capa_cluster.bastion.allowed_cidr_blocks[{index}]")
    _check_kind_sections(cluster)
    if cluster["kind"] == "eks":
        _check_eks(cluster)
    else:
        if not KUBERNETES_VERSION.match(cluster["kubernetes_version"] or ""):
            raise SpecError(
                "capa_cluster.kubernetes_version",
                f"'{cluster['kubernetes_version']}' is not a Kubernetes version like v1.31.2",
            )
        _check_load_balancer(cluster)
    _check_machines(cluster, region)
    _check_machine_pools(cluster, region)


def defaults(options: dict[str, Any]) -> dict[str, Any]:
    """What the argument spec fills in for a section given as ``{}``: a section equal to it was not written."""
    result: dict[str, Any] = {}
    for name, option in options.items():
        if "options" in option and option.get("default") == {}:
            result[name] = defaults(option["options"])
        else:
            result[name] = copy.deepcopy(option.get("default"))
    return result


# Sections only one kind uses: the other kind would silently ignore them, so writing them is a mistake.
KIND_SECTIONS = {"unmanaged": ("eks",), "eks": ("control_plane", "machine_deployments")}


def _check_kind_sections(cluster: dict[str, Any]) -> None:
    for section in KIND_SECTIONS[cluster["kind"]]:
        option = CLUSTER_OPTIONS[section]
        unset = defaults(option["options"]) if option["type"] == "dict" else option.get("default")
        if cluster[section] != unset:
            raise SpecError(f"capa_cluster.{section}", f"is not used by kind {cluster['kind']}; remove it")


def _check_eks(cluster: dict[str, Any]) -> None:
    eks = cluster["eks"]
    field = "capa_cluster.eks"
    if not re.match(r"^1\.\d{1,2}$", eks["version"]):
        raise SpecError(f"{field}.version", f"'{eks['version']}' is not a Kubernetes major.minor version like 1.31")
    network = cluster["network"]
    if not network["subnets"] and network["vpc"]["availability_zone_usage_limit"] < 2:
        raise SpecError("capa_cluster.network.vpc.availability_zone_usage_limit", "EKS needs subnets in at least 2 AZs")
    if eks["role_arn"] and eks["role_name"]:
        raise SpecError(f"{field}.role_arn", "give role_arn or role_name, not both")
    for key in ("node_groups", "fargate_profiles"):
        names: set[str] = set()
        for index, item in enumerate(eks[key]):
            where = f"{field}.{key}[{index}].name"
            check_cluster_name(item["name"], where)
            if item["name"] in names:
                raise SpecError(where, f"'{item['name']}' is used twice")
            names.add(item["name"])
    for index, group in enumerate(eks["node_groups"]):
        scaling = group["scaling"]
        where = f"{field}.node_groups[{index}].scaling"
        if not 0 <= scaling["min_size"] <= scaling["max_size"]:
            raise SpecError(where, "needs 0 <= min_size <= max_size")
        if not scaling["min_size"] <= scaling["desired_size"] <= scaling["max_size"]:
            raise SpecError(f"{where}.desired_size", "must lie between min_size and max_size")
    control_plane = tuple(int(part) for part in eks["version"].split("."))
    for index, group in enumerate(eks["node_groups"]):
        where = f"{field}.node_groups[{index}].version"
        if not group["version"]:
            continue
        if not re.match(r"^1\.\d{1,2}$", group["version"]):
            raise SpecError(where, f"'{group['version']}' is not a Kubernetes major.minor version like 1.31")
        # Kubernetes' version skew policy: kubelets never newer than the API server, at most 3 minors older.
        minor = int(group["version"].split(".")[1])
        if not control_plane[1] - 3 <= minor <= control_plane[1]:
            raise SpecError(
                where, f"'{group['version']}' must be the control plane's {eks['version']} or up to 3 minors older"
            )
    for index, cidr in enumerate(eks["endpoint_access"]["public_cidrs"]):
        _check_source_cidr(cidr, f"{field}.endpoint_access.public_cidrs[{index}]")
    for index, profile in enumerate(eks["fargate_profiles"]):
        if not profile["selectors"]:
            raise SpecError(f"{field}.fargate_profiles[{index}].selectors", "needs at least one selector")


def _check_machine_pools(cluster: dict[str, Any], region: str) -> None:
    names: set[str] = set()
    for index, pool in enumerate(cluster["machine_pools"]):
        where = f"capa_cluster.machine_pools[{index}]"
        if not 3 <= len(pool["name"]) <= 128 or not re.match(r"^[a-z0-9][a-z0-9-]*$", pool["name"]):
            raise SpecError(f"{where}.name", f"'{pool['name']}': 3 to 128 lower-case letters, digits and -")
        if pool["name"] in names:
            raise SpecError(f"{where}.name", f"'{pool['name']}' is used twice")
        names.add(pool["name"])
        if pool["min_size"] < 0:
            raise SpecError(f"{where}.min_size", "must not be negative")
        if pool["max_size"] < pool["min_size"]:
            raise SpecError(f"{where}.max_size", f"{pool['max_size']} is less than min_size {pool['min_size']}")
        desired = pool["desired_capacity"]
        # Also with externally managed replicas: the first desired capacity still has to fit the group.
        if desired is not None and not pool["min_size"] <= desired <= pool["max_size"]:
            raise SpecError(f"{where}.desired_capacity", "must lie between min_size and max_size")
        check_availability_zones(pool["failure_domains"], region, f"{where}.failure_domains")
        _check_machine(pool, where)
        if pool["spot_market_options"] is not None and pool["mixed_instances_policy"]:
            raise SpecError(where, "spot_market_options and mixed_instances_policy exclude each other")
        distribution = (pool["mixed_instances_policy"] or {}).get("instances_distribution") or {}
        if distribution.get("on_demand_base_capacity", 0) < 0:
            raise SpecError(
                f"{where}.mixed_instances_policy.instances_distribution.on_demand_base_capacity", "must not be negative"
            )
        if not 0 <= distribution.get("on_demand_percentage_above_base_capacity", 100) <= 100:
            raise SpecError(
                f"{where}.mixed_instances_policy.instances_distribution.on_demand_percentage_above_base_capacity",
                "is a percentage: 0 to 100",
            )
        if pool["kind"] == "fleet" and not (pool["mixed_instances_policy"] or {}).get("overrides"):
            raise SpecError(f"{where}.mixed_instances_policy.overrides", "a fleet needs its instance types listed here")


def _check_load_balancer(cluster: dict[str, Any]) -> None:
    balancer = cluster["control_plane_load_balancer"]
    field = "capa_cluster.control_plane_load_balancer"
    if balancer["type"] == "external" and not balancer["name"]:
        raise SpecError(f"{field}.name", "an external load balancer is given by its name")
    if balancer["type"] == "disabled" and not cluster["control_plane_endpoint"]["host"]:
        raise SpecError(
            "capa_cluster.control_plane_endpoint.host",
            "with no load balancer (type disabled), the API endpoint must be given here",
        )
    if balancer["additional_listeners"] and balancer["type"] != "nlb":
        raise SpecError(f"{field}.additional_listeners", "additional listeners need type nlb")
    if len(balancer["name"]) > 32:
        raise SpecError(f"{field}.name", "load balancer names are at most 32 characters")
    if balancer["name"] and not LB_NAME.match(balancer["name"]):
        raise SpecError(
            f"{field}.name", f"'{balancer['name']}' must be letters, digits and '-', not starting or ending with '-'"
        )
    if balancer["preserve_client_ip"] and balancer["type"] != "nlb":
        raise SpecError(f"{field}.preserve_client_ip", "client IP preservation is a setting of type nlb only")
    for index, rule in enumerate(balancer["ingress_rules"]):
        check_rule(rule, f"{field}.ingress_rules[{index}]")
    port = cluster["control_plane_endpoint"]["port"]
    if not 1 <= port <= 65535:
        raise SpecError("capa_cluster.control_plane_endpoint.port", f"{port} is not a port number")


def _check_network(network: dict[str, Any], region: str, kind: str) -> None:
    vpc = network["vpc"]
    field = "capa_cluster.network"
    check_resource_id(vpc["id"], "vpc", f"{field}.vpc.id")
    vpc_cidrs = []
    if not vpc["id"]:
        vpc_cidrs.append(str(check_vpc_cidr(vpc["cidr_block"], f"{field}.vpc.cidr_block")))
        blocks = [ipaddress.ip_network(vpc_cidrs[0])]
        for index, cidr in enumerate(vpc["secondary_cidr_blocks"]):
            block = check_vpc_cidr(cidr, f"{field}.vpc.secondary_cidr_blocks[{index}]")
            clash = next((other for other in blocks if block.overlaps(other)), None)
            if clash is not None:
                raise SpecError(f"{field}.vpc.secondary_cidr_blocks[{index}]", f"'{cidr}' overlaps '{clash}'")
            blocks.append(block)
            vpc_cidrs.append(cidr)
    if vpc["availability_zone_usage_limit"] < 1:
        raise SpecError(f"{field}.vpc.availability_zone_usage_limit", "must be at least 1")
    _check_subnets(network["subnets"], vpc_cidrs, bool(vpc["id"]), region, f"{field}.subnets")
    _check_cni(network["cni_ingress_rules"], f"{field}.cni_ingress_rules")
    roles = roles_for(kind)
    for role, group_id in network["security_group_overrides"].items():
        if role not in roles:
            raise SpecError(
                f"{field}.security_group_overrides.{role}", f"is not a security group role ({', '.join(roles)})"
            )
        check_resource_id(group_id, "sg", f"{field}.security_group_overrides.{role}")
    for key in ("additional_control_plane_ingress_rules", "additional_node_ingress_rules"):
        for index, rule in enumerate(network[key]):
            check_rule(rule, f"{field}.{key}[{index}]", roles)
    for index, cidr in enumerate(network["node_port_ingress_cidr_blocks"]):
        _check_source_cidr(cidr, f"{field}.node_port_ingress_cidr_blocks[{index}]")


def _check_subnets(subnets: list[dict[str, Any]], vpc_cidrs: list[str], byo_vpc: bool, region: str, field: str) -> None:
    if byo_vpc and not subnets:
        raise SpecError(field, "a VPC you bring (network.vpc.id) needs its subnets listed by id")
    for index, subnet in enumerate(subnets):
        where = f"{field}[{index}]"
        if subnet.get("id"):
            check_resource_id(subnet["id"], "subnet", f"{where}.id")
            continue
        if byo_vpc:
            raise SpecError(where, "subnets of a VPC you bring must be given by id; the collection creates none there")
        if not subnet.get("availability_zone") or not subnet.get("cidr_block"):
            raise SpecError(where, "give either id, or availability_zone and cidr_block")
        check_availability_zone(subnet["availability_zone"], region, f"{where}.availability_zone")
    check_subnet_cidrs(subnets, vpc_cidrs, field)
    if subnets and not byo_vpc and not any(s.get("is_public") for s in subnets if not s.get("id")):
        if not any(s.get("id") for s in subnets):
            raise SpecError(field, "a managed VPC needs at least one public subnet (is_public: true)")


def _check_cni(rules: Any, field: str) -> None:
    if rules in ("calico", "none", None):
        return
    if not isinstance(rules, list):
        raise SpecError(field, "must be 'calico', 'none' or a list of rules")
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise SpecError(f"{field}[{index}]", "must be a rule with description, protocol, from_port and to_port")
        unknown = set(rule) - {"description", "protocol", "from_port", "to_port"}
        if unknown:
            raise SpecError(f"{field}[{index}]", f"unknown key(s) {', '.join(sorted(unknown))}")
        protocol = str(rule.get("protocol", "tcp"))
        if protocol not in PROTOCOLS:
            raise SpecError(f"{field}[{index}].protocol", f"'{protocol}' is not one of {', '.join(PROTOCOLS)}")
        check_port_range(rule.get("from_port"), rule.get("to_port"), protocol, f"{field}[{index}]")


def check_rule(rule: dict[str, Any], field: str, roles: tuple[str, ...] = UNMANAGED_ROLES) -> None:
    check_port_range(rule.get("from_port"), rule.get("to_port"), rule.get("protocol") or "tcp", field)
    for index, cidr in enumerate(rule.get("cidr_blocks") or []):
        _check_source_cidr(cidr, f"{field}.cidr_blocks[{index}]")
    for index, group_id in enumerate(rule.get("source_security_group_ids") or []):
        check_resource_id(group_id, "sg", f"{field}.source_security_group_ids[{index}]")
    for index, role in enumerate(rule.get("source_security_group_roles") or []):
        if role not in roles:
            raise SpecError(
                f"{field}.source_security_group_roles[{index}]", f"'{role}' is not one of {', '.join(roles)}"
            )


def _check_source_cidr(cidr: str, field: str) -> None:
    try:
        ipaddress.ip_network(cidr, strict=True)
    except ValueError as e:
        raise SpecError(field, f"'{cidr}' is not a valid CIDR block ({e})") from None


def _check_max_unhealthy(value: Any, field: str) -> None:
    try:
        parse_max_unhealthy(value)
    except ValueError:
        raise SpecError(field, f"'{value}' is not a count (like 2) or a percentage up to 100% (like 40%)") from None


def _check_machines(cluster: dict[str, Any], region: str) -> None:
    control_plane = cluster["control_plane"]
    _check_max_unhealthy(control_plane.get("max_unhealthy"), "capa_cluster.control_plane.max_unhealthy")
    replicas = control_plane["replicas"]
    if replicas < 1 or replicas % 2 == 0:
        raise SpecError(
            "capa_cluster.control_plane.replicas", f"{replicas}: etcd needs an odd number of members (1, 3, 5)"
        )
    if control_plane["rollout"]["max_surge"] not in (0, 1):
        # KubeadmControlPlane's rule: etcd membership changes one member at a time.
        raise SpecError("capa_cluster.control_plane.rollout.max_surge", "must be 0 or 1")
    _check_machine(control_plane, "capa_cluster.control_plane")
    names: set[str] = set()
    for index, deployment in enumerate(cluster["machine_deployments"]):
        where = f"capa_cluster.machine_deployments[{index}]"
        check_cluster_name(deployment["name"], f"{where}.name")
        if deployment["name"] in names:
            raise SpecError(f"{where}.name", f"'{deployment['name']}' is used twice")
        names.add(deployment["name"])
        check_availability_zones(deployment["failure_domains"], region, f"{where}.failure_domains")
        _check_machine(deployment, where)
        if deployment["replicas"] < 0:
            raise SpecError(f"{where}.replicas", "must not be negative")
        _check_max_unhealthy(deployment.get("max_unhealthy"), f"{where}.max_unhealthy")
        rollout = deployment["rollout"]
        if rollout["max_surge"] < 0 or rollout["max_unavailable"] < 0:
            raise SpecError(f"{where}.rollout", "max_surge and max_unavailable must not be negative")
        if rollout["max_surge"] == 0 and rollout["max_unavailable"] == 0:
            raise SpecError(
                f"{where}.rollout", "max_surge and max_unavailable cannot both be 0: a rollout could never start"
            )


def _check_machine(machine: dict[str, Any], where: str) -> None:
    """What every group of machines shares: root volume, instance metadata, spot."""
    volume = machine["root_volume"]
    low, high = ROOT_VOLUME_GIB
    if not low <= volume["size"] <= high:
        raise SpecError(f"{where}.root_volume.size", f"{volume['size']} GiB: a root volume is {low} to {high} GiB")
    if volume["type"] not in ROOT_VOLUME_TYPES:
        raise SpecError(f"{where}.root_volume.type", f"'{volume['type']}' is not one of {', '.join(ROOT_VOLUME_TYPES)}")
    hops = machine["imds"]["http_put_response_hop_limit"]
    if not 1 <= hops <= 64:
        raise SpecError(f"{where}.imds.http_put_response_hop_limit", f"{hops} is not between 1 and 64")
    spot = machine["spot_market_options"]
    if spot is None:
        return
    if spot["max_price"] and not re.match(r"^\d+(\.\d+)?$", spot["max_price"]):
        raise SpecError(f"{where}.spot_market_options.max_price", f"'{spot['max_price']}' is not a price in USD")
    if machine.get("tenancy") == "host":
        raise SpecError(f"{where}.spot_market_options", "spot instances cannot run on dedicated hosts (tenancy host)")


__all__ = ["CLUSTER_OPTIONS", "argument_spec", "check_cluster", "check_rule", "parse_cidr", "roles_for"]
