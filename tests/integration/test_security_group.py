# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""capa_security_group through ansible-playbook against the moto server, checked with boto3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

CLUSTER = "sgtest"
OWNED_KEY = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
ROLE_KEY = "sigs.k8s.io/cluster-api-provider-aws/role"
MODULE = "clusterapi.aws.capa_security_group"
DEFAULT_ROLES = {"apiserver-lb", "lb", "controlplane", "node"}


def _ops(records: list[dict[str, str]]) -> list[str]:
    return [f"{r['service']}:{r['operation']}" for r in records]


def _playbook(tmp_path: Path, tasks: list[dict[str, Any]]) -> Path:
    path = tmp_path / "play.yml"
    play = [{"name": "security groups", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    path.write_text(json.dumps(play))
    return path


def _vpc_and_groups_tasks(sg_args: dict[str, Any]) -> list[dict[str, Any]]:
    args = {
        "cluster_name": CLUSTER,
        "vpc_id": "{{ vpc.vpc.id }}",
        "vpc_cidr_block": "{{ vpc.vpc.cidr_block }}",
        **sg_args,
    }
    return [
        {"name": "vpc", "clusterapi.aws.capa_vpc": {"cluster_name": CLUSTER}, "register": "vpc"},
        {"name": "groups", MODULE: args, "register": "groups"},
    ]


def _groups_by_name(ec2: Any, vpc_id: str) -> dict[str, dict[str, Any]]:
    groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["SecurityGroups"]
    return {g["GroupName"]: g for g in groups}


def _rules(group: dict[str, Any]) -> set[tuple]:
    """A described group's ingress as (protocol, from, to, source, description), one per source."""
    out = set()
    for p in group["IpPermissions"]:
        ports = (p.get("FromPort"), p.get("ToPort")) if p["IpProtocol"] not in ("-1", "4") else (None, None)
        for r in p.get("IpRanges", []):
            out.add((p["IpProtocol"], *ports, r["CidrIp"], r.get("Description", "")))
        for r in p.get("UserIdGroupPairs", []):
            out.add((p["IpProtocol"], *ports, r["GroupId"], r.get("Description", "")))
    return out


def _tags(group: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in group.get("Tags", [])}


def _vpc(aws: Any) -> str:
    ec2 = aws.client("ec2")
    return ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]


def test_default_groups_have_capas_rules_and_a_second_run_only_describes(aws, run_playbook, run_module, tmp_path):
    result = run_playbook(_playbook(tmp_path, _vpc_and_groups_tasks({})))
    task = result.task("groups")
    assert task.changed
    sgs = task.result["security_groups"]
    assert set(sgs) == DEFAULT_ROLES
    vpc_id = result.task("vpc").result["vpc"]["id"]

    ec2 = aws.client("ec2")
    groups = _groups_by_name(ec2, vpc_id)
    ids = {role: groups[f"{CLUSTER}-{role}"]["GroupId"] for role in DEFAULT_ROLES}
    assert {role: sgs[role]["id"] for role in DEFAULT_ROLES} == ids
    for role in DEFAULT_ROLES:
        group = groups[f"{CLUSTER}-{role}"]
        assert group["Description"] == f"Kubernetes cluster {CLUSTER}: {role}"
        tags = _tags(group)
        assert tags["Name"] == f"{CLUSTER}-{role}"
        assert tags[OWNED_KEY] == "owned"
        assert tags[ROLE_KEY] == role
        # Only the lb group is handed to the cloud provider.
        assert (tags.get(f"kubernetes.io/cluster/{CLUSTER}") == "owned") == (role == "lb")
        assert sgs[role]["managed"] is True

    cp, node, api = ids["controlplane"], ids["node"], ids["apiserver-lb"]
    calico = {
        ("tcp", 179, 179, cp, "bgp (calico)"),
        ("tcp", 179, 179, node, "bgp (calico)"),
        ("4", None, None, cp, "IP-in-IP (calico)"),
        ("4", None, None, node, "IP-in-IP (calico)"),
    }
    assert (
        _rules(groups[f"{CLUSTER}-controlplane"])
        == {
            ("tcp", 6443, 6443, api, "Kubernetes API"),
            ("tcp", 6443, 6443, cp, "Kubernetes API"),
            ("tcp", 6443, 6443, node, "Kubernetes API"),
            ("tcp", 2379, 2379, cp, "etcd"),
            ("tcp", 2380, 2380, cp, "etcd peer"),
        }
        | calico
    )
    assert (
        _rules(groups[f"{CLUSTER}-node"])
        == {
            ("tcp", 30000, 32767, "0.0.0.0/0", "Node Port Services"),
            ("tcp", 10250, 10250, cp, "Kubelet API"),
            ("tcp", 10250, 10250, node, "Kubelet API"),
        }
        | calico
    )
    assert _rules(groups[f"{CLUSTER}-apiserver-lb"]) == {("tcp", 6443, 6443, "0.0.0.0/0", "Kubernetes API")}
    assert _rules(groups[f"{CLUSTER}-lb"]) == set()
    # Egress untouched: AWS's default allow-all is still there.
    assert groups[f"{CLUSTER}-node"]["IpPermissionsEgress"][0]["IpProtocol"] == "-1"
    # One authorisation per group that has rules, never one per rule.
    calls = [p["call"] for p in task.result["plan"]]
    assert calls.count("ec2:CreateSecurityGroup") == 4
    assert calls.count("ec2:AuthorizeSecurityGroupIngress") == 3

    args = {"cluster_name": CLUSTER, "vpc_id": vpc_id, "vpc_cidr_block": "10.0.0.0/16"}
    for check in (True, False):
        aws.reset_requests()
        again = run_module(MODULE, args, check=check)
        assert not again.get("failed"), again
        assert again["changed"] is False
        assert again["plan"] == []
        assert again["api_calls"] == {"ec2:DescribeSecurityGroups": 1}
        assert _ops(aws.requests()) == ["ec2:DescribeSecurityGroups"]
        assert again["security_groups"] == sgs


def test_check_mode_from_an_empty_account_plans_everything_and_calls_nothing(aws, run_playbook, tmp_path):
    tasks = _vpc_and_groups_tasks({"bastion": {"enabled": True}, "nat_gateway_ips": ["planned:eip:sgtest-eip-common"]})
    result = run_playbook(_playbook(tmp_path, tasks), check=True)
    task = result.task("groups").result
    assert task["changed"] is True
    assert _ops(aws.mutating_requests()) == []
    # A planned VPC cannot hold groups yet: not even a describe.
    assert "ec2:DescribeSecurityGroups" not in task["api_calls"]
    sgs = task["security_groups"]
    assert {role: g["id"] for role, g in sgs.items()} == {
        role: f"planned:sg:{CLUSTER}-{role}" for role in DEFAULT_ROLES | {"bastion"}
    }
    plan = [(p["call"], p["resource"]) for p in task["plan"]]
    creates = [r for c, r in plan if c == "ec2:CreateSecurityGroup"]
    assert sorted(creates) == sorted(f"{CLUSTER}-{r}" for r in DEFAULT_ROLES | {"bastion"})
    # Every create comes before the first rule, so rules can reference any group.
    first_rule = min(i for i, (c, _reason) in enumerate(plan) if c == "ec2:AuthorizeSecurityGroupIngress")
    assert all(c == "ec2:CreateSecurityGroup" for c, _reason in plan[:first_rule])
    assert sorted(r for c, r in plan if c == "ec2:AuthorizeSecurityGroupIngress") == sorted(
        f"{CLUSTER}-{r}" for r in ("bastion", "apiserver-lb", "controlplane", "node")
    )
    ssh = {
        (r.get("cidr_block") or r.get("source_security_group_id"))
        for r in sgs["node"]["ingress_rules"]
        if r["from_port"] == 22
    }
    assert ssh == {f"planned:sg:{CLUSTER}-bastion"}


def test_bastion_nlb_and_drift_is_reconciled(aws, run_module):
    vpc_id = _vpc(aws)
    args = {
        "cluster_name": CLUSTER,
        "vpc_id": vpc_id,
        "vpc_cidr_block": "10.0.0.0/16",
        "bastion": {"enabled": True, "allowed_cidr_blocks": ["203.0.113.0/24"]},
        "cni_ingress_rules": "none",
        "nat_gateway_ips": ["198.51.100.7"],
        "control_plane_load_balancer": {"type": "nlb", "additional_listeners": [{"port": 8132}]},
    }
    first = run_module(MODULE, args)
    assert first["changed"], first
    ec2 = aws.client("ec2")
    groups = _groups_by_name(ec2, vpc_id)
    bastion = groups[f"{CLUSTER}-bastion"]
    assert _tags(bastion)[ROLE_KEY] == "bastion"
    assert _rules(bastion) == {("tcp", 22, 22, "203.0.113.0/24", "SSH")}
    for role in ("controlplane", "node"):
        assert ("tcp", 22, 22, bastion["GroupId"], "SSH") in _rules(groups[f"{CLUSTER}-{role}"])
    assert _rules(groups[f"{CLUSTER}-apiserver-lb"]) == {
        ("tcp", 6443, 6443, "198.51.100.7/32", "Kubernetes API"),
        ("tcp", 6443, 6443, "0.0.0.0/0", "Kubernetes API"),
    }
    lb = groups[f"{CLUSTER}-lb"]
    assert _rules(lb) == {
        ("tcp", 6443, 6443, "10.0.0.0/16", "Kubernetes API (NLB)"),
        ("tcp", 8132, 8132, "10.0.0.0/16", "NLB additional listener 8132"),
    }

    # Behind the module's back: an extra rule on node, a missing etcd rule on controlplane, and a rule the
    # cloud provider added to lb (which is not ours to reconcile after creation).
    node_id, cp_id = groups[f"{CLUSTER}-node"]["GroupId"], groups[f"{CLUSTER}-controlplane"]["GroupId"]
    ec2.authorize_security_group_ingress(
        GroupId=node_id,
        IpPermissions=[{"IpProtocol": "tcp", "FromPort": 80, "ToPort": 80, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
    )
    ec2.revoke_security_group_ingress(
        GroupId=cp_id,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 2379,
                "ToPort": 2379,
                "UserIdGroupPairs": [{"GroupId": cp_id, "Description": "etcd"}],
            }
        ],
    )
    ec2.authorize_security_group_ingress(
        GroupId=lb["GroupId"],
        IpPermissions=[{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}],
    )
    expected_before = {name: _rules(g) for name, g in groups.items()}

    aws.reset_requests()
    second = run_module(MODULE, args)
    assert second["changed"], second
    assert [(p["call"], p["resource"]) for p in second["plan"]] == [
        ("ec2:AuthorizeSecurityGroupIngress", f"{CLUSTER}-controlplane"),
        ("ec2:RevokeSecurityGroupIngress", f"{CLUSTER}-node"),
    ]
    assert _ops(aws.mutating_requests()) == ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"]
    after = _groups_by_name(ec2, vpc_id)
    assert _rules(after[f"{CLUSTER}-node"]) == expected_before[f"{CLUSTER}-node"] - {("tcp", 80, 80, "0.0.0.0/0", "")}
    assert ("tcp", 2379, 2379, cp_id, "etcd") in _rules(after[f"{CLUSTER}-controlplane"])
    assert ("tcp", 443, 443, "0.0.0.0/0", "") in _rules(after[f"{CLUSTER}-lb"])

    # A description-only change replaces the rule: revoke then authorise, in one call each.
    args["bastion"]["allowed_cidr_blocks"] = ["203.0.113.0/24"]
    args["additional_node_ingress_rules"] = [
        {"description": "metrics", "protocol": "tcp", "from_port": 9100, "to_port": 9100}
    ]
    run_module(MODULE, args)
    args["additional_node_ingress_rules"][0]["description"] = "node exporter"
    third = run_module(MODULE, args)
    assert [p["call"] for p in third["plan"]] == [
        "ec2:RevokeSecurityGroupIngress",
        "ec2:AuthorizeSecurityGroupIngress",
    ]
    node_rules = _rules(_groups_by_name(ec2, vpc_id)[f"{CLUSTER}-node"])
    assert ("tcp", 9100, 9100, cp_id, "node exporter") in node_rules
    assert ("tcp", 9100, 9100, cp_id, "metrics") not in node_rules


def test_override_is_used_untouched_and_absent_deletes_only_owned_groups(aws, run_module):
    vpc_id = _vpc(aws)
    ec2 = aws.client("ec2")
    byo = ec2.create_security_group(
        GroupName="byo-node",
        Description="mine",
        VpcId=vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": [{"Key": "team", "Value": "x"}]}],
    )["GroupId"]
    ec2.authorize_security_group_ingress(
        GroupId=byo,
        IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080, "IpRanges": [{"CidrIp": "10.9.0.0/16"}]}
        ],
    )
    foreign = ec2.create_security_group(GroupName=f"{CLUSTER}-other", Description="not ours", VpcId=vpc_id)["GroupId"]
    byo_before = _groups_by_name(ec2, vpc_id)["byo-node"]

    args = {
        "cluster_name": CLUSTER,
        "vpc_id": vpc_id,
        "vpc_cidr_block": "10.0.0.0/16",
        "cni_ingress_rules": "none",
        "security_group_overrides": {"node": byo},
    }
    result = run_module(MODULE, args)
    assert result["changed"], result
    sgs = result["security_groups"]
    assert sgs["node"] == {
        "id": byo,
        "name": "byo-node",
        "managed": False,
        "ingress_rules": [
            {
                "protocol": "tcp",
                "from_port": 8080,
                "to_port": 8080,
                "description": "",
                "cidr_block": "10.9.0.0/16",
            }
        ],
    }
    groups = _groups_by_name(ec2, vpc_id)
    assert f"{CLUSTER}-node" not in groups
    assert groups["byo-node"]["IpPermissions"] == byo_before["IpPermissions"]
    assert _tags(groups["byo-node"]) == {"team": "x"}
    # The override stands in for the role as a rule source.
    assert ("tcp", 6443, 6443, byo, "Kubernetes API") in _rules(groups[f"{CLUSTER}-controlplane"])

    aws.reset_requests()
    again = run_module(MODULE, args)
    assert again["changed"] is False
    assert again["api_calls"] == {"ec2:DescribeSecurityGroups": 2}

    gone = run_module(MODULE, {**args, "state": "absent"})
    assert gone["changed"], gone
    calls = [p["call"] for p in gone["plan"]]
    assert calls.count("ec2:DeleteSecurityGroup") == 3
    # Every rule goes before any group (the groups reference each other).
    assert calls.index("ec2:DeleteSecurityGroup") > max(
        i for i, c in enumerate(calls) if c == "ec2:RevokeSecurityGroupIngress"
    )
    left = _groups_by_name(ec2, vpc_id)
    assert set(left) == {"default", "byo-node", f"{CLUSTER}-other"}
    assert left[f"{CLUSTER}-other"]["GroupId"] == foreign
    assert left["byo-node"]["IpPermissions"] == byo_before["IpPermissions"]

    aws.reset_requests()
    nothing = run_module(MODULE, {**args, "state": "absent"})
    assert nothing["changed"] is False
    assert _ops(aws.mutating_requests()) == []


