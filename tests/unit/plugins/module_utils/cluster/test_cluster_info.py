# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_cluster_info's pure decisions (conditions, machine groups, orphans) on describe output shaped as AWS
returns it (recorded from moto, ids shortened)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_info import (
    KINDS,
    _arn_name,
    read_spec,
    summarise,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_nodes import NodesRead
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.eks_status import EksObserved
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.resources import BY_NAME
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.observe import NodeView

C = "demo"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{C}"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
CCM = f"kubernetes.io/cluster/{C}"
GROUP = "clusterapi.aws/machine-group"
VPC = "vpc-0001"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
PUBLIC = ("10.0.0.0/20", "10.0.16.0/20", "10.0.32.0/20")
PRIVATE = ("10.0.64.0/18", "10.0.128.0/18", "10.0.192.0/18")


def tags(**pairs: str) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in pairs.items()]


def owned(role: str, name: str | None = None, **extra: str) -> list[dict[str, str]]:
    values = {OWNER: "owned", ROLE: role, **extra}
    if name:
        values["Name"] = name
    return [{"Key": k, "Value": v} for k, v in values.items()]


def subnet(index: int, public: bool, vpc: str = VPC, cidr: str | None = None, zone: str | None = None) -> dict:
    zone = zone or ZONES[index]
    kind = "public" if public else "private"
    return {
        "SubnetId": f"subnet-{kind}-{index}",
        "VpcId": vpc,
        "AvailabilityZone": zone,
        "CidrBlock": cidr or (PUBLIC if public else PRIVATE)[index],
        "State": "available",
        "Tags": owned(kind, f"{C}-subnet-{kind}-{zone}", **{CCM: "owned"}),
    }


def route_table(subnet_id: str, target: str) -> dict:
    gateway = {"NatGatewayId": target} if target.startswith("nat-") else {"GatewayId": target}
    return {
        "RouteTableId": f"rtb-{subnet_id}",
        "VpcId": VPC,
        "Associations": [{"SubnetId": subnet_id, "RouteTableAssociationId": f"rtbassoc-{subnet_id}"}],
        "Routes": [
            {"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local"},
            {"DestinationCidrBlock": "0.0.0.0/0", **gateway},
        ],
        "Tags": owned("common", f"{C}-rt", **{CCM: "owned"}),
    }


def instance(instance_id: str, group: str | None, state: str = "running", role: str = "node") -> dict:
    extra = {GROUP: group} if group else {}
    return {
        "InstanceId": instance_id,
        "State": {"Name": state},
        "VpcId": VPC,
        "SubnetId": "subnet-private-0",
        "Placement": {"AvailabilityZone": ZONES[0]},
        "Tags": owned(role, instance_id, **extra),
    }


def network() -> dict[str, list[dict[str, Any]]]:
    """A healthy default network, as the network modules build it."""
    subnets = [subnet(i, True) for i in range(3)] + [subnet(i, False) for i in range(3)]
    nats = [
        {
            "NatGatewayId": f"nat-{i}",
            "VpcId": VPC,
            "SubnetId": f"subnet-public-{i}",
            "State": "available",
            "NatGatewayAddresses": [{"AllocationId": f"eipalloc-{i}"}],
            "Tags": owned("common", f"{C}-nat"),
        }
        for i in range(3)
    ]
    return {
        "vpc": [{"VpcId": VPC, "CidrBlock": "10.0.0.0/16", "State": "available", "Tags": owned("common", f"{C}-vpc")}],
        "internet_gateway": [
            {
                "InternetGatewayId": "igw-1",
                "Attachments": [{"VpcId": VPC, "State": "available"}],
                "Tags": owned("common", f"{C}-igw"),
            }
        ],
        "subnet": subnets,
        "route_table": [route_table(f"subnet-public-{i}", "igw-1") for i in range(3)]
        + [route_table(f"subnet-private-{i}", f"nat-{i}") for i in range(3)],
        "nat_gateway": nats,
        "elastic_ip": [
            {
                "AllocationId": f"eipalloc-{i}",
                "PublicIp": f"3.0.0.{i}",
                "AssociationId": f"eipassoc-{i}",
                "Tags": owned("common", f"{C}-eip-common"),
            }
            for i in range(3)
        ],
        "security_group": [
            {"GroupId": f"sg-{role}", "GroupName": f"{C}-{role}", "VpcId": VPC, "Tags": owned(role, f"{C}-{role}")}
            for role in ("apiserver-lb", "lb", "controlplane", "node")
        ],
        "instance": [],
        "load_balancer": [
            {
                "LoadBalancerName": f"{C}-apiserver",
                "DNSName": f"{C}-apiserver-1.us-east-1.elb.amazonaws.com",
                "VPCId": VPC,
                "Scheme": "internet-facing",
                "Tags": owned("apiserver", f"{C}-apiserver"),
            }
        ],
        "load_balancer_v2": [],
        "target_group": [],
        "auto_scaling_group": [],
        "launch_template": [],
        "secret": [],
        "ssm_parameter": [],
    }


