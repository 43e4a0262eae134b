# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_elb through ansible-playbook against the moto server, checked with boto3.

The network comes from capa_vpc, capa_subnet and capa_security_group (each run with run_module), so the load
balancer is built on exactly what those modules return.
"""

from __future__ import annotations

from typing import Any

import pytest

CLUSTER = "elb-it"
MODULE = "clusterapi.aws.capa_elb"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
CCM = f"kubernetes.io/cluster/{CLUSTER}"
LB_NAME = f"{CLUSTER}-apiserver"


def _tags(items: list[dict[str, str]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in items or []}


def _ops(records: list[dict[str, str]]) -> list[str]:
    return [f"{r['service']}:{r['operation']}" for r in records]


@pytest.fixture
def network(build_network) -> dict[str, Any]:
    """A CAPA network (2 zones: public and private subnets, security groups) made by the collection's modules."""
    network = build_network(CLUSTER)
    return {
        "vpc_id": network["vpc_id"],
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["apiserver-lb"]["id"]],
        "public": sorted(s["id"] for s in network["subnets"] if s["is_public"]),
        "private": sorted(s["id"] for s in network["subnets"] if not s["is_public"]),
        "node_sg": network["groups"]["node"]["id"],
    }


def elb_args(network: dict[str, Any], **extra: Any) -> dict[str, Any]:
    args = {
        "cluster_name": CLUSTER,
        "vpc_id": network["vpc_id"],
        "subnets": network["subnets"],
        "security_group_ids": network["security_group_ids"],
        "wait_timeout": 30,
    }
    args.update(extra)
    return args


# classic -------------------------------------------------------------------------------------------------------
def test_classic_create_noop_drift_and_delete(aws, run_module, network):
    first = run_module(MODULE, elb_args(network))
    assert not first.get("failed"), first
    assert first["changed"]
    lb = first["load_balancer"]
    assert lb["name"] == LB_NAME and lb["type"] == "classic" and lb["managed"] is True
    assert first["endpoint"] == {"host": lb["dns_name"], "port": 6443}
    assert first["conditions"]["LoadBalancerReady"]["status"] == "True"

    elb = aws.client("elb")
    [described] = elb.describe_load_balancers(LoadBalancerNames=[LB_NAME])["LoadBalancerDescriptions"]
    assert [d["Listener"] for d in described["ListenerDescriptions"]] == [
        {"Protocol": "TCP", "LoadBalancerPort": 6443, "InstanceProtocol": "TCP", "InstancePort": 6443}
    ]
    assert described["HealthCheck"] == {
        "Target": "TCP:6443",
        "Interval": 5,
        "Timeout": 4,
        "HealthyThreshold": 2,
        "UnhealthyThreshold": 6,
    }
    assert described["Scheme"] == "internet-facing"
    assert sorted(described["Subnets"]) == network["public"]
    assert described["SecurityGroups"] == network["security_group_ids"]
    attributes = elb.describe_load_balancer_attributes(LoadBalancerName=LB_NAME)["LoadBalancerAttributes"]
    assert attributes["ConnectionSettings"]["IdleTimeout"] == 600
    assert attributes["CrossZoneLoadBalancing"]["Enabled"] is False
    tags = _tags(elb.describe_tags(LoadBalancerNames=[LB_NAME])["TagDescriptions"][0]["Tags"])
    assert tags == {"Name": LB_NAME, OWNER: "owned", ROLE: "apiserver"}

    aws.reset_requests()
    second = run_module(MODULE, elb_args(network))
    assert not second["changed"], second["plan"]
    assert second["plan"] == []
    assert aws.mutating_requests() == []
    assert second["api_calls"] == {
        "elb:DescribeLoadBalancerAttributes": 1,
        "elb:DescribeLoadBalancers": 1,
        "elb:DescribeTags": 1,
    }

    # Drift: attributes, health check, a subnet, the security groups and a tag value.
    elb.modify_load_balancer_attributes(
        LoadBalancerName=LB_NAME,
        LoadBalancerAttributes={"ConnectionSettings": {"IdleTimeout": 60}, "CrossZoneLoadBalancing": {"Enabled": True}},
    )
    elb.configure_health_check(
        LoadBalancerName=LB_NAME,
        HealthCheck={"Target": "TCP:22", "Interval": 30, "Timeout": 5, "HealthyThreshold": 3, "UnhealthyThreshold": 3},
    )
    elb.detach_load_balancer_from_subnets(LoadBalancerName=LB_NAME, Subnets=[network["public"][0]])
    elb.apply_security_groups_to_load_balancer(LoadBalancerName=LB_NAME, SecurityGroups=[network["node_sg"]])
    elb.add_tags(LoadBalancerNames=[LB_NAME], Tags=[{"Key": ROLE, "Value": "other"}])
    repaired = run_module(MODULE, elb_args(network))
    assert repaired["changed"]
    calls = sorted(p["call"] for p in repaired["plan"])
    assert calls == sorted(
        [
            "elb:ModifyLoadBalancerAttributes",
            "elb:ConfigureHealthCheck",
            "elb:AddTags",
            "elb:AttachLoadBalancerToSubnets",
            "elb:ApplySecurityGroupsToLoadBalancer",
        ]
    )
    [described] = elb.describe_load_balancers(LoadBalancerNames=[LB_NAME])["LoadBalancerDescriptions"]
    assert described["HealthCheck"]["Target"] == "TCP:6443"
    assert sorted(described["Subnets"]) == network["public"]
    assert described["SecurityGroups"] == network["security_group_ids"]
    attributes = elb.describe_load_balancer_attributes(LoadBalancerName=LB_NAME)["LoadBalancerAttributes"]
    assert attributes["ConnectionSettings"]["IdleTimeout"] == 600
    assert attributes["CrossZoneLoadBalancing"]["Enabled"] is False
    assert _tags(elb.describe_tags(LoadBalancerNames=[LB_NAME])["TagDescriptions"][0]["Tags"])[ROLE] == "apiserver"
    assert not run_module(MODULE, elb_args(network))["changed"]

    gone = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent", "wait_timeout": 30})
    assert gone["changed"]
    assert [p["call"] for p in gone["plan"]] == ["elb:DeleteLoadBalancer"]
    assert gone["load_balancer"] is None
    assert elb.describe_load_balancers()["LoadBalancerDescriptions"] == []
    again = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent", "wait_timeout": 30})
    assert not again["changed"]


