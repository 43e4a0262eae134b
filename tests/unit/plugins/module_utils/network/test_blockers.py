# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The blocker finder: who still uses a subnet / security group / target group / VPC, and whose it is.

moto deletes a subnet that still has network interfaces and a security group that other groups reference (AWS
refuses both with DependencyViolation), so those refusals are played here with botocore's Stubber; the VPC path,
which moto does refuse, runs against moto in tests/integration/test_deletion_blockers.py.
"""

from __future__ import annotations

import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.aws.ec2 import delete_when_free
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.network.blockers import (
    Blocker,
    describe_blockers,
    eni_blocker,
    finder,
    is_cloud_provider_owned,
    lb_of_eni,
    owner_of,
)

CLUSTER = "demo"
CAPA = {
    "sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned",
    "sigs.k8s.io/cluster-api-provider-aws/role": "node",
}
CCM = {"kubernetes.io/cluster/demo": "owned", "kubernetes.io/service-name": "default/web"}
ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012"


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


@pytest.mark.parametrize(
    "tags, owner",
    [
        (CAPA, "this cluster (CAPA, role node)"),
        ({**CAPA, **CCM}, "this cluster (CAPA, role node)"),
        (CCM, "the in-cluster cloud provider (kubernetes.io/cluster/demo: owned)"),
        ({"sigs.k8s.io/cluster-api-provider-aws/cluster/prod": "owned"}, "another CAPA cluster (prod)"),
        ({"kubernetes.io/cluster/prod": "owned"}, "the cloud provider of another cluster (prod)"),
        ({"kubernetes.io/cluster/demo": "shared"}, "someone else (tags kubernetes.io/cluster/demo=shared)"),
        ({}, "someone else (untagged)"),
        (None, "someone else (untagged)"),
        ({"team": "b", "Name": "x"}, "someone else (tags Name=x, team=b)"),
    ],
)
def test_owner_of(tags, owner):
    assert owner_of(tags, CLUSTER) == owner


def test_cloud_provider_owned_means_its_tag_and_none_of_capas():
    assert is_cloud_provider_owned(CCM, CLUSTER)
    assert not is_cloud_provider_owned({**CCM, **CAPA}, CLUSTER)  # CAPA's lb group carries both
    assert not is_cloud_provider_owned({"kubernetes.io/cluster/demo": "shared"}, CLUSTER)


@pytest.mark.parametrize(
    "description, name",
    [
        ("ELB a1b2c3", "a1b2c3"),
        ("ELB net/k8s-default-web/0123456789abcdef", "k8s-default-web"),
        ("ELB app/k8s-ingress/0123", "k8s-ingress"),
        ("Primary network interface", None),
        ("", None),
    ],
)
def test_lb_of_eni(description, name):
    assert lb_of_eni(description) == name


def test_an_eni_is_owned_by_its_tags_else_its_instance_else_its_load_balancer():
    lbs = {"a1b2c3": Blocker("a1b2c3", "classic load balancer", "", owner_of(CCM, CLUSTER))}
    elb_eni = {"NetworkInterfaceId": "eni-1", "Description": "ELB a1b2c3", "RequesterId": "amazon-elb"}
    assert eni_blocker(CLUSTER, elb_eni, {}, lbs).text() == (
        "network interface eni-1 (ELB a1b2c3, requester amazon-elb; "
        "owner: the in-cluster cloud provider (kubernetes.io/cluster/demo: owned))"
    )
    instance_eni = {
        "NetworkInterfaceId": "eni-2",
        "Description": "Primary network interface",
        "Attachment": {"InstanceId": "i-1"},
    }
    instances = {"i-1": {"sigs.k8s.io/cluster-api-provider-aws/cluster/prod": "owned"}}
    blocker = eni_blocker(CLUSTER, instance_eni, instances, {})
    assert blocker.owner == "another CAPA cluster (prod)" and "attached to i-1" in blocker.description
    tagged = dict(instance_eni, TagSet=tag_list({"team": "b"}))
    assert eni_blocker(CLUSTER, tagged, instances, {}).owner == "someone else (tags team=b)"
    assert eni_blocker(CLUSTER, {"NetworkInterfaceId": "eni-3"}, {}, {}).owner == "someone else (untagged)"


def test_no_visible_blocker_says_so():
    assert "AWS may still be releasing" in describe_blockers([])


# refusals moto does not make (Stubber) ----------------------------------------------------------------------------
@pytest.fixture
def stubs():
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    ctx = Context(session=session, cluster=CLUSTER, check_mode=False, wait=False)
    clients = {name: Stubber(session.client(name).raw) for name in ("ec2", "elb", "elbv2")}
    for stub in clients.values():
        stub.activate()
    yield ctx, clients
    for stub in clients.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def refuse(stub: Stubber, method: str, message: str, code: str = "DependencyViolation") -> None:
    stub.add_client_error(method, service_error_code=code, service_message=message, http_status_code=400)


def no_load_balancers(clients: dict[str, Stubber]) -> None:
    clients["elb"].add_response("describe_load_balancers", {"LoadBalancerDescriptions": []}, {})
    clients["elbv2"].add_response("describe_load_balancers", {"LoadBalancers": []}, {})


def test_a_refused_subnet_names_the_cloud_providers_elb_and_someone_elses_instance(stubs):
    ctx, clients = stubs
    ec2 = ctx.client("ec2")
    refuse(clients["ec2"], "delete_subnet", "The subnet 'subnet-1' has dependencies and cannot be deleted.")
    clients["elb"].add_response(
        "describe_load_balancers",
        {"LoadBalancerDescriptions": [{"LoadBalancerName": "a1b2c3", "Subnets": ["subnet-1"], "VPCId": "vpc-1"}]},
        {},
    )
    clients["elb"].add_response(
        "describe_tags",
        {"TagDescriptions": [{"LoadBalancerName": "a1b2c3", "Tags": tag_list(CCM)}]},
        {"LoadBalancerNames": ["a1b2c3"]},
    )
    clients["elbv2"].add_response("describe_load_balancers", {"LoadBalancers": []}, {})
    clients["ec2"].add_response(
        "describe_network_interfaces",
        {
            "NetworkInterfaces": [
                {"NetworkInterfaceId": "eni-elb", "Description": "ELB a1b2c3", "RequesterId": "amazon-elb"},
                {
                    "NetworkInterfaceId": "eni-vm",
                    "Description": "Primary network interface",
                    "Attachment": {"InstanceId": "i-0abc"},
                },
            ]
        },
        {"Filters": [{"Name": "subnet-id", "Values": ["subnet-1"]}]},
    )
    clients["ec2"].add_response(
        "describe_instances",
        {"Reservations": [{"Instances": [{"InstanceId": "i-0abc", "Tags": []}]}]},
        {"InstanceIds": ["i-0abc"]},
    )
    with pytest.raises(ReconcileError) as e:
        delete_when_free(
            ctx, lambda: ec2.delete_subnet(SubnetId="subnet-1"), "subnet subnet-1", finder(ctx, subnet_id="subnet-1")
        )
    message = str(e.value)
    assert message.startswith("cannot delete subnet subnet-1: The subnet 'subnet-1' has dependencies")
    assert (
        "network interface eni-elb (ELB a1b2c3, requester amazon-elb; owner: the in-cluster cloud provider" in message
    )
    assert "network interface eni-vm (Primary network interface, attached to i-0abc; owner: someone else" in message
    assert "classic load balancer a1b2c3 (owner: the in-cluster cloud provider" in message


def test_a_refused_security_group_names_the_group_whose_rule_references_it(stubs):
    ctx, clients = stubs
    ec2 = ctx.client("ec2")
    refuse(clients["ec2"], "delete_security_group", "resource sg-node has a dependent object")
    no_load_balancers(clients)
    clients["ec2"].add_response(
        "describe_network_interfaces",
        {"NetworkInterfaces": []},
        {"Filters": [{"Name": "group-id", "Values": ["sg-node"]}]},
    )
    clients["ec2"].add_response(
        "describe_security_groups",
        {"SecurityGroups": [{"GroupId": "sg-team-b", "GroupName": "tools", "Tags": tag_list({"team": "b"})}]},
        {"Filters": [{"Name": "ip-permission.group-id", "Values": ["sg-node"]}]},
    )
    with pytest.raises(ReconcileError) as e:
        delete_when_free(
            ctx,
            lambda: ec2.delete_security_group(GroupId="sg-node"),
            "security group sg-node",
            finder(ctx, group_id="sg-node"),
        )
    assert str(e.value) == (
        "cannot delete security group sg-node: resource sg-node has a dependent object; blocked by: "
        "security group sg-team-b (tools, a rule references sg-node; owner: someone else (tags team=b))"
    )


def test_a_target_group_in_use_names_the_load_balancer_forwarding_to_it(stubs):
    ctx, clients = stubs
    v2 = ctx.client("elbv2")
    tg = f"{ARN}:targetgroup/demo-tg/0789"
    lb = f"{ARN}:loadbalancer/net/team-b/0123"
    refuse(clients["elbv2"], "delete_target_group", "Target group is currently in use by a listener", "ResourceInUse")
    clients["elbv2"].add_response(
        "describe_target_groups",
        {"TargetGroups": [{"TargetGroupArn": tg, "LoadBalancerArns": [lb]}]},
        {"TargetGroupArns": [tg]},
    )
    clients["elbv2"].add_response(
        "describe_tags",
        {"TagDescriptions": [{"ResourceArn": lb, "Tags": tag_list({"team": "b"})}]},
        {"ResourceArns": [lb]},
    )
    with pytest.raises(ReconcileError) as e:
        delete_when_free(
            ctx,
            lambda: v2.delete_target_group(TargetGroupArn=tg),
            "target group demo-tg",
            finder(ctx, target_group_arn=tg),
        )
    assert f"blocked by: load balancer {lb} (a listener forwards to demo-tg; owner: someone else (tags team=b))" in str(
        e.value
    )


def test_other_errors_are_not_explained_as_blockers(stubs):
    ctx, clients = stubs
    ec2 = ctx.client("ec2")
    refuse(clients["ec2"], "delete_vpc", "not allowed", "UnauthorizedOperation")
    with pytest.raises(ReconcileError) as e:
        delete_when_free(ctx, lambda: ec2.delete_vpc(VpcId="vpc-1"), "VPC vpc-1", finder(ctx, vpc_id="vpc-1"))
    assert str(e.value) == "cannot delete VPC vpc-1: not allowed"