def run(raw: dict[str, list[dict[str, Any]]], spec: dict[str, Any] | None = None, vpc_id: str | None = None):
    return summarise(raw, read_spec(spec or {}, C), vpc_id)


def orphan_reasons(result: dict[str, Any]) -> dict[str, str]:
    return {o["id"]: o["reason"] for o in result["orphans"]}


def test_healthy_network_is_ready_and_explained():
    result = run(network(), {"control_plane": {"replicas": 0}})
    assert {name: c["status"] for name, c in result["conditions"].items()} == {
        "VpcReady": True,
        "SubnetsReady": True,
        "InternetGatewayReady": True,
        "NatGatewaysReady": True,
        "RouteTablesReady": True,
        "ClusterSecurityGroupsReady": True,
        "LoadBalancerReady": True,
    }
    assert result["orphans"] == [] and result["cloud_provider_resources"] == []
    assert result["counts"]["subnet"] == 6 and result["counts"]["route_table"] == 6
    assert result["vpc_id"] == VPC and result["ready"] is True
    assert result["resources"]["subnet"][0]["public"] is True


def test_every_kind_has_a_table_entry():
    assert set(network()) == {kind.name for kind in KINDS}


def test_ec2_kinds_are_described_and_identified_the_tables_way():
    ec2 = [kind for kind in KINDS if kind.name in BY_NAME]
    assert {kind.name for kind in ec2} >= {"vpc", "subnet", "nat_gateway", "instance", "launch_template"}
    for kind in ec2:
        assert kind.ident({BY_NAME[kind.name].id_key: "the-id"}) == "the-id"


def test_empty_account_says_why():
    result = run({kind.name: [] for kind in KINDS}, {"bastion": {"enabled": True}})
    reasons = {name: (c["status"], c["reason"]) for name, c in result["conditions"].items()}
    assert reasons["VpcReady"] == (False, "VpcNotFound")
    assert reasons["BastionHostReady"] == (False, "BastionHostNotFound")
    assert reasons["LoadBalancerReady"] == (False, "LoadBalancerNotFound")
    assert result["machines"]["control-plane"]["reason"] == "InstanceNotFound"
    assert result["ready"] is False


def _mutate(raw: dict, kind: str, item: dict) -> dict:
    raw = copy.deepcopy(raw)
    raw[kind].append(item)
    return raw