# NLB -----------------------------------------------------------------------------------------------------------
def test_nlb_create_noop_and_delete_in_order(aws, run_module, network):
    args = elb_args(network, type="nlb", health_check_protocol="HTTPS", additional_listeners=[{"port": 22623}])
    first = run_module(MODULE, args)
    assert not first.get("failed"), first
    lb = first["load_balancer"]
    assert lb["type"] == "nlb" and lb["name"] == LB_NAME and lb["managed"] and lb["state"] == "active"
    assert lb["subnets"] == network["public"]
    assert first["conditions"]["LoadBalancerReady"]["status"] == "True"

    v2 = aws.client("elbv2")
    [described] = v2.describe_load_balancers(Names=[LB_NAME])["LoadBalancers"]
    assert described["Type"] == "network" and described["Scheme"] == "internet-facing"
    assert described["VpcId"] == network["vpc_id"]
    assert described["SecurityGroups"] == network["security_group_ids"]
    arn = described["LoadBalancerArn"]
    assert lb["arn"] == arn
    attributes = {a["Key"]: a["Value"] for a in v2.describe_load_balancer_attributes(LoadBalancerArn=arn)["Attributes"]}
    assert attributes["load_balancing.cross_zone.enabled"] == "false"

    groups = {g["Port"]: g for g in v2.describe_target_groups(LoadBalancerArn=arn)["TargetGroups"]}
    assert set(groups) == {6443, 22623}
    api, extra = groups[6443], groups[22623]
    assert api["TargetGroupName"].startswith("apiserver-target-") and len(api["TargetGroupName"]) == 22
    assert extra["TargetGroupName"].startswith("additional-listener-")
    assert (api["Protocol"], api["TargetType"], api["VpcId"]) == ("TCP", "instance", network["vpc_id"])
    assert (api["HealthCheckProtocol"], api["HealthCheckPort"], api["HealthCheckPath"]) == ("HTTPS", "6443", "/readyz")
    assert (api["HealthCheckIntervalSeconds"], api["HealthCheckTimeoutSeconds"]) == (5, 4)
    assert (api["HealthyThresholdCount"], api["UnhealthyThresholdCount"]) == (2, 6)
    assert (extra["HealthCheckProtocol"], extra["HealthCheckPort"]) == ("TCP", "22623")
    assert sorted(lb["target_group_arns"]) == sorted(g["TargetGroupArn"] for g in groups.values())
    assert lb["target_group_arns"][0] == api["TargetGroupArn"]
    for group in groups.values():
        tga = v2.describe_target_group_attributes(TargetGroupArn=group["TargetGroupArn"])["Attributes"]
        tga = {a["Key"]: a["Value"] for a in tga}
        assert tga["target_health_state.unhealthy.connection_termination.enabled"] == "false"
        assert tga["target_health_state.unhealthy.draining_interval_seconds"] == "300"
        assert tga["preserve_client_ip.enabled"] == "false"

    listeners = {li["Port"]: li for li in v2.describe_listeners(LoadBalancerArn=arn)["Listeners"]}
    assert set(listeners) == {6443, 22623}
    assert listeners[6443]["Protocol"] == "TCP"
    assert listeners[6443]["DefaultActions"][0]["TargetGroupArn"] == api["TargetGroupArn"]
    assert listeners[22623]["DefaultActions"][0]["TargetGroupArn"] == extra["TargetGroupArn"]

    every = [arn, *(g["TargetGroupArn"] for g in groups.values()), *(li["ListenerArn"] for li in listeners.values())]
    for item in v2.describe_tags(ResourceArns=every)["TagDescriptions"]:
        assert _tags(item["Tags"]) == {"Name": LB_NAME, OWNER: "owned", ROLE: "apiserver"}, item

    aws.reset_requests()
    second = run_module(MODULE, args)
    assert not second["changed"], second["plan"]
    assert aws.mutating_requests() == []
    assert second["api_calls"] == {
        "elbv2:DescribeListeners": 1,
        "elbv2:DescribeLoadBalancerAttributes": 1,
        "elbv2:DescribeLoadBalancers": 1,
        "elbv2:DescribeTags": 1,
        "elbv2:DescribeTargetGroupAttributes": 2,
        "elbv2:DescribeTargetGroups": 1,
    }
    assert second["load_balancer"] == lb

    # Dropping the additional listener removes its listener and target group (and nothing else).
    fewer = run_module(MODULE, elb_args(network, type="nlb", health_check_protocol="HTTPS"))
    assert [p["call"] for p in fewer["plan"]] == [
        "elbv2:DeleteListener",
        "elbv2:DeleteTargetGroup",
    ]
    assert [g["Port"] for g in v2.describe_target_groups(LoadBalancerArn=arn)["TargetGroups"]] == [6443]

    aws.reset_requests()
    gone = run_module(MODULE, {"cluster_name": CLUSTER, "type": "nlb", "state": "absent", "wait_timeout": 30})
    assert gone["changed"]
    assert [p["call"] for p in gone["plan"]] == [
        "elbv2:DeleteListener",
        "elbv2:DeleteLoadBalancer",
        "elbv2:DeleteTargetGroup",
    ]
    # The server names both load balancer APIs by their shared endpoint.
    assert _ops(aws.mutating_requests()) == [
        "elasticloadbalancing:DeleteListener",
        "elasticloadbalancing:DeleteLoadBalancer",
        "elasticloadbalancing:DeleteTargetGroup",
    ]
    assert v2.describe_load_balancers()["LoadBalancers"] == []
    assert v2.describe_target_groups()["TargetGroups"] == []
    assert not run_module(MODULE, {"cluster_name": CLUSTER, "type": "nlb", "state": "absent"})["changed"]


