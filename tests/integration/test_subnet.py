"""capa_subnet against the moto server: default layout, no-op, check mode, NAT modes, explicit and
bring-your-own subnets, route repair, bad input, delete. State is checked with boto3 directly."""

from __future__ import annotations

import pytest

CLUSTER = "sn-it"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE = "sigs.k8s.io/cluster-api-provider-aws/role"
CCM = f"kubernetes.io/cluster/{CLUSTER}"
MODULE = "clusterapi.aws.capa_subnet"
OWNED_FILTER = [{"Name": f"tag:{OWNER}", "Values": ["owned"]}]
# No zones: the default layout's subnets exist in as many zones as it allows, so they are its zones.
# No Elastic IPs either: as CAPA, they are read to create a NAT gateway (or to carry a tag change of the cluster's
# to its gateways' addresses); a gateway's own answer has its address.
NOOP_DESCRIBES = {
    "ec2:DescribeNatGateways": 1,
    "ec2:DescribeRouteTables": 1,
    "ec2:DescribeSubnets": 1,
    "ec2:DescribeVpcs": 1,
}


def tags(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def make_vpc(run_module):
    vpc = run_module("clusterapi.aws.capa_vpc", {"cluster_name": CLUSTER})["vpc"]
    return {"vpc_id": vpc["id"], "vpc_cidr_block": vpc["cidr_block"], "internet_gateway_id": vpc["internet_gateway_id"]}


def subnet_args(network, **extra):
    return {"cluster_name": CLUSTER, "wait_timeout": 30, **network, **extra}


def owned(ec2):
    """Everything the cluster owns in the subnet tier, as boto3 sees it."""
    nats = ec2.describe_nat_gateways(Filters=OWNED_FILTER)["NatGateways"]
    return {
        "subnets": ec2.describe_subnets(Filters=OWNED_FILTER)["Subnets"],
        "tables": ec2.describe_route_tables(Filters=OWNED_FILTER)["RouteTables"],
        "nats": [n for n in nats if n["State"] not in ("deleted", "deleting", "failed")],
        "eips": ec2.describe_addresses(Filters=OWNED_FILTER)["Addresses"],
    }


def default_route(table):
    [route] = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"] or [None]
    return route and (route.get("NatGatewayId") or route.get("GatewayId"))


def table_of(tables, subnet_id):
    [table] = [t for t in tables if any(a.get("SubnetId") == subnet_id for a in t["Associations"])]
    return table


def test_default_layout_then_noop_then_absent(aws, run_module):
    network = make_vpc(run_module)
    first = run_module(MODULE, subnet_args(network))
    assert first["changed"] is True, first
    calls = [p["call"] for p in first["plan"]]
    # CAPA's order: subnets, then EIPs and NAT gateways, then route tables with their routes and associations.
    assert calls.index("ec2:CreateNatGateway") > calls.index("ec2:ModifySubnetAttribute")
    assert calls.index("ec2:CreateRouteTable") > max(i for i, c in enumerate(calls) if c == "ec2:CreateNatGateway")
    assert first["availability_zones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]

    ec2 = aws.client("ec2")
    state = owned(ec2)
    layout = sorted((s["CidrBlock"], s["AvailabilityZone"]) for s in state["subnets"])
    assert layout == sorted(
        [
            ("10.0.0.0/20", "us-east-1a"),
            ("10.0.16.0/20", "us-east-1b"),
            ("10.0.32.0/20", "us-east-1c"),
            ("10.0.64.0/18", "us-east-1a"),
            ("10.0.128.0/18", "us-east-1b"),
            ("10.0.192.0/18", "us-east-1c"),
        ]
    )
    nat_by_zone = {}
    subnet_zone = {s["SubnetId"]: s["AvailabilityZone"] for s in state["subnets"]}
    for nat in state["nats"]:
        assert tags(nat)["Name"] == f"{CLUSTER}-nat" and tags(nat)[ROLE] == "common"
        nat_by_zone[subnet_zone[nat["SubnetId"]]] = nat["NatGatewayId"]
    assert sorted(nat_by_zone) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert len(state["eips"]) == 3 and all(tags(e)["Name"] == f"{CLUSTER}-eip-common" for e in state["eips"])
    assert sorted(first["nat_gateway_ips"]) == sorted(e["PublicIp"] for e in state["eips"])
    assert len(state["tables"]) == 6
    for subnet in state["subnets"]:
        public = subnet["CidrBlock"].endswith("/20")
        kind = "public" if public else "private"
        zone = subnet["AvailabilityZone"]
        t = tags(subnet)
        assert t["Name"] == f"{CLUSTER}-subnet-{kind}-{zone}" and t[ROLE] == kind and t[CCM] == "owned"
        assert t["kubernetes.io/role/elb" if public else "kubernetes.io/role/internal-elb"] == "1"
        assert subnet["MapPublicIpOnLaunch"] is public
        table = table_of(state["tables"], subnet["SubnetId"])
        assert tags(table)["Name"] == f"{CLUSTER}-rt-{kind}-{zone}"
        assert tags(table)[ROLE] == "common" and tags(table)[CCM] == "owned"
        assert default_route(table) == (network["internet_gateway_id"] if public else nat_by_zone[zone])
    for nat in state["nats"]:  # each NAT sits in its zone's public subnet
        assert [s for s in state["subnets"] if s["SubnetId"] == nat["SubnetId"]][0]["CidrBlock"].endswith("/20")

    aws.reset_requests()
    second = run_module(MODULE, subnet_args(network))
    assert second["changed"] is False and second["plan"] == []
    assert second["api_calls"] == NOOP_DESCRIBES
    assert aws.mutating_requests() == []
    assert sorted(s["id"] for s in second["subnets"]) == sorted(s["id"] for s in first["subnets"])
    assert second["availability_zones"] == first["availability_zones"]

    gone = run_module(MODULE, {"cluster_name": CLUSTER, "vpc_id": network["vpc_id"], "state": "absent"})
    assert gone["changed"] is True and gone["subnets"] == []
    assert owned(ec2) == {"subnets": [], "tables": [], "nats": [], "eips": []}
    again = run_module(MODULE, {"cluster_name": CLUSTER, "vpc_id": network["vpc_id"], "state": "absent"})
    assert again["changed"] is False
    # The VPC can go now: nothing of this tier is left in it.
    assert run_module("clusterapi.aws.capa_vpc", {"cluster_name": CLUSTER, "state": "absent"})["changed"] is True


def test_check_mode_from_empty_plans_everything_and_creates_nothing(aws, run_module):
    args = subnet_args(
        {
            "vpc_id": f"planned:vpc:{CLUSTER}-vpc",
            "vpc_cidr_block": "10.0.0.0/16",
            "internet_gateway_id": f"planned:igw:{CLUSTER}-igw",
        }
    )
    result = run_module(MODULE, args, check=True)
    assert result["changed"] is True
    calls = [p["call"] for p in result["plan"]]
    assert calls == (
        ["ec2:CreateSubnet"] * 6
        + ["ec2:ModifySubnetAttribute"] * 3
        + ["ec2:AllocateAddress", "ec2:CreateNatGateway"] * 3
        + ["ec2:CreateRouteTable", "ec2:CreateRoute", "ec2:AssociateRouteTable"] * 6
    )
    assert result["subnets"][0]["id"] == f"planned:subnet:{CLUSTER}-subnet-public-us-east-1a"
    assert result["subnets"][0]["route_table_id"] == f"planned:rtb:{CLUSTER}-rt-public-us-east-1a"
    assert result["subnets"][3]["nat_gateway_id"] == "planned:nat:us-east-1a"
    assert [n["id"] for n in result["nat_gateways"]] == [f"planned:nat:us-east-1{z}" for z in "abc"]
    assert all(ip.startswith("planned:") for ip in result["nat_gateway_ips"]) and len(result["nat_gateway_ips"]) == 3
    # The zones had to be chosen: one describe, nothing else (no describe with the placeholder id).
    assert result["api_calls"] == {"ec2:DescribeAvailabilityZones": 1}
    assert aws.mutating_requests() == []
    assert aws.client("ec2").describe_subnets(Filters=OWNED_FILTER)["Subnets"] == []


EXPLICIT = [
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24", "is_public": True, "tags": {"tier": "edge"}},
    {"availability_zone": "us-east-1b", "cidr_block": "10.0.1.0/24", "is_public": True},
    {"availability_zone": "us-east-1a", "cidr_block": "10.0.16.0/20"},
    {"availability_zone": "us-east-1b", "cidr_block": "10.0.32.0/20"},
]


def test_explicit_subnets_single_nat_and_route_repair(aws, run_module):
    network = make_vpc(run_module)
    result = run_module(MODULE, subnet_args(network, subnets=EXPLICIT, nat_gateways="single"))
    assert result["changed"] is True
    ec2 = aws.client("ec2")
    state = owned(ec2)
    assert sorted(s["CidrBlock"] for s in state["subnets"]) == sorted(e["cidr_block"] for e in EXPLICIT)
    [nat] = state["nats"]
    [edge] = [s for s in state["subnets"] if s["CidrBlock"] == "10.0.0.0/24"]
    assert nat["SubnetId"] == edge["SubnetId"] and tags(edge)["tier"] == "edge"
    private = [s for s in state["subnets"] if s["CidrBlock"].endswith("/20")]
    for subnet in private:
        assert default_route(table_of(state["tables"], subnet["SubnetId"])) == nat["NatGatewayId"]
    assert [s["nat_gateway_id"] for s in result["subnets"] if not s["is_public"]] == [nat["NatGatewayId"]] * 2

    # Someone points a private route at the internet gateway: the next run replaces it, and only that.
    table = table_of(state["tables"], private[0]["SubnetId"])
    ec2.replace_route(
        RouteTableId=table["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", GatewayId=network["internet_gateway_id"]
    )
    aws.reset_requests()
    repaired = run_module(MODULE, subnet_args(network, subnets=EXPLICIT, nat_gateways="single"))
    assert [(p["call"], p["resource"]) for p in repaired["plan"]] == [
        ("ec2:ReplaceRoute", f"{CLUSTER}-rt-private-{private[0]['AvailabilityZone']}")
    ]
    assert [r["operation"] for r in aws.mutating_requests()] == ["ReplaceRoute"]
    fixed = ec2.describe_route_tables(RouteTableIds=[table["RouteTableId"]])["RouteTables"][0]
    assert default_route(fixed) == nat["NatGatewayId"]


def test_no_nat_gateways(aws, run_module):
    network = make_vpc(run_module)
    result = run_module(MODULE, subnet_args(network, subnets=EXPLICIT, nat_gateways="none"))
    assert result["nat_gateways"] == [] and result["nat_gateway_ips"] == []
    state = owned(aws.client("ec2"))
    assert state["nats"] == [] and state["eips"] == [] and len(state["tables"]) == 4
    for subnet in state["subnets"]:
        public = subnet["CidrBlock"].endswith("/24")
        route = default_route(table_of(state["tables"], subnet["SubnetId"]))
        assert route == (network["internet_gateway_id"] if public else None)
    # Without vpc_id, absent finds the cluster's subnets and route tables by their tags.
    gone = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent"})
    assert gone["changed"] is True
    assert owned(aws.client("ec2")) == {"subnets": [], "tables": [], "nats": [], "eips": []}


def test_bring_your_own_vpc_and_subnets(aws, run_module):
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.0.0/24", AvailabilityZone="us-east-1a")["Subnet"]
    private = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.1.0/24", AvailabilityZone="us-east-1b")["Subnet"]
    table = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    ec2.associate_route_table(RouteTableId=table, SubnetId=public["SubnetId"])
    args = {
        "cluster_name": CLUSTER,
        "vpc_id": vpc_id,
        "subnets": [{"id": public["SubnetId"]}, {"id": private["SubnetId"]}],
    }

    result = run_module(MODULE, args)
    assert result["changed"] is True
    assert [p["call"] for p in result["plan"]] == ["ec2:CreateTags", "ec2:CreateTags"]
    by_id = {s["id"]: s for s in result["subnets"]}
    assert by_id[public["SubnetId"]]["is_public"] is True and by_id[private["SubnetId"]]["is_public"] is False
    assert not any(s["managed"] for s in result["subnets"]) and result["nat_gateways"] == []
    described = {s["SubnetId"]: tags(s) for s in ec2.describe_subnets(SubnetIds=list(by_id))["Subnets"]}
    assert described[public["SubnetId"]] == {CCM: "shared", "kubernetes.io/role/elb": "1"}
    assert described[private["SubnetId"]] == {CCM: "shared", "kubernetes.io/role/internal-elb": "1"}
    assert owned(ec2) == {"subnets": [], "tables": [], "nats": [], "eips": []}
    assert run_module(MODULE, args)["changed"] is False

    # Creating a subnet in a VPC the cluster does not own is refused after the describes, before any change.
    aws.reset_requests()
    refused = run_module(
        MODULE, {**args, "subnets": [{"availability_zone": "us-east-1a", "cidr_block": "10.20.9.0/24"}]}
    )
    assert refused.get("failed") is True and refused["field"] == "subnets[0]"
    assert aws.mutating_requests() == []

    gone = run_module(MODULE, {**args, "state": "absent"})
    assert [p["call"] for p in gone["plan"]] == ["ec2:DeleteTags", "ec2:DeleteTags"]
    left = {s["SubnetId"]: tags(s) for s in ec2.describe_subnets(SubnetIds=list(by_id))["Subnets"]}
    assert left[public["SubnetId"]] == {"kubernetes.io/role/elb": "1"}
    assert left[private["SubnetId"]] == {"kubernetes.io/role/internal-elb": "1"}


BASE = {"cluster_name": CLUSTER, "vpc_id": "vpc-0123456789abcdef0", "vpc_cidr_block": "10.0.0.0/16"}


@pytest.mark.parametrize(
    "extra, field",
    [
        ({"subnets": [{"availability_zone": "us-east-1a", "cidr_block": "10.1.0.0/24"}]}, "subnets[0].cidr_block"),
        ({"subnets": [{"availability_zone": "us-east-1a", "cidr_block": "10.0.0/24"}]}, "subnets[0].cidr_block"),
        (
            {
                "subnets": [
                    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/20"},
                    {"availability_zone": "us-east-1b", "cidr_block": "10.0.8.0/24"},
                ]
            },
            "subnets[1].cidr_block",
        ),
        (
            {"subnets": [{"availability_zone": "eu-west-1a", "cidr_block": "10.0.0.0/24"}]},
            "subnets[0].availability_zone",
        ),
        ({"subnets": [{"cidr_block": "10.0.0.0/24"}]}, "subnets[0]"),
        ({"vpc_cidr_block": "10.0.0.0/33"}, "vpc_cidr_block"),
        ({"vpc_id": None}, "vpc_id"),
        ({"vpc_id": "planned:vpc:x", "vpc_cidr_block": None}, "vpc_cidr_block"),
        ({"availability_zone_usage_limit": 0}, "availability_zone_usage_limit"),
    ],
)
def test_bad_input_fails_naming_the_field_before_any_request(aws, run_module, extra, field):
    args = {k: v for k, v in {**BASE, **extra}.items() if v is not None}
    result = run_module(MODULE, args)
    assert result.get("failed") is True, result
    assert result["field"] == field and result["msg"].startswith(field), result["msg"]
    assert result["api_calls"] == {}
    assert aws.requests() == []


def test_unknown_zone_fails_after_the_zone_describe_only(aws, run_module):
    network = make_vpc(run_module)
    aws.reset_requests()
    subnets = [{"availability_zone": "us-east-1z", "cidr_block": "10.0.0.0/24", "is_public": True}]
    result = run_module(MODULE, subnet_args(network, subnets=subnets))
    assert result.get("failed") is True and result["field"] == "subnets[0].availability_zone", result
    assert "ec2:DescribeAvailabilityZones" in result["api_calls"]
    assert aws.mutating_requests() == []


def test_nat_gateways_left_pending_are_routed_by_the_run_that_waits_for_them(aws, latency, run_module):
    """nat_gateway_wait=false (the cluster role's create, so the EKS control plane and the load balancer start
    while the gateways settle): the gateways are created and left pending - under the latency model at 1/100 a NAT
    gateway is pending 1.05 s - and no route is made to a gateway that is not available, as CAPA waits before it
    routes. The next run (nat_gateway_wait true) waits for them and makes exactly the private routes; then a no-op."""
    network = make_vpc(run_module)
    latency(0.01)
    ec2 = aws.client("ec2")

    early = run_module(MODULE, subnet_args(network, nat_gateway_wait=False))
    calls = [p["call"] for p in early["plan"]]
    assert calls.count("ec2:CreateNatGateway") == 3 and calls.count("ec2:CreateRoute") == 3  # the public ones
    assert early["api_calls"]["ec2:DescribeNatGateways"] == 1  # nothing waited
    assert {n["state"] for n in early["nat_gateways"]} == {"pending"}
    private = [s for s in early["subnets"] if not s["is_public"]]
    assert len(private) == 3 and all(s["nat_gateway_id"] is None for s in private)
    state = owned(ec2)
    assert {n["State"] for n in state["nats"]} == {"pending"}  # still pending when the module returned
    assert [default_route(table_of(state["tables"], s["id"])) for s in private] == [None, None, None]
    assert all(table_of(state["tables"], s["id"])["Associations"] for s in private)

    settled = run_module(MODULE, subnet_args(network))
    assert settled["changed"] is True
    assert [p["call"] for p in settled["plan"]] == ["ec2:CreateRoute"] * 3
    assert {n["state"] for n in settled["nat_gateways"]} == {"available"}
    nat_by_zone = {n["availability_zone"]: n["id"] for n in settled["nat_gateways"]}
    state = owned(ec2)
    for subnet in (s for s in settled["subnets"] if not s["is_public"]):
        assert subnet["nat_gateway_id"] == nat_by_zone[subnet["availability_zone"]]
        assert default_route(table_of(state["tables"], subnet["id"])) == subnet["nat_gateway_id"]

    again = run_module(MODULE, subnet_args(network, nat_gateway_wait=False))
    assert again["changed"] is False and again["plan"] == []


def test_absent_without_waiting_releases_the_egress_and_leaves_the_rest_to_a_run_that_waits(aws, latency, run_module):
    """state=absent, wait=false (the cluster role's deletion, while the control plane goes): the route tables are
    deleted and the NAT gateways' deletion started - under the latency model at 1/100 a NAT gateway is deleting for
    0.55 s - and the module returns; the Elastic IPs and subnets, which AWS frees only once the gateways are gone,
    are left. The next run (wait) waits for the gateways and deletes the rest; then nothing is left."""
    network = make_vpc(run_module)
    run_module(MODULE, subnet_args(network))
    ec2 = aws.client("ec2")
    latency(0.01)
    absent = {"cluster_name": CLUSTER, "vpc_id": network["vpc_id"], "state": "absent", "wait_timeout": 30}

    early = run_module(MODULE, {**absent, "wait": False})
    calls = [p["call"] for p in early["plan"]]
    assert calls.count("ec2:DeleteRouteTable") == 6 and calls.count("ec2:DeleteNatGateway") == 3
    assert "ec2:ReleaseAddress" not in calls and "ec2:DeleteSubnet" not in calls
    assert early["api_calls"]["ec2:DescribeNatGateways"] == 1  # nothing waited
    nats = ec2.describe_nat_gateways(Filter=[{"Name": f"tag:{OWNER}", "Values": ["owned"]}])["NatGateways"]
    assert {n["State"] for n in nats} == {"deleting"}
    left = owned(ec2)
    assert left["tables"] == [] and len(left["subnets"]) == 6 and len(left["eips"]) == 3

    rest = run_module(MODULE, absent)
    calls = [p["call"] for p in rest["plan"]]
    assert calls.count("ec2:ReleaseAddress") == 3 and calls.count("ec2:DeleteSubnet") == 6
    assert "ec2:DeleteNatGateway" not in calls and "ec2:DeleteRouteTable" not in calls
    assert owned(ec2) == {"subnets": [], "tables": [], "nats": [], "eips": []}
