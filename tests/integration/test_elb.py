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
def network(aws, run_module) -> dict[str, Any]:
    """A CAPA network (2 zones: public and private subnets, security groups) made by the collection's modules."""
    vpc = run_module("clusterapi.aws.capa_vpc", {"cluster_name": CLUSTER})["vpc"]
    subnets = run_module(
        "clusterapi.aws.capa_subnet",
        {
            "cluster_name": CLUSTER,
            "vpc_id": vpc["id"],
            "vpc_cidr_block": vpc["cidr_block"],
            "internet_gateway_id": vpc["internet_gateway_id"],
            "availability_zone_usage_limit": 2,
            "nat_gateways": "none",
            "wait_timeout": 30,
        },
    )["subnets"]
    groups = run_module(
        "clusterapi.aws.capa_security_group",
        {"cluster_name": CLUSTER, "vpc_id": vpc["id"], "vpc_cidr_block": vpc["cidr_block"]},
    )["security_groups"]
    assert len(subnets) == 4, subnets
    return {
        "vpc_id": vpc["id"],
        "subnets": subnets,
        "security_group_ids": [groups["apiserver-lb"]["id"]],
        "public": sorted(s["id"] for s in subnets if s["is_public"]),
        "private": sorted(s["id"] for s in subnets if not s["is_public"]),
        "node_sg": groups["node"]["id"],
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
        "elasticloadbalancing:DescribeLoadBalancerAttributes": 1,
        "elasticloadbalancing:DescribeLoadBalancers": 1,
        "elasticloadbalancing:DescribeTags": 1,
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
            "elasticloadbalancing:ModifyLoadBalancerAttributes",
            "elasticloadbalancing:ConfigureHealthCheck",
            "elasticloadbalancing:AddTags",
            "elasticloadbalancing:AttachLoadBalancerToSubnets",
            "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
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
    assert [p["call"] for p in gone["plan"]] == ["elasticloadbalancing:DeleteLoadBalancer"]
    assert gone["load_balancer"] is None
    assert elb.describe_load_balancers()["LoadBalancerDescriptions"] == []
    again = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent", "wait_timeout": 30})
    assert not again["changed"]
