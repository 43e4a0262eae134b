# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Cluster deletion (delete.yml / the cluster role) when something else lives in the cluster's network.

* What the in-cluster cloud provider would have made for a Service of type LoadBalancer (a classic ELB, an NLB
  with listener and target group, and a security group that the node group's rules reference, all tagged
  ``kubernetes.io/cluster/<name>: owned``) is listed by capa_cluster_info and removed by capa_external_resources
  before the network goes; the network deletion then succeeds.
* Something that is not the cloud provider's (a subnet, an instance and a security group someone else made in the
  cluster's VPC) makes AWS refuse the VPC deletion: the run fails naming each blocker and its owner, and leaves
  all of it alone.

moto deletes a subnet or a security group that still has network interfaces or references (AWS refuses), so the
subnet and security-group scopes of the blocker finder are tested with botocore's Stubber in
tests/unit/plugins/module_utils/test_deletion_blockers.py; moto does refuse a VPC that still has subnets, which
is the path exercised here.
"""

from __future__ import annotations

import ipaddress
import json
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
NETWORK = REPO / "tests/integration/playbooks/network.yml"
DELETE = REPO / "playbooks/delete.yml"
VPC_TASK = "clusterapi.aws.network : Delete the internet gateway and VPC the cluster owns"
CCM_SERVICE_TAG = {"Key": "kubernetes.io/service-name", "Value": "default/web"}


def owner_key(cluster: str) -> str:
    return f"sigs.k8s.io/cluster-api-provider-aws/cluster/{cluster}"


def ccm(cluster: str) -> list[dict[str, str]]:
    return [{"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"}, CCM_SERVICE_TAG]


def inventory(tmp_path: Path, cluster: str) -> Path:
    spec = {"name": cluster, "region": "us-east-1", "network": {"nat_gateways": "none"}}
    data = {
        "capa_clusters": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "capa_output_dir": str(tmp_path / "out"),
            },
            "hosts": {cluster: {"capa_cluster": spec}},
        }
    }
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def network(aws, cluster: str) -> dict[str, Any]:
    ec2 = aws.client("ec2")
    owned = [{"Name": f"tag:{owner_key(cluster)}", "Values": ["owned"]}]
    vpc_id = ec2.describe_vpcs(Filters=owned)["Vpcs"][0]["VpcId"]
    subnets = ec2.describe_subnets(Filters=owned)["Subnets"]
    groups = {
        g["GroupName"].rsplit("-", 1)[-1]: g["GroupId"]
        for g in ec2.describe_security_groups(Filters=owned)["SecurityGroups"]
    }
    public = [
        s["SubnetId"]
        for s in subnets
        if any(t["Key"].endswith("/role") and t["Value"] == "public" for t in s.get("Tags", []))
    ]
    return {"vpc_id": vpc_id, "public": sorted(public), "groups": groups}


def free_block(ec2, vpc_id: str) -> str:
    """A /24 of the VPC that none of its subnets uses."""
    vpc = ipaddress.ip_network(ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"][0]["CidrBlock"])
    used = [
        ipaddress.ip_network(s["CidrBlock"])
        for s in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
    ]
    return str(next(b for b in vpc.subnets(new_prefix=24) if not any(b.overlaps(u) for u in used)))


def task_index(result, name: str) -> int:
    return next(i for i, t in enumerate(result.tasks) if t.name == name)


# cloud provider GC ----------------------------------------------------------------------------------------------
def test_cloud_provider_resources_are_listed_then_removed_before_the_network(aws, run_playbook, run_module, tmp_path):
    cluster = "gc-it"
    inv = inventory(tmp_path, cluster)
    run_playbook(NETWORK, inventory=inv)
    net = network(aws, cluster)
    ec2, elb, v2 = aws.client("ec2"), aws.client("elb"), aws.client("elbv2")

    # What the AWS cloud provider does for a Service of type LoadBalancer.
    lb_group = ec2.create_security_group(
        GroupName="k8s-elb-a1b2c3",
        Description="Security group for Kubernetes ELB a1b2c3 (default/web)",
        VpcId=net["vpc_id"],
        TagSpecifications=[{"ResourceType": "security-group", "Tags": ccm(cluster)}],
    )["GroupId"]
    ec2.authorize_security_group_ingress(
        GroupId=net["groups"]["node"],
        IpPermissions=[
            {"IpProtocol": "tcp", "FromPort": 30080, "ToPort": 30080, "UserIdGroupPairs": [{"GroupId": lb_group}]}
        ],
    )
    elb.create_load_balancer(
        LoadBalancerName="a1b2c3",
        Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 80, "InstancePort": 30080}],
        Subnets=net["public"][:1],
        SecurityGroups=[lb_group],
        Tags=ccm(cluster),
    )
    nlb = v2.create_load_balancer(Name="k8s-default-web", Subnets=net["public"], Type="network", Tags=ccm(cluster))
    nlb_arn = nlb["LoadBalancers"][0]["LoadBalancerArn"]
    tg_arn = v2.create_target_group(
        Name="k8s-default-web-tg",
        Protocol="TCP",
        Port=30080,
        VpcId=net["vpc_id"],
        TargetType="instance",
        Tags=ccm(cluster),
    )["TargetGroups"][0]["TargetGroupArn"]
    v2.create_listener(
        LoadBalancerArn=nlb_arn,
        Protocol="TCP",
        Port=80,
        DefaultActions=[{"Type": "forward", "TargetGroupArn": tg_arn}],
    )

    info = run_module("clusterapi.aws.capa_cluster_info", {"cluster_name": cluster, "spec": {"name": cluster}})
    assert not info.get("failed"), info
    listed = {(r["kind"], r["id"]) for r in info["cloud_provider_resources"]}
    assert listed == {
        ("load_balancer", "a1b2c3"),
        ("load_balancer_v2", nlb_arn),
        ("target_group", tg_arn),
        ("security_group", lb_group),
    }, info["cloud_provider_resources"]
    assert info["api_calls"]["resourcegroupstaggingapi:GetResources"] == 2

    # Check mode plans the collection and changes nothing.
    gc_args = {"cluster_name": cluster, "state": "absent", "wait_timeout": 20}
    aws.reset_requests()
    planned = run_module("clusterapi.aws.capa_external_resources", gc_args, check=True)
    assert aws.mutating_requests() == [] and planned["changed"]
    assert [p["call"] for p in planned["plan"]] == [
        "elbv2:DeleteLoadBalancer",
        "elb:DeleteLoadBalancer",
        "elbv2:DeleteTargetGroup",
        "ec2:RevokeSecurityGroupIngress",
        "ec2:DeleteSecurityGroup",
    ]
    assert planned["plan"][3]["resource"] == net["groups"]["node"]
    # One tagging request and one ELB read find everything.
    assert planned["api_calls"]["resourcegroupstaggingapi:GetResources"] == 1
    assert planned["api_calls"]["elb:DescribeLoadBalancers"] == 1

    deleted = run_playbook(DELETE, inventory=inv)
    gc = deleted.task(
        "clusterapi.aws.cluster : Load balancers, target groups and security groups the in-cluster cloud provider "
        "left (external resource GC)"
    )
    assert gc.changed, gc.result
    gc_calls = [p["call"] for p in gc.result["plan"]]
    assert "elbv2:DeleteLoadBalancer" in gc_calls and "ec2:DeleteSecurityGroup" in gc_calls
    assert task_index(deleted, gc.name) < task_index(deleted, VPC_TASK)
    print(f"external resource GC: {len(gc.result['plan'])} calls {gc_calls}, requests {gc.result['api_calls']}")

    assert v2.describe_load_balancers()["LoadBalancers"] == []
    assert v2.describe_target_groups()["TargetGroups"] == []
    assert elb.describe_load_balancers()["LoadBalancerDescriptions"] == []
    assert ec2.describe_vpcs(VpcIds=[])["Vpcs"] == [] or net["vpc_id"] not in {
        v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]
    }
    assert lb_group not in {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]}


# blockers that are not ours -------------------------------------------------------------------------------------
def test_a_foreign_blocker_is_named_with_its_owner_and_left_alone(aws, run_playbook, tmp_path):
    cluster = "block-it"
    inv = inventory(tmp_path, cluster)
    run_playbook(NETWORK, inventory=inv)
    net = network(aws, cluster)
    ec2 = aws.client("ec2")

    # Someone else's subnet, instance and security group (its rule references the cluster's node group).
    foreign_cidr = free_block(ec2, net["vpc_id"])
    foreign_subnet = ec2.create_subnet(VpcId=net["vpc_id"], CidrBlock=foreign_cidr, AvailabilityZone="us-east-1a")[
        "Subnet"
    ]["SubnetId"]
    image = ec2.describe_images(Owners=["819546954734"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(
        ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.micro", SubnetId=foreign_subnet
    )["Instances"][0]
    eni = instance["NetworkInterfaces"][0]["NetworkInterfaceId"]
    foreign_group = ec2.create_security_group(
        GroupName="team-b-tools",
        Description="someone else's",
        VpcId=net["vpc_id"],
        TagSpecifications=[{"ResourceType": "security-group", "Tags": [{"Key": "team", "Value": "b"}]}],
    )["GroupId"]
    ec2.authorize_security_group_ingress(
        GroupId=foreign_group,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 22,
                "ToPort": 22,
                "UserIdGroupPairs": [{"GroupId": net["groups"]["node"]}],
            }
        ],
    )

    # delete.yml's cluster role, with a short wait budget for the VPC so the refusal comes quickly.
    playbook = tmp_path / "delete-short-wait.yml"
    playbook.write_text(
        json.dumps(
            [
                {
                    "name": "Delete clusters",
                    "hosts": "capa_clusters",
                    "gather_facts": False,
                    "module_defaults": {"clusterapi.aws.capa_vpc": {"wait_timeout": 3}},
                    "tasks": [
                        {
                            "name": "Delete the cluster",
                            "ansible.builtin.include_role": {"name": "clusterapi.aws.cluster"},
                            "vars": {"cluster_state": "absent"},
                        }
                    ],
                }
            ]
        )
    )
    aws.reset_requests()
    failed = run_playbook(playbook, inventory=inv, expect_rc=None)
    assert failed.rc != 0, failed.describe()
    vpc_task = failed.task(VPC_TASK)
    message = vpc_task.result["msg"]
    print(f"VPC refusal explained: {message}\nrequests of the failing VPC deletion: {vpc_task.result.get('api_calls')}")
    assert f"cannot delete VPC {net['vpc_id']}" in message and "blocked by:" in message, message
    assert f"subnet {foreign_subnet} ({foreign_cidr}; owner: someone else (untagged))" in message, message
    assert f"network interface {eni} (" in message and f"attached to {instance['InstanceId']}" in message, message
    assert f"security group {foreign_group} (team-b-tools; owner: someone else (tags team=b))" in message, message

    # Nothing of theirs was touched: no planned call of any task names their resources, and all of it is still there.
    theirs = {foreign_subnet, instance["InstanceId"], eni, foreign_group}
    planned = [p for t in failed.tasks if isinstance(t.result, dict) for p in t.result.get("plan") or []]
    assert planned and not [p for p in planned if any(i in json.dumps(p) for i in theirs)], planned
    assert ec2.describe_subnets(SubnetIds=[foreign_subnet])["Subnets"]
    state = ec2.describe_instances(InstanceIds=[instance["InstanceId"]])["Reservations"][0]["Instances"][0]["State"]
    assert state["Name"] == "running"
    group = ec2.describe_security_groups(GroupIds=[foreign_group])["SecurityGroups"][0]
    assert group["IpPermissions"], "the foreign group's rule was revoked"