ORPHAN_CASES = [
    pytest.param(
        "vpc",
        {"VpcId": "vpc-0002", "CidrBlock": "10.1.0.0/16", "State": "available", "Tags": owned("common", "x")},
        {},
        "more than one VPC",
        id="second-vpc",
    ),
    pytest.param(
        "subnet",
        subnet(0, True, cidr="10.0.48.0/20"),
        {},
        "not in CAPA's default layout",
        id="subnet-outside-default-layout",
    ),
    pytest.param(
        "subnet",
        dict(subnet(0, False), SubnetId="subnet-elsewhere", VpcId="vpc-other"),
        {},
        "not in the cluster's VPC",
        id="subnet-in-another-vpc",
    ),
    pytest.param(
        "security_group",
        {"GroupId": "sg-bastion", "GroupName": f"{C}-bastion", "VpcId": VPC, "Tags": owned("bastion")},
        {},
        "role 'bastion' is not one of apiserver-lb, lb, controlplane, node",
        id="bastion-group-without-bastion",
    ),
    pytest.param(
        "nat_gateway",
        {
            "NatGatewayId": "nat-9",
            "VpcId": VPC,
            "SubnetId": "subnet-public-0",
            "State": "available",
            "NatGatewayAddresses": [{"AllocationId": "eipalloc-9"}],
            "Tags": owned("common"),
        },
        {},
        "more NAT gateways than nat_gateways=per_az needs",
        id="second-nat-in-an-az",
    ),
    pytest.param(
        "elastic_ip",
        {"AllocationId": "eipalloc-free", "PublicIp": "3.0.0.9", "Tags": owned("common")},
        {},
        "used by none",
        id="unused-eip",
    ),
    pytest.param(
        "route_table",
        dict(route_table("subnet-gone", "igw-1"), Associations=[], RouteTableId="rtb-lonely"),
        {},
        "associated with no subnet",
        id="route-table-without-subnet",
    ),
    pytest.param(
        "instance",
        instance("i-old", "md-old"),
        {},
        "machine group 'md-old' is not in the spec",
        id="machine-group-not-in-spec",
    ),
    pytest.param(
        "instance",
        instance("i-untagged", None),
        {},
        "no clusterapi.aws/machine-group tag",
        id="instance-without-group",
    ),
    pytest.param(
        "load_balancer_v2",
        {
            "ResourceARN": "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/demo-apiserver/abc",
            "Tags": owned("apiserver"),
        },
        {},
        "control_plane_load_balancer.type is classic",
        id="nlb-when-classic",
    ),
    pytest.param(
        "secret",
        {
            "ResourceARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:aws.cluster.x-k8s.io/u-1-AbCdEf",
            "Tags": owned("node", "demo-md-0-gone"),
        },
        {},
        "bootstrap data of machine 'demo-md-0-gone', which no longer exists",
        id="secret-of-gone-machine",
    ),
]


@pytest.mark.parametrize("kind, item, spec, reason", ORPHAN_CASES)
def test_owned_but_unexplained_is_an_orphan(kind, item, spec, reason):
    result = run(_mutate(network(), kind, item), {"control_plane": {"replicas": 0}, **spec})
    ident = next(k for k in KINDS if k.name == kind).ident(item)
    reasons = orphan_reasons(result)
    assert ident in reasons, result["orphans"]
    assert reason in reasons[ident]
    assert [o["kind"] for o in result["orphans"]] == [kind]
    # An orphan does not make the network unready.
    assert all(result["conditions"][name]["status"] for name in ("SubnetsReady", "RouteTablesReady"))


@pytest.mark.parametrize(
    "spec, condition, expected, orphan_count",
    [
        ({"network": {"nat_gateways": "none"}}, "NatGatewaysReady", (True, "NatGatewaysDisabled"), 3),
        ({"network": {"nat_gateways": "single"}}, "NatGatewaysReady", (True, "Available"), 2),
        (
            {"control_plane_load_balancer": {"type": "disabled"}},
            "LoadBalancerReady",
            (False, "WaitForExternalControlPlaneEndpoint"),
            1,
        ),
        (
            {"control_plane_load_balancer": {"type": "external", "name": "byo"}},
            "LoadBalancerReady",
            (False, "LoadBalancerNotFound"),
            1,
        ),
        ({"control_plane_load_balancer": {"type": "nlb"}}, "LoadBalancerReady", (False, "LoadBalancerNotFound"), 1),
        ({"bastion": {"enabled": True}}, "ClusterSecurityGroupsReady", (False, "SecurityGroupsNotFound"), 0),
        (
            {"network": {"security_group_overrides": {"node": "sg-byo"}}},
            "ClusterSecurityGroupsReady",
            (True, "Available"),
            1,
        ),
    ],
)
def test_spec_modes(spec, condition, expected, orphan_count):
    result = run(network(), {"control_plane": {"replicas": 0}, **spec})
    got = result["conditions"][condition]
    assert (got["status"], got["reason"]) == expected, got
    assert len(result["orphans"]) == orphan_count, result["orphans"]


