# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): the EC2 resource kinds the collection makes, described once.

Every reader of EC2 resources needs the same facts about a kind - the TagSpecifications resource type its create
carries, the describe method, the list and id keys of the answer, where the create's answer puts the resource,
how the describe spells its filter parameter, which states mean "on its way out". The lost-answer resolver
(:mod:`.idempotency`), the deletion-blocker finder and ``capa_cluster_info`` all read this one table.
"""

from __future__ import annotations

from dataclasses import dataclass

# States of a resource that is going or gone (NAT gateways and instances stay listed for a while once deleted).
GONE_STATES = frozenset({"deleting", "deleted", "failed", "shutting-down", "terminated"})


@dataclass(frozen=True)
class Ec2Kind:
    name: str  # our name for the kind, as capa_cluster_info reports it
    tag_type: str  # TagSpecifications ResourceType of its create
    describe: str  # boto3 method listing it
    list_key: str  # key of the list in the describe's answer
    id_key: str  # key of its id
    answer_key: str | None  # key of the resource in the create's answer (None: the fields are at top level)
    filter_param: str = "Filters"  # DescribeNatGateways spells it "Filter"


EC2_KINDS: tuple[Ec2Kind, ...] = (
    Ec2Kind("vpc", "vpc", "describe_vpcs", "Vpcs", "VpcId", "Vpc"),
    Ec2Kind("subnet", "subnet", "describe_subnets", "Subnets", "SubnetId", "Subnet"),
    Ec2Kind(
        "internet_gateway",
        "internet-gateway",
        "describe_internet_gateways",
        "InternetGateways",
        "InternetGatewayId",
        "InternetGateway",
    ),
    Ec2Kind("route_table", "route-table", "describe_route_tables", "RouteTables", "RouteTableId", "RouteTable"),
    Ec2Kind(
        "nat_gateway", "natgateway", "describe_nat_gateways", "NatGateways", "NatGatewayId", "NatGateway", "Filter"
    ),
    Ec2Kind("elastic_ip", "elastic-ip", "describe_addresses", "Addresses", "AllocationId", None),
    Ec2Kind("security_group", "security-group", "describe_security_groups", "SecurityGroups", "GroupId", None),
    Ec2Kind("instance", "instance", "describe_instances", "Reservations", "InstanceId", "Instances"),
    Ec2Kind(
        "launch_template",
        "launch-template",
        "describe_launch_templates",
        "LaunchTemplates",
        "LaunchTemplateId",
        "LaunchTemplate",
    ),
    Ec2Kind("fleet", "fleet", "describe_fleets", "Fleets", "FleetId", None),
    Ec2Kind(
        "network_interface",
        "network-interface",
        "describe_network_interfaces",
        "NetworkInterfaces",
        "NetworkInterfaceId",
        "NetworkInterface",
    ),
    # Not made by the collection, but what can keep a VPC from being deleted (network.blockers).
    Ec2Kind("vpc_endpoint", "vpc-endpoint", "describe_vpc_endpoints", "VpcEndpoints", "VpcEndpointId", "VpcEndpoint"),
)
BY_NAME = {kind.name: kind for kind in EC2_KINDS}
BY_TAG_TYPE = {kind.tag_type: kind for kind in EC2_KINDS}