def test_nlb_with_internal_secondary(aws, run_module, network):
    args = elb_args(network, type="nlb", secondary={"enabled": True, "name": "elb-it-internal"})
    first = run_module(MODULE, args)
    assert not first.get("failed"), first
    primary, secondary = first["load_balancer"], first["secondary_load_balancer"]
    assert (primary["scheme"], secondary["scheme"]) == ("internet-facing", "internal")
    assert secondary["subnets"] == network["private"]
    assert primary["subnets"] == network["public"]
    assert first["endpoint"]["host"] == primary["dns_name"]
    second = run_module(MODULE, args)
    assert not second["changed"], second["plan"]
    assert second["api_calls"]["elbv2:DescribeLoadBalancers"] == 1
    assert second["api_calls"]["elbv2:DescribeTags"] == 1
    gone = run_module(MODULE, {**args, "state": "absent"})
    assert gone["changed"]
    assert aws.client("elbv2").describe_load_balancers()["LoadBalancers"] == []


# external, disabled, cloud-provider ELBs -----------------------------------------------------------------------
def test_external_classic_is_used_unchanged_and_never_deleted(aws, run_module, network):
    elb = aws.client("elb")
    elb.create_load_balancer(
        LoadBalancerName="byo-apiserver",
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 443, "InstanceProtocol": "TCP", "InstancePort": 6443}],
        Subnets=network["public"][:1],
        Scheme="internet-facing",
        Tags=[{"Key": "team", "Value": "platform"}],
    )
    args = {"cluster_name": CLUSTER, "type": "external", "name": "byo-apiserver", "vpc_id": network["vpc_id"]}
    aws.reset_requests()
    result = run_module(MODULE, {**args, "api_server_port": 443})
    assert not result.get("failed"), result
    assert not result["changed"]
    assert aws.mutating_requests() == []
    lb = result["load_balancer"]
    assert (lb["name"], lb["type"], lb["managed"]) == ("byo-apiserver", "classic", False)
    assert result["endpoint"] == {"host": lb["dns_name"], "port": 443}

    gone = run_module(MODULE, {**args, "state": "absent"})
    assert not gone["changed"]
    assert [d["LoadBalancerName"] for d in elb.describe_load_balancers()["LoadBalancerDescriptions"]] == [
        "byo-apiserver"
    ]
    assert _tags(elb.describe_tags(LoadBalancerNames=["byo-apiserver"])["TagDescriptions"][0]["Tags"]) == {
        "team": "platform"
    }

    missing = run_module(MODULE, {**args, "name": "nothing-here"})
    assert missing["failed"] and "nothing-here" in missing["msg"]