def test_explicit_subnets_missing_and_extra():
    listed = [{"availability_zone": ZONES[i], "cidr_block": PUBLIC[i], "is_public": True} for i in range(3)]
    listed += [{"availability_zone": ZONES[i], "cidr_block": PRIVATE[i]} for i in range(2)]
    listed.append({"availability_zone": ZONES[2], "cidr_block": "10.0.48.0/20"})
    result = run(network(), {"network": {"subnets": listed}})
    assert result["conditions"]["SubnetsReady"]["status"] is False
    assert result["conditions"]["SubnetsReady"]["message"] == "missing: 10.0.48.0/20 in us-east-1c"
    assert "not in the spec's subnets" in orphan_reasons(result)["subnet-private-2"]


def test_byo_vpc_and_subnets_are_used_not_owned():
    raw = {kind.name: [] for kind in KINDS}
    raw["vpc"] = [{"VpcId": "vpc-0b0b0b0b", "CidrBlock": "10.9.0.0/16", "State": "available", "Tags": []}]
    raw["subnet"] = [
        {
            "SubnetId": "subnet-0b0b0b0b",
            "VpcId": "vpc-0b0b0b0b",
            "AvailabilityZone": ZONES[0],
            "CidrBlock": "10.9.0.0/24",
            "Tags": tags(**{CCM: "shared"}),
        }
    ]
    spec = {"network": {"vpc": {"id": "vpc-0b0b0b0b"}, "subnets": [{"id": "subnet-0b0b0b0b"}], "nat_gateways": "none"}}
    result = run(raw, spec)
    assert result["conditions"]["VpcReady"]["reason"] == "Unmanaged"
    assert result["conditions"]["SubnetsReady"]["status"] is True
    assert result["counts"]["vpc"] == 0 and result["counts"]["subnet"] == 0


def test_cloud_provider_resources_are_reported_not_orphaned():
    raw = network()
    raw["security_group"].append(
        {"GroupId": "sg-k8s-elb", "GroupName": "k8s-elb-a1b2", "VpcId": VPC, "Tags": tags(**{CCM: "owned"})}
    )
    raw["load_balancer"].append({"LoadBalancerName": "a1b2", "DNSName": "x", "Tags": tags(**{CCM: "owned"})})
    result = run(raw, {"control_plane": {"replicas": 0}})
    assert result["cloud_provider_resources"] == [
        {"kind": "security_group", "id": "sg-k8s-elb", "name": "k8s-elb-a1b2"},
        {"kind": "load_balancer", "id": "a1b2", "name": "a1b2"},
    ]
    assert result["orphans"] == []


@pytest.mark.parametrize(
    "states, desired, reason",
    [
        (["running", "running", "running"], 3, "InstanceReady"),
        (["running", "pending", "running"], 3, "InstanceProvisionStarted"),
        (["running", "stopped"], 2, "InstanceStopped"),
        (["running"], 3, "InstanceNotFound"),
        (["running", "running"], 1, "InstanceNotReady"),
    ],
)
def test_machine_group_readiness(states, desired, reason):
    raw = network()
    raw["instance"] = [instance(f"i-{n}", "control-plane", state) for n, state in enumerate(states)]
    result = run(raw, {"control_plane": {"replicas": desired}})
    group = result["machines"]["control-plane"]
    assert group["reason"] == reason and group["ready"] is (reason == "InstanceReady")
    assert group["desired"] == desired and group["running"] == states.count("running")


