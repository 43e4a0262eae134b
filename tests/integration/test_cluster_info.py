# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_cluster_info against the moto server: a network built by the network modules, orphans and cloud-provider
resources made with boto3, an empty account. Requests are counted both by the module and by the server."""

from __future__ import annotations

from typing import Any

CLUSTER = "info-it"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
CCM = f"kubernetes.io/cluster/{CLUSTER}"
MODULE = "clusterapi.aws.capa_cluster_info"
NETWORK_CONDITIONS = (
    "VpcReady",
    "SubnetsReady",
    "InternetGatewayReady",
    "NatGatewaysReady",
    "RouteTablesReady",
    "ClusterSecurityGroupsReady",
)
# One request per resource type, and nothing else.
EXPECTED_CALLS = {
    "ec2:DescribeVpcs": 1,
    "ec2:DescribeInternetGateways": 1,
    "ec2:DescribeSubnets": 1,
    "ec2:DescribeRouteTables": 1,
    "ec2:DescribeNatGateways": 1,
    # No DescribeAddresses: each Elastic IP the cluster owns is a NAT gateway's, whose answer has its public IP, and
    # the tagging API's has its tags (cluster_info._fetch_elastic_ips).
    "ec2:DescribeSecurityGroups": 1,
    "ec2:DescribeInstances": 1,
    "elb:DescribeLoadBalancers": 1,
    # No DescribeLaunchTemplates nor DescribeAutoScalingGroups: the spec has no machine pools and the tagging API
    # lists no launch template (every pool's group has one; cluster_info._no_pool_to_read).
    "resourcegroupstaggingapi:GetResources": 2,  # CAPA's tag, then the cloud provider's (v2 LBs, target groups)
}


def tag_spec(resource_type: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def build_network(run_module) -> str:
    vpc = run_module("clusterapi.aws.capa_vpc", {"cluster_name": CLUSTER})["vpc"]
    subnets = run_module(
        "clusterapi.aws.capa_subnet",
        {
            "cluster_name": CLUSTER,
            "vpc_id": vpc["id"],
            "vpc_cidr_block": vpc["cidr_block"],
            "internet_gateway_id": vpc["internet_gateway_id"],
            "wait_timeout": 30,
        },
    )
    assert not subnets.get("failed"), subnets
    groups = run_module(
        "clusterapi.aws.capa_security_group",
        {"cluster_name": CLUSTER, "vpc_id": vpc["id"], "vpc_cidr_block": vpc["cidr_block"]},
    )
    assert not groups.get("failed"), groups
    return vpc["id"]


def info(
    run_module, aws, spec: dict[str, Any] | None = None, check: bool = False, limits: dict[str, int] | None = None
) -> dict[str, Any]:
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": CLUSTER, "spec": spec or {"name": CLUSTER}}, check=check)
    assert not result.get("failed"), result
    assert result["changed"] is False and result["plan"] == []
    assert aws.mutating_requests() == [], aws.mutating_requests()
    # One request per resource type; the tagging API twice (CAPA's tag, then the cloud provider's).
    limits = {"resourcegroupstaggingapi:GetResources": 2, **(limits or {})}
    assert all(n <= limits.get(op, 1) for op, n in result["api_calls"].items()), result["api_calls"]
    return result


def test_network_conditions_counts_orphans_and_cloud_provider(aws, run_module):
    vpc_id = build_network(run_module)

    result = info(run_module, aws)
    for name in NETWORK_CONDITIONS:
        assert result["conditions"][name]["status"] is True, (name, result["conditions"][name])
    assert result["vpc_id"] == vpc_id
    counts = result["counts"]
    assert (counts["vpc"], counts["subnet"], counts["nat_gateway"]) == (1, 6, 3)
    assert (counts["elastic_ip"], counts["route_table"], counts["security_group"]) == (3, 6, 4)
    assert result["orphans"] == [] and result["cloud_provider_resources"] == []
    # No load balancer and no machine yet: said so, with CAPA-like reasons.
    assert result["conditions"]["LoadBalancerReady"] == {
        "status": False,
        "reason": "LoadBalancerNotFound",
        "message": "no classic load balancer carries the ownership tag",
    }
    assert result["machines"]["control-plane"]["reason"] == "InstanceNotFound"
    assert "BastionHostReady" not in result["conditions"]
    # Exactly one request per resource type (ELB DescribeTags is skipped when there is no load balancer).
    assert result["api_calls"] == EXPECTED_CALLS
    server_side = sorted(f"{r['service']}:{r['operation']}" for r in aws.requests())
    assert len(server_side) == sum(EXPECTED_CALLS.values()), server_side
    # ... and the addresses are what AWS's own answer says of them.
    addresses = {a["AllocationId"]: a for a in aws.client("ec2").describe_addresses()["Addresses"]}
    assert {e["id"]: e["public_ip"] for e in result["resources"]["elastic_ip"]} == {
        i: a["PublicIp"] for i, a in addresses.items()
    }
    assert all(e["role"] == "common" for e in result["resources"]["elastic_ip"])

    # Check mode reads the same and reports the same.
    assert info(run_module, aws, check=True)["counts"] == counts

    # Things the spec does not explain, tagged as owned, and one the cloud provider made.
    ec2 = aws.client("ec2")
    extra_subnet = ec2.create_subnet(
        VpcId=vpc_id,
        CidrBlock="10.0.48.0/20",
        AvailabilityZone="us-east-1a",
        TagSpecifications=tag_spec("subnet", {OWNER: "owned", ROLE: "public", "Name": "stray"}),
    )["Subnet"]["SubnetId"]
    extra_group = ec2.create_security_group(
        GroupName=f"{CLUSTER}-extra",
        Description="extra",
        VpcId=vpc_id,
        TagSpecifications=tag_spec("security-group", {OWNER: "owned", ROLE: "extra"}),
    )["GroupId"]
    image = ec2.describe_images(Owners=["819546954734"])["Images"][0]["ImageId"]
    stray_instance = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="t3.micro",
        SubnetId=extra_subnet,
        TagSpecifications=tag_spec(
            "instance", {OWNER: "owned", ROLE: "node", "clusterapi.aws/machine-group": "md-gone", "Name": "gone-0"}
        ),
    )["Instances"][0]["InstanceId"]
    public_subnets = [
        s["SubnetId"]
        for s in ec2.describe_subnets(Filters=[{"Name": f"tag:{ROLE}", "Values": ["public"]}])["Subnets"]
        if s["SubnetId"] != extra_subnet
    ]
    stray_template = ec2.create_launch_template(
        LaunchTemplateName="mp-gone",
        LaunchTemplateData={"InstanceType": "t3.micro"},
        TagSpecifications=tag_spec("launch-template", {OWNER: "owned", ROLE: "node"}),
    )["LaunchTemplate"]["LaunchTemplateId"]
    # A pool's group the spec no longer lists, on its template (the tagging API lists the template, not the group).
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName="mp-gone",
        LaunchTemplate={"LaunchTemplateId": stray_template, "Version": "$Latest"},
        MinSize=0,
        MaxSize=0,
        VPCZoneIdentifier=public_subnets[0],
        Tags=[{"Key": OWNER, "Value": "owned", "PropagateAtLaunch": True}],
    )
    stray_address = ec2.allocate_address(
        Domain="vpc", TagSpecifications=tag_spec("elastic-ip", {OWNER: "owned", ROLE: "common", "Name": "stray"})
    )["AllocationId"]
    aws.client("elb").create_load_balancer(
        LoadBalancerName="a1b2c3service",
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 80, "InstancePort": 30080}],
        Subnets=public_subnets[:1],
        Tags=[{"Key": CCM, "Value": "owned"}, {"Key": "kubernetes.io/service-name", "Value": "default/web"}],
    )

    # The classic load balancers are asked by name (the spec's, and those the tagging API lists with either tag): the
    # spec's is missing, so that read fails as a whole and the region's are read instead - one request more.
    result = info(run_module, aws, limits={"elb:DescribeLoadBalancers": 2})
    assert result["api_calls"]["elb:DescribeLoadBalancers"] == 2
    orphans = {o["id"]: o for o in result["orphans"]}
    expected = {extra_subnet, extra_group, stray_instance, stray_address, stray_template, "mp-gone"}
    assert set(orphans) == expected, result["orphans"]
    # A launch template the tagging API lists: described (its latest version is the status's), and an orphan - and
    # so are the auto scaling groups, among them the pool's on it.
    assert result["api_calls"]["ec2:DescribeLaunchTemplates"] == 1
    assert result["api_calls"]["autoscaling:DescribeAutoScalingGroups"] == 1
    assert orphans[stray_template]["reason"] == "machine pool 'mp-gone' is not in the spec"
    assert orphans["mp-gone"]["kind"] == "auto_scaling_group", result["orphans"]
    # An Elastic IP no NAT gateway holds: the addresses are described (AWS's own answer), and it is an orphan.
    assert result["api_calls"]["ec2:DescribeAddresses"] == 1
    assert orphans[stray_address]["reason"] == "allocated for a NAT gateway, used by none"
    assert orphans[extra_subnet]["kind"] == "subnet"
    assert "default layout" in orphans[extra_subnet]["reason"]
    assert orphans[extra_group]["reason"].startswith("role 'extra'")
    assert orphans[stray_instance]["reason"] == "machine group 'md-gone' is not in the spec"
    assert result["cloud_provider_resources"] == [
        {"kind": "load_balancer", "id": "a1b2c3service", "name": "a1b2c3service"}
    ]
    # Orphans do not make the network unready.
    for name in NETWORK_CONDITIONS:
        assert result["conditions"][name]["status"] is True, (name, result["conditions"][name])
    assert result["api_calls"]["elb:DescribeTags"] == 1

    # A spec that lists the subnets explicitly: the stray one is still an orphan, now for the spec's list.
    listed = [
        {"availability_zone": s["availability_zone"], "cidr_block": s["cidr_block"], "is_public": s["public"]}
        for s in result["resources"]["subnet"]
        if s["id"] != extra_subnet
    ]
    explicit = info(
        run_module, aws, spec={"name": CLUSTER, "network": {"subnets": listed}}, limits={"elb:DescribeLoadBalancers": 2}
    )
    assert "not in the spec's subnets" in {o["id"]: o for o in explicit["orphans"]}[extra_subnet]["reason"]
    assert explicit["conditions"]["SubnetsReady"]["status"] is True


def test_empty_account_conditions_false_with_reasons(aws, run_module):
    result = info(run_module, aws, spec={"name": CLUSTER, "bastion": {"enabled": True}})
    reasons = {name: (c["status"], c["reason"]) for name, c in result["conditions"].items()}
    assert reasons == {
        "VpcReady": (False, "VpcNotFound"),
        "SubnetsReady": (False, "SubnetsNotFound"),
        "InternetGatewayReady": (False, "InternetGatewayNotFound"),
        "NatGatewaysReady": (False, "NatGatewaysReconciliationFailed"),
        "RouteTablesReady": (False, "RouteTablesNotFound"),
        "ClusterSecurityGroupsReady": (False, "SecurityGroupsNotFound"),
        "BastionHostReady": (False, "BastionHostNotFound"),
        "LoadBalancerReady": (False, "LoadBalancerNotFound"),
    }
    assert all(c["message"] for c in result["conditions"].values())
    assert result["ready"] is False and result["vpc_id"] is None
    assert set(result["counts"].values()) == {0}
    # No VPC, no subnet to ask for: a subnet lives in its VPC, and the subnets are asked for by VPC.
    assert result["api_calls"] == {call: n for call, n in EXPECTED_CALLS.items() if call != "ec2:DescribeSubnets"}


def test_bad_input_fails_before_any_request(aws, run_module):
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": CLUSTER, "spec": {"name": "other"}})
    assert result["failed"] and result["field"] == "spec.name", result
    result = run_module(
        MODULE, {"cluster_name": CLUSTER, "spec": {"network": {"nat_gateways": "some"}}, "vpc_id": "vpc-1"}
    )
    assert result["failed"] and result["field"] == "spec.network.nat_gateways", result
    result = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent"})
    assert result["failed"] and "state" in result["msg"], result
    assert aws.requests() == []


def test_classic_load_balancers_are_asked_by_name_not_the_regions(aws, run_module):
    """The spec's load balancer and the cloud provider's are described in one request by their names (the tagging API
    lists the cloud provider's); another cluster's in the same region is never described or reported."""
    elb = aws.client("elb")
    listener = [{"Protocol": "TCP", "LoadBalancerPort": 6443, "InstancePort": 6443}]
    for name, tags in (
        (f"{CLUSTER}-apiserver", {OWNER: "owned", ROLE: "apiserver"}),
        ("a1b2c3service", {CCM: "owned"}),
        ("other-apiserver", {"sigs.k8s.io/cluster-api-provider-aws/cluster/other": "owned"}),
    ):
        elb.create_load_balancer(
            LoadBalancerName=name,
            Listeners=listener,
            AvailabilityZones=["us-east-1a"],
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )
    result = info(run_module, aws)
    assert result["conditions"]["LoadBalancerReady"]["status"] is True, result["conditions"]["LoadBalancerReady"]
    assert result["cloud_provider_resources"] == [
        {"kind": "load_balancer", "id": "a1b2c3service", "name": "a1b2c3service"}
    ]
    assert [lb["id"] for lb in result["resources"]["load_balancer"]] == [f"{CLUSTER}-apiserver"]
    assert result["api_calls"]["elb:DescribeLoadBalancers"] == 1 and result["api_calls"]["elb:DescribeTags"] == 1