def test_disabled_creates_nothing(aws, run_module):
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": CLUSTER, "type": "disabled"})
    assert not result.get("failed"), result
    assert not result["changed"]
    assert result["load_balancer"] is None and result["endpoint"] is None
    assert result["conditions"]["LoadBalancerReady"]["reason"] == "WaitForExternalControlPlaneEndpoint"
    assert result["conditions"]["LoadBalancerReady"]["status"] == "False"
    assert aws.requests() == []


def test_absent_deletes_cloud_provider_elbs_only(aws, run_module, network):
    elb = aws.client("elb")
    listener = [{"Protocol": "TCP", "LoadBalancerPort": 80, "InstanceProtocol": "TCP", "InstancePort": 30080}]
    for name, tags in (
        ("a1b2c3-service", {CCM: "owned"}),
        ("other-service", {"kubernetes.io/cluster/other": "owned"}),
        ("someone-else", {}),
    ):
        elb.create_load_balancer(
            LoadBalancerName=name,
            Listeners=listener,
            Subnets=network["public"][:1],
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()] or [{"Key": "x", "Value": "y"}],
        )
    gone = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent", "wait_timeout": 30})
    assert [(p["call"], p["resource"]) for p in gone["plan"]] == [("elb:DeleteLoadBalancer", "a1b2c3-service")]
    left = sorted(d["LoadBalancerName"] for d in elb.describe_load_balancers()["LoadBalancerDescriptions"])
    assert left == ["other-service", "someone-else"]