def test_bastion_and_machine_deployments_are_groups():
    raw = network()
    raw["instance"] = [
        instance("i-b", None, role="bastion"),
        instance("i-md", "md-0"),
        instance("i-cp", "control-plane"),
    ]
    spec = {"bastion": {"enabled": True}, "machine_deployments": [{"name": "md-0", "replicas": 1}]}
    result = run(raw, spec)
    assert set(result["machines"]) == {"control-plane", "bastion", "md-0"}
    assert result["conditions"]["BastionHostReady"]["status"] is True
    assert all(m["ready"] for m in result["machines"].values())
    # The secret of a machine that exists is not an orphan.
    raw["secret"] = [
        {
            "ResourceARN": "arn:aws:secretsmanager:r:1:secret:aws.cluster.x-k8s.io/u-AbCdEf",
            "Tags": owned("node", "i-md"),
        }
    ]
    assert run(raw, spec)["orphans"] == []


def test_vpc_id_option_picks_the_cluster_vpc():
    raw = _mutate(network(), "vpc", {"VpcId": "vpc-0002", "State": "available", "Tags": owned("common", "demo-vpc")})
    result = run(raw, {"control_plane": {"replicas": 0}}, vpc_id="vpc-0002")
    assert result["vpc_id"] == "vpc-0002"
    assert orphan_reasons(result)[VPC].startswith("more than one VPC")


@pytest.mark.parametrize(
    "arn, name",
    [
        ("arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/demo-apiserver/50dc6c495c0c9188", "demo-apiserver"),
        ("arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/demo-apiserver", "demo-apiserver"),  # classic
        (
            "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/apiserver-target-abcde/73e2d6bc24d8a067",
            "apiserver-target-abcde",
        ),
        ("arn:aws:secretsmanager:us-east-1:1:secret:aws.cluster.x-k8s.io/1234-0-AbCdEf", "aws.cluster.x-k8s.io/1234-0"),
        ("arn:aws:ssm:us-east-1:1:parameter/cluster.x-k8s.io/1234/0", "/cluster.x-k8s.io/1234/0"),
    ],
)
def test_names_from_arns(arn, name):
    assert _arn_name({"ResourceARN": arn}) == name


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"name": "other"}, "spec.name"),
        ({"kind": "gke"}, "spec.kind"),
        ({"network": {"nat_gateways": "two"}}, "spec.network.nat_gateways"),
        ({"network": {"vpc": {"id": "subnet-1"}}}, "spec.network.vpc.id"),
        ({"control_plane_load_balancer": {"type": "alb"}}, "spec.control_plane_load_balancer.type"),
        ({"control_plane": {"replicas": -1}}, "spec.control_plane.replicas"),
        ({"machine_deployments": [{"replicas": 1}]}, "spec.machine_deployments[0]"),
        ({"network": "x"}, "spec.network"),
    ],
)
def test_bad_spec_names_the_field(spec, field):
    with pytest.raises(SpecError) as error:
        read_spec(spec, C)
    assert error.value.field == field


def test_defaults_are_capas():
    view = read_spec({}, C)
    assert view.machine_groups() == {"control-plane": 1}
    assert view.security_group_roles() == ("apiserver-lb", "lb", "controlplane", "node")
    assert (view.nat_gateways, view.lb_type, view.az_limit) == ("per_az", "classic", 3)


# pools the spec does not explain ------------------------------------------------------------
def test_auto_scaling_groups_and_launch_templates_of_pools_not_in_the_spec_are_orphans():
    raw = {
        "auto_scaling_group": [
            {"AutoScalingGroupName": "pool-a", "Tags": owned("node"), "DesiredCapacity": 2},
            {"AutoScalingGroupName": "pool-gone", "Tags": owned("node"), "DesiredCapacity": 1},
        ],
        "launch_template": [
            {"LaunchTemplateId": "lt-1", "LaunchTemplateName": "pool-a", "Tags": owned("node")},
            {"LaunchTemplateId": "lt-2", "LaunchTemplateName": "pool-gone", "Tags": owned("node")},
        ],
    }
    spec = {"name": C, "machine_pools": [{"name": "pool-a"}]}
    result = summarise(raw, read_spec(spec, C), None)
    orphans = {(o["kind"], o["id"]): o["reason"] for o in result["orphans"]}
    assert orphans == {
        ("auto_scaling_group", "pool-gone"): "machine pool 'pool-gone' is not in the spec",
        ("launch_template", "lt-2"): "machine pool 'pool-gone' is not in the spec",
    }
    assert [r["name"] for r in result["resources"]["auto_scaling_group"]] == ["pool-a", "pool-gone"]


