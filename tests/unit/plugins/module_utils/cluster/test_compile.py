"""The cluster spec compiled into the parameters of every module call (cluster/compile.py), table-driven: for
representative specs, the exact parameters of each step - the CAPA rules the roles used to apply in Jinja (security
groups per machine role, load balancer registrations, the API endpoint, fleet capacity, bootstrap per pool kind, ssh
key inheritance, kind-dependent sections) - and the references that fill in earlier results."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import cluster_info
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_spec import (
    invalid_message,
    module_argument_spec,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.compile import (
    BASTION_GROUP,
    CONTROL_PLANE_GROUP,
    UnresolvedReference,
    compile_cluster,
    leftover_groups,
    ref,
    resolve,
    unresolved,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError

BASE = {"cluster_name": "demo", "region": "us-east-1"}
MACHINE = {
    "ami": {},
    "instance_type": "t3.large",
    "root_volume": {"size": 80, "type": "gp3", "encrypted": True},
    "imds": {"http_tokens": "required", "http_put_response_hop_limit": 1},
}
KUBEADM_VIA_CONTROL_PLANE = {
    "type": "kubeadm",
    "endpoint_host": ref("control_plane.endpoint.host"),
    "endpoint_port": ref("control_plane.endpoint.port"),
    "backend": "secrets-manager",
    # CABPK's default: each machine's own bootstrap token lives 15 minutes (renewed while it has not joined).
    "token_ttl": 900,
}


def groups(*roles: str) -> list[dict[str, Any]]:
    return [ref(f"network.security_groups.{role}.id") for role in roles]


def steps(spec: dict[str, Any], state: str | None = None, output_dir: str = "/out") -> dict[str, Any]:
    validated = ArgumentSpecValidator(module_argument_spec()).validate({"cluster": {"region": "us-east-1", **spec}})
    assert not validated.error_messages, validated.error_messages
    return compile_cluster(validated.validated_parameters["cluster"], None, state, output_dir)["steps"]


# a self-managed cluster with CAPA's defaults -----------------------------------------------------------------------
def test_the_default_cluster():
    compiled = steps({"name": "demo"})
    assert {k: compiled[k] for k in ("cluster", "kind", "region", "state", "output_dir")} == {
        "cluster": "demo",
        "kind": "unmanaged",
        "region": "us-east-1",
        "state": "present",
        "output_dir": "/out/demo",
    }
    assert compiled["network"] == {
        "vpc": {**BASE, "cidr_block": "10.0.0.0/16", "secondary_cidr_blocks": []},
        "subnet": {
            **BASE,
            "vpc_id": ref("vpc.vpc.id"),
            "vpc_cidr_block": ref("vpc.vpc.cidr_block"),
            "internet_gateway_id": ref("vpc.vpc.internet_gateway_id", optional=True),
            "subnets": [],
            "availability_zone_usage_limit": 3,
            "availability_zone_selection": "Ordered",
            "nat_gateways": "per_az",
        },
        "security_group": {
            **BASE,
            "vpc_id": ref("vpc.vpc.id"),
            "vpc_cidr_block": ref("vpc.vpc.cidr_block"),
            "kind": "unmanaged",
            "bastion": {"enabled": False, "allowed_cidr_blocks": ["0.0.0.0/0"]},
            "cni_ingress_rules": "calico",
            "additional_control_plane_ingress_rules": [],
            "additional_node_ingress_rules": [],
            "node_port_ingress_cidr_blocks": ["0.0.0.0/0"],
            "control_plane_load_balancer": {
                "type": "classic",
                "scheme": "internet-facing",
                "ingress_rules": [],
                "additional_listeners": [],
                "preserve_client_ip": False,
            },
            "nat_gateway_ips": ref("subnet.nat_gateway_ips"),
            "security_group_overrides": {},
        },
    }
    # No bastion wanted: the module removes one that exists.
    assert compiled["bastion"] == {
        "instance": {
            **BASE,
            "state": "absent",
            "name": "bastion",
            "role": "bastion",
            "replicas": 1,
            "subnets": [],
            "public_ip": True,
            "instance_type": "t3.micro",
            "ami": {},
            "security_group_ids": [],
            "bootstrap": {"type": "none"},
        }
    }
    assert compiled["control_plane"] == {
        "elb": {
            **BASE,
            "vpc_id": ref("network.vpc.id"),
            "subnets": ref("network.subnets"),
            "security_group_ids": groups("apiserver-lb"),
            "type": "classic",
            "scheme": "internet-facing",
            "health_check_protocol": "TCP",
            "additional_listeners": [],
            "cross_zone_load_balancing": False,
            "preserve_client_ip": False,
        },
        "endpoint": ref("elb.endpoint"),
        "kubeadm": {**BASE, "kubernetes_version": "v1.31.2", "endpoint": ref("elb.endpoint"), "output_dir": "/out"},
        "instance": {
            **BASE,
            "name": "control-plane",
            "role": "control-plane",
            "replicas": 1,
            "subnets": ref("network.subnets"),
            "kubernetes_version": "v1.31.2",
            **MACHINE,
            "tenancy": "default",
            # CAPA's control-plane groups: node + lb + controlplane.
            "security_group_ids": groups("node", "lb", "controlplane"),
            "bootstrap": {
                "type": "kubeadm",
                "endpoint_host": ref("elb.endpoint.host"),
                "endpoint_port": ref("elb.endpoint.port"),
                "backend": "secrets-manager",
                "token_ttl": 900,
            },
            "load_balancers": [ref("elb.load_balancer"), ref("elb.secondary_load_balancer", optional=True)],
            "rollout": {"max_surge": 1, "max_unavailable": 0},
            # CAPI's MachineHealthCheck: no node condition by default, a Node within 600 s of the launch.
            "max_unhealthy": "100%",
            "unhealthy_node_conditions": [],
            "node_startup_timeout": 600,
            # The Kubernetes side: the cluster's API settings, CAPI's drain and volume-detach timeouts.
            "kubernetes_api": {"mode": "auto", "timeout": 10},
            "node_drain_timeout": 0,
            "node_volume_detach_timeout": 0,
        },
    }
    assert compiled["machine_deployment"] == {"instances": [], "names": []}
    assert compiled["machine_pool"] == {"asg": [], "fleet": [], "names": []}
    assert compiled["eks_control_plane"] is None and compiled["eks_node_groups"] is None
    assert compiled["external_resources"] is None
    assert compiled["cluster_info"]["spec"]["name"] == "demo" and compiled["cluster_info"]["cluster_name"] == "demo"


# the cluster's values, ssh keys, workers ----------------------------------------------------------------------------
IDENTITY = {"role_arn": "arn:aws:iam::111111111111:role/capa", "external_id": "x-1"}


def test_cluster_values_and_ssh_keys_reach_every_machine():
    """identity and additional_tags go to every step; a machine without its own key gets the cluster's."""
    compiled = steps(
        {
            "name": "demo",
            "identity": IDENTITY,
            "additional_tags": {"team": "platform"},
            "ssh_key_name": "ops",
            "bastion": {"enabled": True, "allowed_cidr_blocks": ["203.0.113.0/24"], "ami_id": "ami-0123456789abcdef0"},
            "control_plane": {"replicas": 3, "ssh_key_name": "cp-key", "iam_instance_profile": "control-plane.x"},
            "machine_deployments": [
                {
                    "name": "md-0",
                    "replicas": 2,
                    "failure_domains": ["us-east-1b"],
                    "additional_security_group_ids": ["sg-0123456789abcdef0"],
                    "spot_market_options": {},
                    "rollout": {"deletion_policy": "Oldest"},
                }
            ],
        }
    )
    common = {**BASE, "identity": {**IDENTITY, "duration_seconds": 3600}, "additional_tags": {"team": "platform"}}
    assert compiled["network"]["vpc"] == {**common, "cidr_block": "10.0.0.0/16", "secondary_cidr_blocks": []}
    assert compiled["network"]["security_group"]["bastion"] == {
        "enabled": True,
        "allowed_cidr_blocks": ["203.0.113.0/24"],
    }
    assert compiled["bastion"]["instance"] == {
        **common,
        "state": "present",
        "name": "bastion",
        "role": "bastion",
        "replicas": 1,
        "subnets": ref("network.subnets"),
        "public_ip": True,
        "instance_type": "t3.micro",
        "ami": {"id": "ami-0123456789abcdef0"},
        "ssh_key_name": "ops",
        "security_group_ids": groups("bastion"),
        "bootstrap": {"type": "none"},
    }
    control_plane = compiled["control_plane"]["instance"]
    assert (control_plane["ssh_key_name"], control_plane["replicas"]) == ("cp-key", 3)
    assert control_plane["iam_instance_profile"] == "control-plane.x"
    assert compiled["machine_deployment"] == {
        "instances": [
            {
                **common,
                "name": "md-0",
                "role": "node",
                "replicas": 2,
                "subnets": ref("network.subnets"),
                "failure_domains": ["us-east-1b"],
                "kubernetes_version": "v1.31.2",
                **MACHINE,
                "ssh_key_name": "ops",
                "spot_market_options": {},
                "tenancy": "default",
                # CAPA's worker groups: node + lb, then the deployment's own.
                "security_group_ids": groups("node", "lb") + ["sg-0123456789abcdef0"],
                "bootstrap": KUBEADM_VIA_CONTROL_PLANE,
                "rollout": {"max_surge": 1, "max_unavailable": 0, "deletion_policy": "Oldest"},
                "max_unhealthy": "100%",
                "unhealthy_node_conditions": [],
                "node_startup_timeout": 600,
                "kubernetes_api": {"mode": "auto", "timeout": 10},
                "node_drain_timeout": 0,
                "node_volume_detach_timeout": 0,
                "min_ready_seconds": 0,
            }
        ],
        "names": ["md-0"],
    }