def test_name_taken_in_another_vpc_or_scheme_is_an_error(aws, run_module, network):
    ec2 = aws.client("ec2")
    other_vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    other_subnet = ec2.create_subnet(VpcId=other_vpc, CidrBlock="10.1.0.0/24", AvailabilityZone="us-east-1a")
    aws.client("elb").create_load_balancer(
        LoadBalancerName=LB_NAME,
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 6443, "InstanceProtocol": "TCP", "InstancePort": 6443}],
        Subnets=[other_subnet["Subnet"]["SubnetId"]],
    )
    aws.reset_requests()
    result = run_module(MODULE, elb_args(network))
    assert result["failed"]
    assert other_vpc in result["msg"] and "unique within a region" in result["msg"]
    assert aws.mutating_requests() == []


# check mode and bad input --------------------------------------------------------------------------------------
@pytest.mark.parametrize("lb_type", ["classic", "nlb"])
def test_check_mode_from_nothing_plans_everything_and_changes_nothing(aws, run_module, lb_type):
    args = {
        "cluster_name": CLUSTER,
        "type": lb_type,
        "vpc_id": "planned:vpc:elb-it-vpc",
        "subnets": [
            {"id": "planned:subnet:a-public", "availability_zone": "us-east-1a", "is_public": True, "managed": True},
            {"id": "planned:subnet:a-private", "availability_zone": "us-east-1a", "is_public": False},
            {"id": "planned:subnet:b-public", "availability_zone": "us-east-1b", "is_public": True},
        ],
        "security_group_ids": ["planned:sg:elb-it-apiserver-lb"],
    }
    if lb_type == "nlb":
        args["additional_listeners"] = [{"port": 9345}]
    aws.reset_requests()
    result = run_module(MODULE, args, check=True)
    assert not result.get("failed"), result
    assert result["changed"]
    assert aws.mutating_requests() == []
    lb = result["load_balancer"]
    assert lb["dns_name"] == f"planned:dns:{LB_NAME}"
    assert lb["subnets"] == ["planned:subnet:a-public", "planned:subnet:b-public"]
    assert result["endpoint"] == {"host": f"planned:dns:{LB_NAME}", "port": 6443}
    assert result["conditions"]["LoadBalancerReady"]["reason"] == "WaitForDNSName"
    calls = [p["call"].split(":")[1] for p in result["plan"]]
    if lb_type == "classic":
        assert calls == ["CreateLoadBalancer", "ConfigureHealthCheck", "ModifyLoadBalancerAttributes"]
    else:
        assert calls == [
            "CreateLoadBalancer",
            "ModifyLoadBalancerAttributes",
            "CreateTargetGroup",
            "ModifyTargetGroupAttributes",
            "CreateListener",
            "CreateTargetGroup",
            "ModifyTargetGroupAttributes",
            "CreateListener",
        ]
        assert len(lb["target_group_arns"]) == 2
        assert all(a.startswith("planned:tg:") for a in lb["target_group_arns"])


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"type": "external"}, "name"),
        ({"additional_listeners": [{"port": 9345}]}, "additional_listeners"),
        (
            {"type": "nlb", "secondary": {"enabled": True, "name": "x-int", "scheme": "internet-facing"}},
            "secondary.scheme",
        ),
        ({"type": "nlb", "secondary": {"enabled": True, "name": LB_NAME}}, "secondary.name"),
        ({"type": "nlb", "secondary": {"enabled": True}}, "secondary.name"),
        ({"name": "x" * 33}, "name"),
        ({"type": "nlb", "additional_listeners": [{"port": 6443}]}, "additional_listeners[0].port"),
        ({"subnets": [{"id": "subnet-0123456789abcdef0"}]}, "subnets[0].availability_zone"),
        ({"security_group_ids": []}, "security_group_ids"),
    ],
)
def test_bad_input_fails_before_any_request(aws, run_module, extra, field):
    args = {
        "cluster_name": CLUSTER,
        "vpc_id": "vpc-0123456789abcdef0",
        "subnets": [{"id": "subnet-0123456789abcdef0", "availability_zone": "us-east-1a", "is_public": True}],
        "security_group_ids": ["sg-0123456789abcdef0"],
        **extra,
    }
    aws.reset_requests()
    result = run_module(MODULE, args)
    assert result.get("failed"), result
    assert result["field"] == field, result["msg"]
    assert result["api_calls"] == {}
    assert aws.requests() == []