# machine pools, Nodes and the EKS side ---------------------------------------------------------------------------
def node(instance_id: str, ready: str = "True", **labels: str) -> NodeView:
    return NodeView.from_api(
        {
            "metadata": {"name": f"ip-{instance_id}", "labels": labels},
            "spec": {"providerID": f"aws:///{ZONES[0]}/{instance_id}"},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }
    )


def pool_instance(instance_id: str, pool: str, state: str = "running") -> dict[str, Any]:
    raw = instance(instance_id, None, state)
    raw["Tags"] += tags(**{"aws:autoscaling:groupName": pool})
    return raw


def pooled_cluster() -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    raw = network()
    raw["instance"] = [instance("i-cp", "control-plane"), pool_instance("i-p1", "mp-0"), pool_instance("i-p2", "mp-0")]
    raw["auto_scaling_group"] = [{"AutoScalingGroupName": "mp-0", "Tags": owned("node"), "DesiredCapacity": 2}]
    return raw, {"name": C, "machine_pools": [{"name": "mp-0", "kind": "asg", "min_size": 1}]}


def test_a_pool_is_judged_by_its_auto_scaling_group_its_instances_and_their_nodes():
    raw, spec = pooled_cluster()
    unread = summarise(raw, read_spec(spec, C), None)
    assert unread["machine_pools"]["mp-0"] == {
        "kind": "asg",
        "desired": 2,
        "in_service": 2,
        "instances": ["i-p1", "i-p2"],
        "nodes_ready": None,
        "ready": True,
        "reason": "ReplicasReady",
        "message": "2 of 2 in service",
    }
    # "not ready: none" is not claimed when the Nodes were not read
    assert unread["not_read"] == ["Nodes: not asked"]
    nodes = NodesRead((node("i-cp"), node("i-p1"), node("i-p2", ready="False")))
    read = summarise(raw, read_spec(spec, C), None, nodes=nodes)
    assert read["not_read"] == []
    assert (read["machine_pools"]["mp-0"]["reason"], read["machine_pools"]["mp-0"]["nodes_ready"]) == (
        "WaitingForNodes",
        1,
    )
    assert read["machines"]["control-plane"]["nodes_ready"] == 1 and read["ready"] is False
    del raw["auto_scaling_group"][0]
    assert summarise(raw, read_spec(spec, C), None, nodes=nodes)["machine_pools"]["mp-0"]["reason"] == "ASGNotFound"


def test_a_machine_whose_node_is_not_ready_makes_its_group_not_ready():
    raw = network()
    raw["instance"] = [instance("i-1", "md-0"), instance("i-2", "md-0")]
    spec = {"name": C, "machine_deployments": [{"name": "md-0", "replicas": 2}]}
    group = summarise(raw, read_spec(spec, C), None, nodes=NodesRead((node("i-1"), node("i-2", "Unknown"))))
    assert group["machines"]["md-0"]["reason"] == "NodeNotReady"
    assert group["machines"]["md-0"]["message"] == "2 of 2 running, 1 Nodes Ready"


EKS_SPEC = {
    "name": C,
    "kind": "eks",
    "eks": {
        "addons": [{"name": "vpc-cni"}, {"name": "coredns"}],
        "node_groups": [{"name": "ng-0"}],
        "fargate_profiles": [{"name": "fp-0"}],
        "associate_oidc_provider": True,
        "access_config": {"authentication_mode": "API_AND_CONFIG_MAP"},
        "iam_authenticator": {"map_roles": [{"rolearn": "arn:aws:iam::123456789012:role/ops"}]},
    },
}