@pytest.mark.parametrize(
    "balancer, endpoint, registrations",
    [
        (
            {"type": "classic"},
            ref("elb.endpoint"),
            [ref("elb.load_balancer"), ref("elb.secondary_load_balancer", True)],
        ),
        ({"type": "nlb"}, ref("elb.endpoint"), [ref("elb.load_balancer"), ref("elb.secondary_load_balancer", True)]),
        (
            {"type": "external", "name": "team-api"},
            ref("elb.endpoint"),
            [ref("elb.load_balancer"), ref("elb.secondary_load_balancer", True)],
        ),  # noqa: E501
        ({"type": "disabled"}, {"host": "api.example.internal", "port": 6443}, []),
    ],
    ids=["classic", "nlb", "external", "disabled"],
)
def test_the_endpoint_and_the_registrations_of_a_control_plane(balancer, endpoint, registrations):
    """The load balancer's endpoint, or the spec's when there is none; machines register with what capa_elb
    returns, and with nothing when the load balancer is disabled."""
    compiled = steps(
        {
            "name": "demo",
            "control_plane_load_balancer": balancer,
            "control_plane_endpoint": {"host": "api.example.internal"} if balancer["type"] == "disabled" else {},
        }
    )["control_plane"]
    assert compiled["endpoint"] == endpoint and compiled["kubeadm"]["endpoint"] == endpoint
    assert compiled["instance"]["load_balancers"] == registrations
    bootstrap = compiled["instance"]["bootstrap"]
    if balancer["type"] == "disabled":
        assert (bootstrap["endpoint_host"], bootstrap["endpoint_port"]) == ("api.example.internal", 6443)
    else:
        assert (bootstrap["endpoint_host"], bootstrap["endpoint_port"]) == (
            ref("elb.endpoint.host"),
            ref("elb.endpoint.port"),
        )
    assert compiled["elb"]["type"] == balancer["type"] and compiled["elb"].get("name") == balancer.get("name")


