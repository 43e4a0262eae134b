"""The network role in a playbook of its own, as a user composing roles runs it, checked with boto3.

(site.yml / delete.yml run the whole cluster: tests/integration/test_cluster.py.)"""

from __future__ import annotations

import ipaddress
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SITE = Path(__file__).parent / "playbooks/network.yml"
DELETE = Path(__file__).parent / "playbooks/network-delete.yml"
ROLE_TAG = "sigs.k8s.io/cluster-api-provider-aws/role"
LITE = {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "none"}


def owner(cluster):
    return f"sigs.k8s.io/cluster-api-provider-aws/cluster/{cluster}"


def inventory(tmp_path, clusters, output_dir):
    hosts = {spec["name"]: {"capa_cluster": spec} for spec in clusters}
    data = {
        "capa_clusters": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                "capa_output_dir": str(output_dir),
            },
            "hosts": hosts,
        }
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def tags(resource):
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def by_owner(ec2, method, key, cluster, states=None):
    items = getattr(ec2, method)(Filters=[{"Name": f"tag:{owner(cluster)}", "Values": ["owned"]}])[key]
    if states:
        items = [i for i in items if i.get("State") in states]
    return items


def everything_owned(ec2, cluster):
    return {
        "vpcs": by_owner(ec2, "describe_vpcs", "Vpcs", cluster),
        "igws": by_owner(ec2, "describe_internet_gateways", "InternetGateways", cluster),
        "subnets": by_owner(ec2, "describe_subnets", "Subnets", cluster),
        "route_tables": by_owner(ec2, "describe_route_tables", "RouteTables", cluster),
        "nat_gateways": by_owner(ec2, "describe_nat_gateways", "NatGateways", cluster, {"pending", "available"}),
        "eips": by_owner(ec2, "describe_addresses", "Addresses", cluster),
        "security_groups": by_owner(ec2, "describe_security_groups", "SecurityGroups", cluster),
    }


def aws_tasks(result):
    """Results of the tasks that talk to AWS (they report api_calls)."""
    return [t for t in result.tasks if isinstance(t.result, dict) and "api_calls" in t.result]


def test_default_network_is_capas_topology_noop_then_deleted(aws, run_playbook, tmp_path):
    inv = inventory(tmp_path, [{"name": "net-it", "region": "us-east-1"}], tmp_path / "out")
    first = run_playbook(SITE, inventory=inv)
    assert first.stats["net-it"]["changed"] > 0

    ec2 = aws.client("ec2")
    owned = everything_owned(ec2, "net-it")
    [vpc] = owned["vpcs"]
    assert vpc["CidrBlock"] == "10.0.0.0/16"
    assert len(owned["igws"]) == 1 and owned["igws"][0]["Attachments"][0]["VpcId"] == vpc["VpcId"]
    subnets = owned["subnets"]
    public = sorted((s["AvailabilityZone"], s["CidrBlock"]) for s in subnets if tags(s)[ROLE_TAG] == "public")
    private = sorted((s["AvailabilityZone"], s["CidrBlock"]) for s in subnets if tags(s)[ROLE_TAG] == "private")
    assert public == [("us-east-1a", "10.0.0.0/20"), ("us-east-1b", "10.0.16.0/20"), ("us-east-1c", "10.0.32.0/20")]
    assert private == [
        ("us-east-1a", "10.0.64.0/18"),
        ("us-east-1b", "10.0.128.0/18"),
        ("us-east-1c", "10.0.192.0/18"),
    ]
    for subnet in subnets:
        kind = tags(subnet)[ROLE_TAG]
        assert tags(subnet)["Name"] == f"net-it-subnet-{kind}-{subnet['AvailabilityZone']}"
        assert subnet["MapPublicIpOnLaunch"] is (kind == "public")
    assert len(owned["nat_gateways"]) == 3 and len(owned["eips"]) == 3
    nat_by_az = {}
    subnet_az = {s["SubnetId"]: s["AvailabilityZone"] for s in subnets}
    for nat in owned["nat_gateways"]:
        assert tags(nat)["Name"] == "net-it-nat"
        assert tags(subnets[[s["SubnetId"] for s in subnets].index(nat["SubnetId"])])[ROLE_TAG] == "public"
        nat_by_az[subnet_az[nat["SubnetId"]]] = nat["NatGatewayId"]
    assert len(nat_by_az) == 3  # one per AZ
    tables = owned["route_tables"]
    assert len(tables) == 6
    for table in tables:
        [association] = [a for a in table["Associations"] if not a.get("Main")]
        subnet = next(s for s in subnets if s["SubnetId"] == association["SubnetId"])
        kind, az = tags(subnet)[ROLE_TAG], subnet["AvailabilityZone"]
        assert tags(table)["Name"] == f"net-it-rt-{kind}-{az}"
        [default] = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
        if kind == "public":
            assert default["GatewayId"] == owned["igws"][0]["InternetGatewayId"]
        else:
            assert default["NatGatewayId"] == nat_by_az[az]
    groups = {tags(g)["Name"]: g for g in owned["security_groups"]}
    assert set(groups) == {"net-it-apiserver-lb", "net-it-lb", "net-it-controlplane", "net-it-node"}
    for kind, items in owned.items():
        for item in items:
            assert tags(item)[owner("net-it")] == "owned", kind
            assert ROLE_TAG in tags(item) and "Name" in tags(item), kind

    # The network as the role reconciled it; CAPA's conditions are capa_cluster_info's (the cluster role's status).
    status = json.loads((tmp_path / "out/net-it/status.json").read_text())
    assert (status["cluster"], status["kind"], status["region"], status["state"]) == (
        "net-it",
        "unmanaged",
        "us-east-1",
        "present",
    )
    assert status["network"]["vpc"]["id"] == vpc["VpcId"] and "conditions" not in status
    assert sorted(s["id"] for s in status["network"]["subnets"]) == sorted(s["SubnetId"] for s in subnets)
    assert set(status["network"]["security_groups"]) == {"apiserver-lb", "lb", "controlplane", "node"}

    aws.reset_requests()
    second = run_playbook(SITE, inventory=inv)
    assert second.stats["net-it"]["changed"] == 0, [t.name for t in second.changed_tasks]
    assert aws.mutating_requests() == []
    for task in aws_tasks(second):
        assert all(count == 1 for op, count in task.result["api_calls"].items() if op != "ec2:DescribeVpcAttribute"), (
            task.name,
            task.result["api_calls"],
        )
    counted = Counter(f"{r['service']}:{r['operation']}" for r in aws.requests())
    reported = Counter()
    for task in aws_tasks(second):
        reported.update(task.result["api_calls"])
    assert counted == reported  # the modules' own count agrees with the server's
    print(f"no-op reconcile of the default network: {sum(counted.values())} requests {dict(counted)}")

    run_playbook(DELETE, inventory=inv)
    leftovers = {kind: items for kind, items in everything_owned(ec2, "net-it").items() if items}
    assert leftovers == {}
    aws.reset_requests()
    again = run_playbook(DELETE, inventory=inv)
    assert again.stats["net-it"]["changed"] == 0  # status.json rewritten with the same content is no change
    assert aws.mutating_requests() == []
    assert json.loads((tmp_path / "out/net-it/status.json").read_text())["state"] == "deleted"