def eks_seen(cluster_status: str = "ACTIVE", **states: str) -> EksObserved:
    def item(name: str) -> dict[str, Any]:
        return {"status": states.get(name, "ACTIVE"), "scalingConfig": {"desiredSize": 2}}

    return EksObserved(
        {
            "name": C,
            "status": cluster_status,
            "version": "1.31",
            "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
            "identity": {"oidc": {"issuer": "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"}},
        },
        role={"RoleName": f"{C}-iam-service-role", "Arn": f"arn:aws:iam::123456789012:role/{C}-iam-service-role"},
        node_groups={"ng-0": item("ng-0")},
        fargate_profiles={"fp-0": item("fp-0")},
        addons={"vpc-cni": item("vpc-cni"), "coredns": item("coredns")},
        access_entries=["arn:aws:iam::123456789012:role/ops"],
        oidc_providers=["arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"],
    )


def test_every_eks_resource_has_its_condition():
    nodes = NodesRead(
        (
            node("i-a", **{"eks.amazonaws.com/nodegroup": "ng-0"}),
            node("i-b", "False", **{"eks.amazonaws.com/nodegroup": "ng-0"}),
        )
    )
    result = summarise(network(), read_spec(EKS_SPEC, C), None, eks_seen(), nodes)
    eks_conditions = {k: v["status"] for k, v in result["conditions"].items() if k not in run(network())["conditions"]}
    assert eks_conditions == {
        "EKSControlPlaneReady": True,
        "IAMControlPlaneRolesReady": True,
        "EKSAddonsConfigured": True,
        "EKSNodegroupReady": True,
        "EKSFargateProfileReady": True,
        "OIDCProviderReady": True,
        "EKSAccessEntriesReady": True,
    }
    assert result["eks"]["node_groups"]["ng-0"] | {"created_at": None} == {
        "status": "ACTIVE",
        "version": None,
        "release_version": None,
        "capacity_type": None,
        "instance_types": [],
        "desired": 2,
        "min": None,
        "max": None,
        "health_issues": [],
        "created_at": None,
        "nodes": 2,
        "nodes_ready": 1,
    }
    # aws-auth is in the cluster: not claimed
    assert result["not_read"] == [
        "IAMAuthenticatorConfigured: the aws-auth ConfigMap lives in the cluster and is not read here"
    ]


@pytest.mark.parametrize(
    "seen, condition, reason",
    [
        (eks_seen("CREATING"), "EKSControlPlaneReady", "EKSControlPlaneCreating"),
        (eks_seen("FAILED"), "EKSControlPlaneReady", "EKSControlPlaneReconciliationFailed"),
        (eks_seen(**{"ng-0": "CREATING"}), "EKSNodegroupReady", "EKSNodegroupCreating"),
        (eks_seen(**{"ng-0": "DEGRADED"}), "EKSNodegroupReady", "EKSNodegroupNotFound"),
        (eks_seen(**{"fp-0": "CREATING"}), "EKSFargateProfileReady", "EKSFargateCreating"),
        (eks_seen(**{"coredns": "DEGRADED"}), "EKSAddonsConfigured", "EKSAddonsConfiguredFailed"),
        (EksObserved(eks_seen().cluster), "IAMControlPlaneRolesReady", "IAMControlPlaneRolesReconciliationFailed"),
        (EksObserved(eks_seen().cluster), "OIDCProviderReady", "OIDCProviderNotFound"),
        (EksObserved(eks_seen().cluster), "EKSAccessEntriesReady", "AccessEntriesMissing"),
        (EksObserved(None), "EKSControlPlaneReady", "EKSControlPlaneNotFound"),
    ],
)
def test_eks_conditions_say_why_not(seen, condition, reason):
    result = summarise(network(), read_spec(EKS_SPEC, C), None, seen, NodesRead(()))
    assert (result["conditions"][condition]["status"], result["conditions"][condition]["reason"]) == (False, reason)
    assert result["ready"] is False