# machine pools -----------------------------------------------------------------------------------------------------
POOLS = [
    {
        "name": "mp-0",
        "min_size": 1,
        "max_size": 4,
        "desired_capacity": 2,
        "mixed_instances_policy": {
            "instances_distribution": {"on_demand_base_capacity": 1, "on_demand_percentage_above_base_capacity": 0},
            "overrides": [{"instance_type": "t3.large"}, {"instance_type": "m5.large"}],
        },
    },
    {
        "name": "fp-0",
        "kind": "fleet",
        "min_size": 1,
        "max_size": 4,
        "ssh_key_name": "pool-key",
        "mixed_instances_policy": {
            "instances_distribution": {"on_demand_base_capacity": 1, "spot_allocation_strategy": "capacity-optimized"},
            "overrides": [{"instance_type": "t3.large"}, {"instance_type": "m5.large"}],
        },
    },
]
POOL_COMMON = {"subnets": ref("network.subnets"), "kubernetes_version": "v1.31.2", **MACHINE}


def test_an_auto_scaling_group_pool_and_a_fleet():
    compiled = steps({"name": "demo", "ssh_key_name": "ops", "machine_pools": POOLS})["machine_pool"]
    distribution = {
        "on_demand_base_capacity": 1,
        "on_demand_percentage_above_base_capacity": 0,
        "spot_allocation_strategy": "lowest-price",
        "on_demand_allocation_strategy": "prioritized",
    }
    assert compiled["asg"] == [
        {
            **BASE,
            "name": "mp-0",
            **POOL_COMMON,
            "ssh_key_name": "ops",
            "security_group_ids": groups("node", "lb"),
            # A pool's join token lives a day (rotated at half its life) and is minted through the cluster's API.
            "bootstrap": {**KUBEADM_VIA_CONTROL_PLANE, "token_ttl": 86400},
            "kubernetes_api": {"mode": "auto", "timeout": 10},
            "min_size": 1,
            "max_size": 4,
            "desired_capacity": 2,
            "externally_managed_replicas": False,
            "mixed_instances_policy": {
                "instances_distribution": distribution,
                "overrides": [{"instance_type": "t3.large"}, {"instance_type": "m5.large"}],
            },
            "suspended_processes": [],
            "capacity_rebalance": False,
            "default_cooldown": 300,
            "default_instance_warmup": 300,
            "refresh_preferences": {"disable": False, "min_healthy_percentage": 90},
            "lifecycle_hooks": [],
        }
    ]
    # The fleet: target = desired capacity, else min size; on-demand = the distribution's base; types = overrides.
    assert compiled["fleet"] == [
        {
            **BASE,
            "name": "fp-0",
            **POOL_COMMON,
            "ssh_key_name": "pool-key",
            "security_group_ids": groups("node", "lb"),
            # A pool's join token lives a day (rotated at half its life) and is minted through the cluster's API.
            "bootstrap": {**KUBEADM_VIA_CONTROL_PLANE, "token_ttl": 86400},
            "kubernetes_api": {"mode": "auto", "timeout": 10},
            "total_target_capacity": 1,
            "on_demand_target_capacity": 1,
            "instance_types": ["t3.large", "m5.large"],
            "spot_allocation_strategy": "capacity-optimized",
        }
    ]
    assert compiled["names"] == ["mp-0"]