def test_no_output_directory_writes_no_file(aws, run_playbook, tmp_path):
    """capa_output_dir "" : the network role writes no status.json (nor anything else) anywhere."""
    inv = inventory(tmp_path, [{"name": "nofile-it", "region": "us-east-1", "network": LITE}], "")
    work = tmp_path / "cwd"
    work.mkdir()
    run_playbook(SITE, inventory=inv, cwd=work)
    run_playbook(DELETE, inventory=inv, cwd=work)
    assert sorted(p.name for p in work.rglob("*")) == []
    assert not any(p.name == "status.json" for p in tmp_path.rglob("*"))


def test_check_mode_against_an_empty_account_runs_every_task_and_changes_nothing(aws, run_playbook, tmp_path):
    inv = inventory(tmp_path, [{"name": "net-it", "region": "us-east-1"}], tmp_path / "out")
    result = run_playbook(SITE, inventory=inv, check=True, diff=True)
    assert result.stats["net-it"]["failed"] == 0
    assert aws.mutating_requests() == []
    assert {k: v for k, v in everything_owned(aws.client("ec2"), "net-it").items() if v} == {}
    planned = [p["call"] for t in aws_tasks(result) for p in t.result["plan"]]
    assert Counter(planned)["ec2:CreateSubnet"] == 6
    assert Counter(planned)["ec2:CreateNatGateway"] == 3
    assert Counter(planned)["ec2:CreateRouteTable"] == 6
    assert Counter(planned)["ec2:CreateSecurityGroup"] == 4
    assert planned[0] == "ec2:CreateVpc"
    names = [t.name for t in result.tasks]
    assert any("security groups" in n for n in names)  # the last AWS task ran too


