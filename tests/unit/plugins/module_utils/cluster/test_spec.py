"""The cluster spec: declared once, defaults as CAPA's and as the cluster spec guide documents them
(docs/docsite/rst/cluster_spec.rst), one spelling of unset, and every bad input rejected with the field named (no
AWS involved)."""

from __future__ import annotations

import subprocess
import sys
import types
import typing
from dataclasses import fields
from pathlib import Path

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import cluster_spec as spec_module
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import cluster_types
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_spec import (
    CLUSTER_OPTIONS,
    MACHINE_OPTIONS,
    POOL_EXCLUDED,
    argument_spec,
    check_cluster,
    load,
    plain,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_types import ClusterSpec
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError

REPO = Path(__file__).resolve().parents[5]
POOL = {"name": "pool-0", "min_size": 1, "max_size": 3}


def validated(cluster: dict) -> dict:
    result = ArgumentSpecValidator({"cluster": {"type": "dict", "options": argument_spec()}}).validate(
        {"cluster": cluster}
    )
    if result.error_messages:
        raise ValueError(result.error_messages)
    return result.validated_parameters["cluster"]


def normalise(cluster: dict) -> ClusterSpec:
    """The typed spec of what a user wrote, unchecked (check_cluster is what the tests call)."""
    return ClusterSpec.from_params(spec_module.normalise(validated(cluster)))


def test_minimal_spec_gets_capas_defaults():
    cluster = load(validated({"name": "demo", "region": "us-east-1"}), None)
    assert cluster.kind == "unmanaged"
    assert cluster.network.vpc.cidr_block == "10.0.0.0/16"
    assert cluster.network.vpc.availability_zone_usage_limit == 3
    assert cluster.network.nat_gateways == "per_az"
    assert cluster.network.cni_ingress_rules == "calico"
    assert cluster.control_plane_load_balancer.type == "classic"
    assert cluster.bastion.enabled is False
    assert cluster.control_plane.replicas == 1
    assert cluster.control_plane.root_volume.encrypted is True


def test_the_readme_defaults_are_the_declared_ones():
    """The cluster spec guide (cluster_spec.rst) documents these defaults; the declaration must keep them."""
    cluster = plain(load(validated({"name": "demo", "region": "us-east-1"}), None))
    machine = {
        "instance_type": "t3.large",
        "root_volume": {"size": 80, "type": "gp3", "encrypted": True},
        "imds": {"http_tokens": "required", "http_put_response_hop_limit": 1},
        "tenancy": "default",
        "bootstrap_backend": "secrets-manager",
        "ami": {"id": None, "base_os": None, "owner": None, "name_format": None},
        "spot_market_options": None,
        "ssh_key_name": None,
    }
    assert {k: cluster["control_plane"][k] for k in machine} == machine
    assert cluster["control_plane"]["rollout"] == {"max_surge": 1}
    assert cluster["bastion"] == {
        "enabled": False,
        "allowed_cidr_blocks": ["0.0.0.0/0"],
        "instance_type": "t3.micro",
        "ami_id": None,
        "ssh_key_name": None,
    }
    assert cluster["control_plane_endpoint"] == {"host": None, "port": 6443}
    assert cluster["network"]["vpc"] == {
        "id": None,
        "cidr_block": "10.0.0.0/16",
        "secondary_cidr_blocks": [],
        "availability_zone_usage_limit": 3,
        "availability_zone_selection": "Ordered",
    }
    assert cluster["network"]["node_port_ingress_cidr_blocks"] == ["0.0.0.0/0"]
    eks = cluster["eks"]
    assert (eks["version"], eks["addons"], eks["name"], eks["oidc_thumbprint"]) == ("1.31", None, None, None)
    assert eks["encryption_config"] == {"provider": None, "resources": ["secrets"]}
    pool = load(validated({"name": "demo", "region": "us-east-1", "machine_pools": [POOL]}), None).machine_pools[0]
    assert (pool.kind, pool.desired_capacity, pool.default_cooldown, pool.drain_on_scale_in) == ("asg", None, 300, None)
    assert not hasattr(pool, "tenancy") and not hasattr(pool, "placement_group_name")


def every_option(options=CLUSTER_OPTIONS, path="capa_cluster"):
    for option in options:
        yield f"{path}.{option.name}", option
        if option.options is not None:
            yield from every_option(option.options, f"{path}.{option.name}")


def test_one_spelling_of_unset():
    """No option means "not set" by an empty string: unset is None, and "" written for such a field is None too."""
    assert [path for path, option in every_option() if option.default == ""] == []
    assert all(option.description for _path, option in every_option())
    cluster = load(
        validated(
            {
                "name": "demo",
                "region": "us-east-1",
                "ssh_key_name": "",
                "network": {"vpc": {"id": ""}},
                "control_plane": {"ami": {"id": "", "base_os": ""}, "iam_instance_profile": ""},
                "control_plane_load_balancer": {"name": ""},
            }
        ),
        None,
    )
    assert cluster.ssh_key_name is None and cluster.network.vpc.id is None
    assert cluster.control_plane.ami.id is None and cluster.control_plane.ami.base_os is None
    assert cluster.control_plane.iam_instance_profile is None and cluster.control_plane_load_balancer.name is None


def test_the_typed_spec_has_every_declared_field():
    """Each section's dataclass has exactly the declared fields, in order (cluster_types.py is generated)."""

    def check(cls, options, path):
        assert [f.name for f in fields(cls)] == [o.name for o in options], path
        hints = typing.get_type_hints(cls, vars(cluster_types))
        for option in options:
            if option.options is None:
                continue
            nested = hints[option.name]
            if isinstance(nested, types.UnionType):  # X | None
                [nested] = [a for a in typing.get_args(nested) if a is not type(None)]
            inner = typing.get_args(nested)[0] if option.type == "list" else nested
            check(inner, option.options, f"{path}.{option.name}")

    check(ClusterSpec, CLUSTER_OPTIONS, "capa_cluster")


def test_the_machine_fields_are_declared_in_one_place():
    """The control plane, machine deployments and pools take the machine options of MACHINE_OPTIONS (pools without
    tenancy and placement group), with the cluster's documented defaults."""
    names = [o.name for o in MACHINE_OPTIONS]
    sections = {o.name: o for o in CLUSTER_OPTIONS}
    for section, excluded in (("control_plane", ()), ("machine_deployments", ()), ("machine_pools", POOL_EXCLUDED)):
        declared = {o.name: o for o in sections[section].options}
        assert [n for n in names if n in declared] == [n for n in names if n not in excluded], section
        assert declared["instance_type"].default == "t3.large"
        assert {o.name: o.default for o in declared["root_volume"].options}["size"] == 80
    assert {o.name: o for o in MACHINE_OPTIONS}["instance_type"].default is None


def test_unknown_keys_are_rejected():
    with pytest.raises(ValueError, match="bogus"):
        validated({"name": "demo", "network": {"bogus": 1}})


BAD = [
    ({"name": "Demo"}, "capa_cluster.name"),
    ({"name": "demo", "additional_tags": {"aws:x": "1"}}, "capa_cluster.additional_tags.aws:x"),
    ({"name": "demo", "network": {"vpc": {"cidr_block": "10.0.0.0/8"}}}, "capa_cluster.network.vpc.cidr_block"),
    ({"name": "demo", "network": {"vpc": {"cidr_block": "10.0.0/16"}}}, "capa_cluster.network.vpc.cidr_block"),
    ({"name": "demo", "network": {"vpc": {"id": "vpc-zz"}}}, "capa_cluster.network.vpc.id"),
    ({"name": "demo", "network": {"vpc": {"id": "vpc-0123456789abcdef0"}}}, "capa_cluster.network.subnets"),
    (
        {
            "name": "demo",
            "network": {
                "subnets": [{"availability_zone": "us-east-1a", "cidr_block": "10.1.0.0/24", "is_public": True}]
            },
        },
        "capa_cluster.network.subnets[0].cidr_block",
    ),
    (
        {
            "name": "demo",
            "network": {
                "subnets": [
                    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24", "is_public": True},
                    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/23"},
                ]
            },
        },
        "capa_cluster.network.subnets[1].cidr_block",
    ),
    (
        {
            "name": "demo",
            "network": {
                "subnets": [{"availability_zone": "eu-west-1a", "cidr_block": "10.0.0.0/24", "is_public": True}]
            },
        },
        "capa_cluster.network.subnets[0].availability_zone",
    ),
    ({"name": "demo", "network": {"subnets": [{"cidr_block": "10.0.0.0/24"}]}}, "capa_cluster.network.subnets[0]"),
    (
        {"name": "demo", "network": {"subnets": [{"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24"}]}},
        "capa_cluster.network.subnets",
    ),
    ({"name": "demo", "network": {"cni_ingress_rules": "flannel"}}, "capa_cluster.network.cni_ingress_rules"),
    (
        {"name": "demo", "network": {"cni_ingress_rules": [{"protocol": "tcp", "from_port": 1}]}},
        "capa_cluster.network.cni_ingress_rules[0].to_port",
    ),
    (
        {"name": "demo", "network": {"security_group_overrides": {"web": "sg-0123456789abcdef0"}}},
        "capa_cluster.network.security_group_overrides.web",
    ),
    (
        {"name": "demo", "network": {"security_group_overrides": {"node": "sg-x"}}},
        "capa_cluster.network.security_group_overrides.node",
    ),
    (
        {
            "name": "demo",
            "network": {"additional_node_ingress_rules": [{"protocol": "tcp", "from_port": 10, "to_port": 70000}]},
        },
        "capa_cluster.network.additional_node_ingress_rules[0].to_port",
    ),
    (
        {
            "name": "demo",
            "network": {
                "additional_node_ingress_rules": [{"from_port": 1, "to_port": 2, "cidr_blocks": ["1.2.3.4/40"]}]
            },
        },
        "capa_cluster.network.additional_node_ingress_rules[0].cidr_blocks[0]",
    ),
    (
        {"name": "demo", "bastion": {"allowed_cidr_blocks": ["300.0.0.0/8"]}},
        "capa_cluster.bastion.allowed_cidr_blocks[0]",
    ),
    ({"name": "demo", "control_plane": {"replicas": 2}}, "capa_cluster.control_plane.replicas"),
    ({"name": "demo", "kind": "eks", "eks": {"version": "v1.31"}}, "capa_cluster.eks.version"),
    (
        {"name": "demo", "kind": "eks", "network": {"vpc": {"availability_zone_usage_limit": 1}}},
        "capa_cluster.network.vpc.availability_zone_usage_limit",
    ),
    (
        {"name": "demo", "kind": "eks", "eks": {"node_groups": [{"name": "ng-0", "scaling": {"desired_size": 9}}]}},
        "capa_cluster.eks.node_groups[0].scaling.desired_size",
    ),
    (
        {"name": "demo", "kind": "eks", "eks": {"fargate_profiles": [{"name": "fp-0"}]}},
        "capa_cluster.eks.fargate_profiles[0].selectors",
    ),
    (
        {"name": "demo", "control_plane_load_balancer": {"type": "external"}},
        "capa_cluster.control_plane_load_balancer.name",
    ),
    ({"name": "demo", "control_plane_load_balancer": {"type": "disabled"}}, "capa_cluster.control_plane_endpoint.host"),
    (
        {"name": "demo", "control_plane_load_balancer": {"additional_listeners": [{"port": 8443}]}},
        "capa_cluster.control_plane_load_balancer.additional_listeners",
    ),
    (
        {"name": "demo", "machine_deployments": [{"name": "md-0", "rollout": {"max_surge": 0, "max_unavailable": 0}}]},
        "capa_cluster.machine_deployments[0].rollout",
    ),
    (
        {"name": "demo", "machine_deployments": [{"name": "md-0"}, {"name": "md-0"}]},
        "capa_cluster.machine_deployments[1].name",
    ),
]


@pytest.mark.parametrize("spec, field", BAD, ids=[case[1] for case in BAD])
def test_bad_specs_fail_naming_the_field(spec, field):
    spec = {"region": "us-east-1", **spec}
    with pytest.raises(SpecError) as error:
        check_cluster(normalise(spec), None)
    assert error.value.field == field


def test_region_comes_from_the_environment_when_not_in_the_spec():
    check_cluster(normalise({"name": "demo"}), "us-east-1")
    with pytest.raises(SpecError, match="region"):
        check_cluster(normalise({"name": "demo"}), None)


def test_generated_docs_and_role_specs_match_the_declaration():
    """tools/gen_specs.py writes capa_cluster_spec's DOCUMENTATION, the typed spec and the roles' argument specs."""
    result = subprocess.run(
        [sys.executable, str(REPO / "tools/gen_specs.py"), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# Rules added with the bad-input matrix (tests/integration/test_bad_input.py runs them through site.yml).
BAD_MORE = [
    ({"kubernetes_version": "v1.31"}, "capa_cluster.kubernetes_version"),
    # The machine health check (machines.plan.HealthCheck.validate, capa_instance's rules too).
    (
        {
            "machine_deployments": [
                {"name": "md-0", "unhealthy_node_conditions": [{"type": "Ready", "status": "Unknown", "timeout": -1}]}
            ]
        },
        "capa_cluster.machine_deployments[0].unhealthy_node_conditions[0].timeout",
    ),
    ({"control_plane": {"unhealthy_range": "3"}}, "capa_cluster.control_plane.unhealthy_range"),
    # Join tokens: at least 5 minutes (a machine boots and joins), at most a week.
    ({"bootstrap_token_ttl": 299}, "capa_cluster.bootstrap_token_ttl"),
    (
        {"control_plane": {"rollout_before_certificates_expiry_days": 6}},
        "capa_cluster.control_plane.rollout_before_certificates_expiry_days",
    ),
    (
        {"machine_pools": [{"name": "mp-0", "bootstrap_token_ttl": 604801}]},
        "capa_cluster.machine_pools[0].bootstrap_token_ttl",
    ),
    (
        {"machine_deployments": [{"name": "md-0", "node_startup_timeout": -1}]},
        "capa_cluster.machine_deployments[0].node_startup_timeout",
    ),
    (
        {"network": {"vpc": {"secondary_cidr_blocks": ["10.0.128.0/17"]}}},
        "capa_cluster.network.vpc.secondary_cidr_blocks[0]",
    ),
    (
        {"network": {"vpc": {"secondary_cidr_blocks": ["10.1.0.0/16", "10.1.0.0/20"]}}},
        "capa_cluster.network.vpc.secondary_cidr_blocks[1]",
    ),
    (
        {"machine_deployments": [{"name": "md-0", "failure_domains": ["us-east-1a", "us-east-1a"]}]},
        "capa_cluster.machine_deployments[0].failure_domains[1]",
    ),
    (
        {"machine_pools": [{**POOL, "failure_domains": ["eu-west-1a"]}]},
        "capa_cluster.machine_pools[0].failure_domains[0]",
    ),
    ({"machine_pools": [{**POOL, "min_size": 3, "max_size": 1}]}, "capa_cluster.machine_pools[0].max_size"),
    ({"machine_pools": [{**POOL, "min_size": -1}]}, "capa_cluster.machine_pools[0].min_size"),
    (
        {"machine_pools": [{**POOL, "externally_managed_replicas": True, "desired_capacity": 9}]},
        "capa_cluster.machine_pools[0].desired_capacity",
    ),
    (
        {
            "machine_pools": [
                {
                    **POOL,
                    "mixed_instances_policy": {
                        "instances_distribution": {"on_demand_percentage_above_base_capacity": 101}
                    },
                }
            ]
        },
        "capa_cluster.machine_pools[0].mixed_instances_policy.instances_distribution"
        ".on_demand_percentage_above_base_capacity",
    ),
    ({"control_plane": {"root_volume": {"size": 0}}}, "capa_cluster.control_plane.root_volume.size"),
    (
        {"machine_deployments": [{"name": "md-0", "root_volume": {"type": "st1"}}]},
        "capa_cluster.machine_deployments[0].root_volume.type",
    ),
    (
        {"control_plane": {"imds": {"http_put_response_hop_limit": 65}}},
        "capa_cluster.control_plane.imds.http_put_response_hop_limit",
    ),
    (
        {"machine_deployments": [{"name": "md-0", "spot_market_options": {"max_price": "cheap"}}]},
        "capa_cluster.machine_deployments[0].spot_market_options.max_price",
    ),
    (
        {"machine_deployments": [{"name": "md-0", "tenancy": "host", "spot_market_options": {}}]},
        "capa_cluster.machine_deployments[0].spot_market_options",
    ),
    ({"control_plane": {"rollout": {"max_surge": 2}}}, "capa_cluster.control_plane.rollout.max_surge"),
    (
        {"control_plane_load_balancer": {"preserve_client_ip": True}},
        "capa_cluster.control_plane_load_balancer.preserve_client_ip",
    ),
    ({"control_plane_load_balancer": {"name": "-api"}}, "capa_cluster.control_plane_load_balancer.name"),
    (
        {"control_plane_load_balancer": {"ingress_rules": [{"from_port": 6443, "to_port": 443}]}},
        "capa_cluster.control_plane_load_balancer.ingress_rules[0]",
    ),
    ({"kind": "eks", "control_plane": {"replicas": 3}}, "capa_cluster.control_plane"),
    ({"kind": "eks", "machine_deployments": [{"name": "md-0"}]}, "capa_cluster.machine_deployments"),
    ({"eks": {"version": "1.30"}}, "capa_cluster.eks"),
    (
        {"kind": "eks", "eks": {"version": "1.30", "node_groups": [{"name": "ng-0", "version": "1.31"}]}},
        "capa_cluster.eks.node_groups[0].version",
    ),
    (
        {"kind": "eks", "eks": {"version": "1.31", "node_groups": [{"name": "ng-0", "version": "1.27"}]}},
        "capa_cluster.eks.node_groups[0].version",
    ),
    (
        {"kind": "eks", "eks": {"endpoint_access": {"public_cidrs": ["0.0.0.0/33"]}}},
        "capa_cluster.eks.endpoint_access.public_cidrs[0]",
    ),
]


@pytest.mark.parametrize("spec, field", BAD_MORE, ids=[case[1] for case in BAD_MORE])
def test_more_bad_specs_fail_naming_the_field(spec, field):
    with pytest.raises(SpecError) as error:
        check_cluster(normalise({"name": "demo", "region": "us-east-1", **spec}), None)
    assert error.value.field == field


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "eks", "eks": {"node_groups": [{"name": "ng-0", "version": "1.28"}]}},
        {"machine_pools": [{**POOL, "externally_managed_replicas": True, "desired_capacity": 2}]},
        {"control_plane_load_balancer": {"type": "nlb", "preserve_client_ip": True}},
    ],
)
def test_edges_of_the_new_rules_pass(spec):
    check_cluster(normalise({"name": "demo", "region": "us-east-1", **spec}), None)


def test_a_control_plane_rollout_that_capa_instance_refuses_is_refused_by_the_spec_too():
    """The cluster spec and capa_instance check a rollout with one rule (machines.plan.check_rollout): max_surge 0 for
    a control plane (KCP's scale-in first) passed the spec and failed capa_instance after the network was built."""
    with pytest.raises(SpecError) as error:
        check_cluster(
            normalise({"name": "demo", "region": "us-east-1", "control_plane": {"rollout": {"max_surge": 0}}}), None
        )
    assert error.value.field == "capa_cluster.control_plane.rollout.max_surge"


def test_machine_pools_are_allowed_on_eks_clusters():
    """Self-managed EKS nodes: machine pools are the one worker section both kinds use."""
    cluster = normalise(
        {
            "name": "demo-eks",
            "region": "us-east-1",
            "kind": "eks",
            "network": {"vpc": {"availability_zone_usage_limit": 2}},
            "eks": {"version": "1.31"},
            "machine_pools": [{"name": "eks-mp-0", "min_size": 1, "max_size": 2}],
        }
    )
    check_cluster(cluster, None)