# EKS ---------------------------------------------------------------------------------------------------------------
EKS = {
    "name": "demo",
    "kind": "eks",
    "network": {"vpc": {"availability_zone_usage_limit": 2}},
    "eks": {
        "version": "1.30",
        "associate_oidc_provider": True,
        "node_groups": [{"name": "ng-0", "update_config": {"max_unavailable": 1}, "taints": [{"key": "gpu"}]}],
        "fargate_profiles": [{"name": "fp-0", "selectors": [{"namespace": "default"}]}],
    },
    "machine_pools": [
        {
            "name": "eks-mp-0",
            "min_size": 1,
            "max_size": 2,
            "failure_domains": ["us-east-1a"],
            "iam_instance_profile": "nodes.cluster-api-provider-aws.sigs.k8s.io",
        }
    ],
}


def test_an_eks_cluster():
    compiled = steps(EKS)
    assert compiled["control_plane"] is None
    assert compiled["machine_deployment"] == {"instances": [], "names": []}
    assert compiled["network"]["security_group"]["kind"] == "eks"
    assert compiled["eks_control_plane"] == {
        "cluster": {
            **BASE,
            "state": "present",
            "version": "1.30",
            "subnets": ref("network.subnets"),
            "restrict_private_subnets": False,
            "security_group_ids": groups("node-eks-additional"),
            "endpoint_access": {"public": True, "private": False, "public_cidrs": ["0.0.0.0/0"]},
            "logging": {
                "api_server": False,
                "audit": False,
                "authenticator": False,
                "controller_manager": False,
                "scheduler": False,
            },
            "access_config": {"authentication_mode": "CONFIG_MAP", "bootstrap_cluster_creator_admin_permissions": True},
            "associate_oidc_provider": True,
            "iam_authenticator": {"map_roles": [], "map_users": []},
            # The pool's nodes join as its instance profile's role: the cluster maps it, as CAPA does.
            "node_instance_profiles": ["nodes.cluster-api-provider-aws.sigs.k8s.io"],
            "output_dir": "/out",
            "kubernetes_api": {"mode": "auto", "timeout": 10},  # aws-auth is applied through the API
        }
    }
    assert compiled["eks_node_groups"] == {
        "node_groups": [
            {
                **BASE,
                "name": "ng-0",
                "eks_cluster_name": "demo",
                "scaling": {"min_size": 1, "max_size": 3, "desired_size": 2},
                "externally_managed_replicas": False,
                "instance_types": ["t3.large"],
                "capacity_type": "ON_DEMAND",
                "ami_type": "AL2023_x86_64_STANDARD",
                "disk_size": 20,
                "labels": {},
                "taints": [{"key": "gpu", "effect": "NO_SCHEDULE"}],
                "update_config": {"max_unavailable": 1},
                "subnets": ref("network.subnets"),
                "tags": {},
                "kubernetes_api": {"mode": "auto", "timeout": 10},  # its Nodes are awaited through the API
            }
        ],
        "fargate_profiles": [
            {
                **BASE,
                "name": "fp-0",
                "eks_cluster_name": "demo",
                # Fargate runs in the private subnets only.
                "subnets": ref("network.subnets", where={"is_public": False}),
                "selectors": [{"namespace": "default", "labels": {}}],
                "tags": {},
            }
        ],
    }
    # Self-managed EKS nodes: the EKS minor, nodeadm bootstrap, node-eks-additional + the EKS cluster's group.
    assert compiled["machine_pool"]["asg"] == [
        {
            **BASE,
            "name": "eks-mp-0",
            **POOL_COMMON,
            "failure_domains": ["us-east-1a"],
            "iam_instance_profile": "nodes.cluster-api-provider-aws.sigs.k8s.io",
            "kubernetes_version": "1.30",
            "security_group_ids": groups("node-eks-additional")
            + [ref("eks_control_plane.cluster.security_group_id", optional=True)],
            "bootstrap": {"type": "eks", "eks_cluster_name": "demo", "backend": "secrets-manager"},
            # Its Nodes are awaited through the API (a token of the run; the cluster maps the pool's profile).
            "kubernetes_api": {"mode": "auto", "timeout": 10},
            "min_size": 1,
            "max_size": 2,
            "externally_managed_replicas": False,
            "suspended_processes": [],
            "capacity_rebalance": False,
            "default_cooldown": 300,
            "default_instance_warmup": 300,
            "refresh_preferences": {"disable": False, "min_healthy_percentage": 90},
            "lifecycle_hooks": [],
        }
    ]