def test_bring_your_own_network_is_used_and_left_alone(aws, run_playbook, tmp_path):
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="172.31.0.0/16")["Vpc"]["VpcId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public = ec2.create_subnet(VpcId=vpc_id, CidrBlock="172.31.0.0/24", AvailabilityZone="us-east-1a")["Subnet"]
    private = ec2.create_subnet(VpcId=vpc_id, CidrBlock="172.31.1.0/24", AvailabilityZone="us-east-1b")["Subnet"]
    rtb = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=rtb, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    ec2.associate_route_table(RouteTableId=rtb, SubnetId=public["SubnetId"])
    node_sg = ec2.create_security_group(GroupName="byo-node", Description="mine", VpcId=vpc_id)["GroupId"]
    snapshot_before = {
        "vpc": ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"],
        "subnet_cidrs": sorted(
            s["CidrBlock"] for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
        ),
        "node_sg": ec2.describe_security_groups(GroupIds=[node_sg])["SecurityGroups"],
    }

    spec = {
        "name": "byo-it",
        "region": "us-east-1",
        "network": {
            "vpc": {"id": vpc_id},
            "subnets": [{"id": public["SubnetId"]}, {"id": private["SubnetId"]}],
            "security_group_overrides": {"node": node_sg},
        },
    }
    inv = inventory(tmp_path, [spec], tmp_path / "out")
    run_playbook(SITE, inventory=inv)
    assert len(ec2.describe_vpcs()["Vpcs"]) == 2  # the default VPC and ours: nothing new
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
    assert sorted(s["CidrBlock"] for s in subnets) == snapshot_before["subnet_cidrs"]
    assert all(tags(s).get("kubernetes.io/cluster/byo-it") == "shared" for s in subnets)
    assert by_owner(ec2, "describe_nat_gateways", "NatGateways", "byo-it") == []
    groups = {tags(g).get("Name") for g in by_owner(ec2, "describe_security_groups", "SecurityGroups", "byo-it")}
    assert groups == {"byo-it-apiserver-lb", "byo-it-lb", "byo-it-controlplane"}  # node is the BYO group
    assert ec2.describe_security_groups(GroupIds=[node_sg])["SecurityGroups"] == snapshot_before["node_sg"]

    run_playbook(DELETE, inventory=inv)
    assert ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"] == snapshot_before["vpc"]
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
    assert sorted(s["CidrBlock"] for s in subnets) == snapshot_before["subnet_cidrs"]
    assert not any("kubernetes.io/cluster/byo-it" in tags(s) for s in subnets)
    assert ec2.describe_security_groups(GroupIds=[node_sg])["SecurityGroups"] == snapshot_before["node_sg"]
    assert {k: v for k, v in everything_owned(ec2, "byo-it").items() if v} == {}


BAD_SPECS = [
    (
        {"network": {"subnets": [{"availability_zone": "us-east-1a", "cidr_block": "10.1.0.0/24", "is_public": True}]}},
        "capa_cluster.network.subnets[0].cidr_block",
    ),
    (
        {
            "network": {
                "subnets": [
                    {"availability_zone": "us-east-1a", "cidr_block": "10.0.0.0/24", "is_public": True},
                    {"availability_zone": "us-east-1b", "cidr_block": "10.0.0.0/25"},
                ]
            }
        },
        "capa_cluster.network.subnets[1].cidr_block",
    ),
    (
        {"network": {"subnets": [{"availability_zone": "eu-west-1a", "cidr_block": "10.0.0.0/24", "is_public": True}]}},
        "capa_cluster.network.subnets[0].availability_zone",
    ),
    ({"network": {"vpc": {"cidr_block": "10.0.0.0/33"}}}, "capa_cluster.network.vpc.cidr_block"),
    ({"name": "Not_Valid"}, "capa_cluster.name"),
    ({"network": {"unknown_key": 1}}, "unknown_key"),
]


@pytest.mark.parametrize("overrides, field", BAD_SPECS, ids=[case[1] for case in BAD_SPECS])
def test_bad_specs_fail_naming_the_field_with_zero_requests(aws, run_playbook, tmp_path, overrides, field):
    spec = {"name": "bad-it", "region": "us-east-1", **overrides}
    inv = inventory(tmp_path, [spec], tmp_path / "out")
    result = run_playbook(SITE, inventory=inv, expect_rc=None)
    assert result.rc != 0
    assert field in result.stdout, result.describe()
    assert aws.requests() == []


def test_subnet_layout_covers_the_vpc_without_overlap(aws, run_playbook, tmp_path):
    spec = {
        "name": "lite-it",
        "region": "us-east-1",
        "network": {
            "vpc": {"cidr_block": "10.10.0.0/16", "availability_zone_usage_limit": 2},
            "nat_gateways": "single",
        },
        "bastion": {"enabled": True},
    }
    inv = inventory(tmp_path, [spec], tmp_path / "out")
    run_playbook(SITE, inventory=inv)
    ec2 = aws.client("ec2")
    owned = everything_owned(ec2, "lite-it")
    networks = [ipaddress.ip_network(s["CidrBlock"]) for s in owned["subnets"]]
    assert len(networks) == 4
    assert all(n.subnet_of(ipaddress.ip_network("10.10.0.0/16")) for n in networks)
    assert not any(a.overlaps(b) for i, a in enumerate(networks) for b in networks[i + 1 :])
    assert len(owned["nat_gateways"]) == 1
    assert "lite-it-bastion" in {tags(g)["Name"] for g in owned["security_groups"]}
    run_playbook(DELETE, inventory=inv)
    assert {k: v for k, v in everything_owned(ec2, "lite-it").items() if v} == {}