def test_absent_waits_for_the_clusters_leaving_machines_before_it_deletes_their_groups(aws, latency, run_module):
    """The cluster's deletion terminates its machines without waiting for them. AWS refuses to delete a group that an
    instance still uses until the instance is terminated (DependencyViolation; the moto server models it). Under the
    latency model at 1/10 (shutting-down 4.5 s: at 1/100, 0.45 s, a module started on a loaded machine could find
    the machine gone at its first read and have nothing to wait for) state=absent first waits, reading, for the
    cluster's machines that use its groups to be terminated, then deletes every group without a refusal. A foreign
    instance still using a group is not waited for: the delete is refused and names it (test_deletion_blockers.py)."""
    vpc_id = _vpc(aws)
    ec2 = aws.client("ec2")
    args = {"cluster_name": CLUSTER, "vpc_id": vpc_id, "vpc_cidr_block": "10.0.0.0/16", "cni_ingress_rules": "none"}
    node = run_module(MODULE, args)["security_groups"]["node"]["id"]
    subnet = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    image = ec2.describe_images(Owners=["819546954734"])["Images"][0]["ImageId"]
    owned = [{"ResourceType": "instance", "Tags": [{"Key": OWNED_KEY, "Value": "owned"}]}]
    instance = ec2.run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType="t3.micro",
        SubnetId=subnet,
        SecurityGroupIds=[node],
        TagSpecifications=owned,
    )["Instances"][0]["InstanceId"]
    latency(0.1)
    ec2.terminate_instances(InstanceIds=[instance])

    gone = run_module(MODULE, {**args, "state": "absent", "wait_timeout": 30})
    assert gone["changed"], gone
    # Polled until the machine was gone, then one delete per group: none refused.
    assert gone["api_calls"]["ec2:DescribeInstances"] >= 2
    assert gone["api_calls"]["ec2:DeleteSecurityGroup"] == len(DEFAULT_ROLES)
    state = ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state == "terminated"
    assert set(_groups_by_name(ec2, vpc_id)) == {"default"}


@pytest.mark.parametrize(
    "bad, field",
    [
        (
            {"additional_node_ingress_rules": [{"protocol": "gre", "from_port": 1, "to_port": 1}]},
            "additional_node_ingress_rules[0].protocol",
        ),
        ({"node_port_ingress_cidr_blocks": ["10.0.0.0/33"]}, "node_port_ingress_cidr_blocks[0]"),
        ({"security_group_overrides": {"workers": "sg-0123456789abcdef0"}}, "security_group_overrides.workers"),
        (
            {
                "additional_control_plane_ingress_rules": [
                    {"protocol": "tcp", "from_port": 1, "to_port": 1, "source_security_group_roles": ["bastion"]}
                ]
            },
            "additional_control_plane_ingress_rules[0].source_security_group_roles[0]",
        ),
    ],
)
def test_bad_input_fails_naming_the_field_without_calling_aws(aws, run_module, bad, field):
    aws.reset_requests()
    result = run_module(MODULE, {"cluster_name": CLUSTER, "vpc_id": "vpc-0123456789abcdef0", **bad})
    assert result.get("failed"), result
    assert result["field"] == field
    assert field in result["msg"]
    assert aws.requests() == []