def test_eks_optional_settings_reach_the_module_only_when_set():
    spec = {**EKS, "eks": {**EKS["eks"], "name": "other", "role_name": "r", "addons": [], "oidc_thumbprint": "ab" * 20}}
    spec["eks"]["encryption_config"] = {"provider": "arn:aws:kms:us-east-1:111111111111:key/k"}
    cluster = steps(spec)["eks_control_plane"]["cluster"]
    assert (cluster["name"], cluster["role_name"], cluster["addons"]) == ("other", "r", [])
    assert cluster["encryption_config"] == {
        "provider": "arn:aws:kms:us-east-1:111111111111:key/k",
        "resources": ["secrets"],
    }
    assert "role_arn" not in cluster and cluster["oidc_thumbprint"] == "ab" * 20
    assert steps(spec)["machine_pool"]["asg"][0]["bootstrap"]["eks_cluster_name"] == "other"


# deletion ------------------------------------------------------------------------------------------------------------
def test_what_deletion_runs():
    compiled = steps(
        {
            "name": "demo",
            "network": {"vpc": {"id": "vpc-0123456789abcdef0"}, "subnets": [{"id": "subnet-0123456789abcdef0"}]},
            "control_plane_load_balancer": {"type": "external", "name": "team-api"},
            "bastion": {"enabled": True},
            "machine_deployments": [{"name": "md-0"}],
            "machine_pools": POOLS,
        },
        state="absent",
    )
    assert compiled["state"] == "absent"
    gone = {**BASE, "state": "absent"}
    assert compiled["network"] == {
        "security_group": {
            **gone,
            "vpc_id": "vpc-0123456789abcdef0",
            "kind": "unmanaged",
            "security_group_overrides": {},
        },
        "subnet": {
            **gone,
            "vpc_id": "vpc-0123456789abcdef0",
            "subnets": [{"id": "subnet-0123456789abcdef0", "is_public": False, "tags": {}}],
        },
        "vpc": {**gone, "id": "vpc-0123456789abcdef0"},
    }
    assert compiled["bastion"]["instance"]["state"] == "absent" and compiled["bastion"]["instance"]["subnets"] == []
    # The external load balancer outlives the cluster: the machines leave it before they go.
    assert compiled["control_plane"] == {
        "external_lb": {**BASE, "type": "external", "name": "team-api", "subnets": []},
        "instance": {
            **gone,
            "name": "control-plane",
            "role": "control-plane",
            "load_balancers": [ref("external_lb.load_balancer")],
            "cluster_deletion": True,  # no drain, no etcd member removal: the cluster goes
        },
        "elb": {**gone, "type": "external", "name": "team-api"},
        "kubeadm": {**gone, "output_dir": "/out"},
    }
    assert compiled["machine_deployment"] == {
        "instances": [{**gone, "role": "node", "name": "md-0", "cluster_deletion": True}],
        "names": ["md-0"],
        "leftover": {**gone, "role": "node", "cluster_deletion": True},
    }
    assert compiled["machine_pool"] == {
        "asg": [{**gone, "name": "mp-0"}],
        "fleet": [{**gone, "name": "fp-0"}],
        "names": ["mp-0"],
        "leftover": gone,
    }
    assert compiled["external_resources"] == gone


def test_eks_deletion_and_external_resource_gc_opt_out():
    compiled = steps({**EKS, "external_resource_gc": False}, state="absent")
    gone = {**BASE, "state": "absent"}
    assert compiled["eks_node_groups"] == {
        "fargate_profiles": [{**gone, "eks_cluster_name": "demo", "name": "fp-0"}],
        "node_groups": [{**gone, "eks_cluster_name": "demo", "name": "ng-0"}],
    }
    cluster = compiled["eks_control_plane"]["cluster"]
    assert cluster["state"] == "absent" and cluster["subnets"] == [] and cluster["security_group_ids"] == []
    assert compiled["external_resources"] is None


def test_no_output_directory():
    compiled = steps({"name": "demo"}, output_dir="")
    assert compiled["output_dir"] is None and compiled["control_plane"]["kubeadm"]["output_dir"] == ""
    assert steps(EKS, output_dir="")["eks_control_plane"]["cluster"]["output_dir"] == ""


# references ----------------------------------------------------------------------------------------------------------
OUTPUTS = {
    "vpc": {"vpc": {"id": "vpc-1", "cidr_block": "10.0.0.0/16", "internet_gateway_id": None}},
    "network": {
        "subnets": [{"id": "subnet-1", "is_public": True}, {"id": "subnet-2", "is_public": False}],
        "security_groups": {"node": {"id": "sg-1"}},
    },
}


def test_references_are_filled_in():
    params = {
        "vpc_id": ref("vpc.vpc.id"),
        "internet_gateway_id": ref("vpc.vpc.internet_gateway_id", optional=True),
        "security_group_ids": [ref("network.security_groups.node.id"), ref("eks.cluster.sg", optional=True), "sg-9"],
        "subnets": ref("network.subnets", where={"is_public": False}),
        "nested": {"keep": None, "id": ref("vpc.vpc.id")},
    }
    assert resolve(params, OUTPUTS) == {
        "vpc_id": "vpc-1",
        "security_group_ids": ["sg-1", "sg-9"],
        "subnets": [{"id": "subnet-2", "is_public": False}],
        "nested": {"keep": None, "id": "vpc-1"},
    }
    assert unresolved(params) == [
        "vpc.vpc.id",
        "vpc.vpc.internet_gateway_id",
        "network.security_groups.node.id",
        "eks.cluster.sg",
        "network.subnets",
        "vpc.vpc.id",
    ]
    assert unresolved(resolve(params, OUTPUTS)) == []


def test_a_missing_output_is_named():
    with pytest.raises(
        UnresolvedReference, match=r"network.security_groups.bastion.id: .* has no 'bastion' \(it has node\)"
    ):
        resolve({"ids": [ref("network.security_groups.bastion.id")]}, OUTPUTS)
    with pytest.raises(UnresolvedReference, match="control_plane.endpoint.host"):
        resolve(ref("control_plane.endpoint.host"), OUTPUTS)


def test_every_reference_of_a_compiled_cluster_names_an_output_its_role_has():
    """The outputs each role hands the filter (roles/*/tasks) are the ones the references of its steps name."""
    named = {
        "network": {"vpc", "subnet"},
        "bastion": {"network"},
        "control_plane": {"network", "elb", "external_lb"},
        "machine_deployment": {"network", "control_plane"},
        "machine_pool": {"network", "control_plane", "eks_control_plane"},
        "eks_control_plane": {"network"},
        "eks_node_groups": {"network"},
    }
    for spec in ({"name": "demo", "bastion": {"enabled": True}, "machine_pools": POOLS}, EKS):
        for state in ("present", "absent"):
            compiled = steps(spec, state=state)
            for role, outputs in named.items():
                used = {path.split(".", maxsplit=1)[0] for path in unresolved(compiled[role])}
                assert used <= outputs, (role, state, used)
            assert unresolved({k: compiled[k] for k in ("cluster_info", "external_resources")}) == []


# deletion of groups the spec no longer lists -----------------------------------------------------------------------
def test_leftover_groups_by_the_role_that_deletes_them():
    resources = {
        "instance": [
            {"group": "control-plane", "launched_by": "machine"},
            {"group": "bastion", "launched_by": "machine"},
            {"group": "md-old", "launched_by": "machine"},
            {"group": "md-old", "launched_by": "machine"},
            {"group": None, "launched_by": "asg", "pool": "mp-old"},
            {"group": None, "launched_by": "fleet", "pool": "fp-0"},
        ]
    }
    assert leftover_groups(resources) == {"machine_deployment": ["md-old"], "machine_pool": ["mp-old"]}
    assert leftover_groups({}) == {"machine_deployment": [], "machine_pool": []}


def test_the_machine_group_names_are_capa_cluster_infos():
    assert (CONTROL_PLANE_GROUP, BASTION_GROUP) == (cluster_info.CONTROL_PLANE_GROUP, cluster_info.BASTION_GROUP)


# waits ------------------------------------------------------------------------------------------------------------
def _module_calls(value: Any) -> list[dict[str, Any]]:
    """Every compiled module call (a dict with cluster_name) anywhere in the steps."""
    if isinstance(value, dict):
        found = [value] if "cluster_name" in value else []
        return found + [call for item in value.values() for call in _module_calls(item)]
    if isinstance(value, list):
        return [call for item in value for call in _module_calls(item)]
    return []


@pytest.mark.parametrize("kind", ["unmanaged", "eks"])
def test_a_cluster_wait_timeout_reaches_every_step_and_unset_leaves_each_module_its_own(kind):
    spec = {"name": "demo", "machine_deployments": [{"name": "md-0"}]} if kind == "unmanaged" else EKS
    calls = _module_calls(steps({**spec, "wait_timeout": 2400}))
    assert len(calls) > 3 and {call.get("wait_timeout") for call in calls} == {2400}
    assert not any("wait_timeout" in call for call in _module_calls(steps(spec)))


def test_a_wait_timeout_below_one_second_is_refused():
    validated = ArgumentSpecValidator(module_argument_spec()).validate(
        {"cluster": {"region": "us-east-1", "name": "demo", "wait_timeout": 0}}
    )
    with pytest.raises(SpecError) as error:
        compile_cluster(validated.validated_parameters["cluster"], None, None, "/out")
    assert error.value.field == "capa_cluster.wait_timeout"


# the controller's kubernetes_api (capa_kubernetes_api) ---------------------------------------------------------------
def _api_settings(spec: dict[str, Any], controller: dict[str, Any] | None) -> list[dict[str, Any]]:
    validated = ArgumentSpecValidator(module_argument_spec()).validate(
        {"cluster": {"region": "us-east-1", **spec}, "kubernetes_api": controller}
    )
    assert not validated.error_messages, validated.error_messages
    params = validated.validated_parameters
    compiled = compile_cluster(params["cluster"], None, None, "/out", params["kubernetes_api"])
    return [call["kubernetes_api"] for call in _module_calls(compiled["steps"]) if "kubernetes_api" in call]


def test_the_controllers_kubernetes_api_fills_what_the_spec_leaves_unset():
    spec = {"name": "demo", "machine_deployments": [{"name": "md-0"}], "addons": {"enabled": True}}
    proxy = "http://proxy.internal:3128"
    # control plane, machine deployment, addons, the status's Node read: every module that talks to the cluster
    together = _api_settings({**spec, "kubernetes_api": {"mode": "auto"}}, {"proxy": proxy, "mode": "required"})
    assert len(together) == 4 and all(s == {"mode": "auto", "proxy": proxy, "timeout": 10} for s in together)
    assert {s["mode"] for s in _api_settings(spec, {"mode": "required"})} == {"required"}
    assert {str(s) for s in _api_settings(spec, None)} == {str({"mode": "auto", "timeout": 10})}


def test_a_bad_controller_kubernetes_api_is_named_as_the_controllers():
    validated = ArgumentSpecValidator(module_argument_spec()).validate(
        {"cluster": {"region": "us-east-1", "name": "demo"}, "kubernetes_api": {"proxy": "socks5://x:1080"}}
    )
    with pytest.raises(SpecError) as error:
        compile_cluster(validated.validated_parameters["cluster"], None, None, "/out", {"proxy": "socks5://x:1080"})
    assert error.value.field == "capa_kubernetes_api.proxy"
    assert invalid_message(error.value).startswith("capa_kubernetes_api is invalid: capa_kubernetes_api.proxy:")
    with pytest.raises(SpecError) as spec_error:
        compile_cluster(
            {**validated.validated_parameters["cluster"], "kubernetes_api": {"server": "http://x:6443"}}, None
        )
    assert invalid_message(spec_error.value).startswith("capa_cluster is invalid: capa_cluster.kubernetes_api.server")
