#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_subnet
short_description: Reconcile a cluster's subnets, route tables, NAT gateways and Elastic IPs as CAPA does
version_added: 0.1.0
description:
  - Builds the cluster network below the VPC the way Cluster API Provider AWS does - subnets (by default one
    public and one private subnet per availability zone, carved from the VPC CIDR), one NAT gateway with an
    Elastic IP per zone that has private subnets, and one route table per subnet - all tagged with CAPA's
    ownership, role, Name and cloud-provider tags.
  - Subnets listed by I(id) are used as they are (bring your own). They only get the cloud-provider discovery tags
    C(kubernetes.io/cluster/<cluster_name>=shared) and C(kubernetes.io/role/elb=1) (public) or
    C(kubernetes.io/role/internal-elb=1) (private), and are never deleted. In a VPC the cluster does not own, no
    subnet, route table or NAT gateway is ever created.
  - Each resource type is observed with one filtered describe, so a run that changes nothing makes only describes.
  - C(state=absent) deletes, in dependency order, the route tables, NAT gateways (waiting until they are gone),
    Elastic IPs and subnets the cluster owns, and removes the C(shared) cloud-provider tag from subnets it does not.
    With I(wait=false) it deletes the route tables and starts the NAT gateways' deletion only, and returns; their
    Elastic IPs and the subnets are freed once the gateways are gone, and a run that waits deletes them (the cluster
    role releases a cluster's egress this way while its control plane is deleted).
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  vpc_id:
    description:
      - The VPC (from M(clusterapi.aws.capa_vpc)). Required with C(state=present).
      - May be a check-mode placeholder C(planned:vpc:<name>); then nothing can exist yet, every resource is planned
        as a create, and I(vpc_cidr_block) is required.
      - Optional with C(state=absent); the cluster's resources are then found by their ownership tag.
    type: str
  vpc_cidr_block:
    description:
      - The VPC's primary CIDR block. When given, subnet CIDRs are checked against it before any AWS call (list
        subnets of secondary blocks without it). It must be one of the VPC's blocks.
      - Without it, the module reads the VPC's blocks from AWS.
    type: str
  subnets:
    description:
      - The subnets of the cluster. Empty means CAPA's default layout in a managed VPC - per zone a public subnet
        and a private subnet, CIDRs carved from the VPC's primary block (10.0.0.0/16 with 3 zones gives public
        C(10.0.0.0/20), C(10.0.16.0/20), C(10.0.32.0/20) and private C(10.0.64.0/18), C(10.0.128.0/18),
        C(10.0.192.0/18)).
      - Each entry is either an existing subnet (I(id)) or a subnet to have (I(availability_zone) and
        I(cidr_block)). An entry whose CIDR matches an existing subnet of the VPC is that subnet.
    type: list
    elements: dict
    default: []
    suboptions:
      id:
        description: Id of an existing subnet in the VPC (bring your own).
        type: str
      availability_zone:
        description: Zone of the subnet, in the module's region.
        type: str
      cidr_block:
        description: IPv4 CIDR block of the subnet (/16 to /28), inside the VPC and overlapping no other entry.
        type: str
      is_public:
        description:
          - Whether the subnet is public (route to the internet gateway, public IPs on launch). Ignored for
            subnets given by I(id), whose role tag or route table decides, as in CAPA.
        type: bool
        default: false
      tags:
        description: Extra tags for a subnet the module creates (a C(Name) here replaces the default name).
        type: dict
  availability_zone_usage_limit:
    description: How many zones the default layout uses at most (CAPA's C(availabilityZoneUsageLimit)).
    type: int
    default: 3
  availability_zone_selection:
    description:
      - How the default layout picks zones. C(Ordered) takes them alphabetically. C(Random) picks them in an order
        seeded with I(cluster_name), so every run of the same cluster gets the same zones.
      - Either way, zones the cluster's subnets already use are kept. Once they are as many as
        I(availability_zone_usage_limit), they are the layout's zones and the region's zones are not read again (CAPA
        writes the zones it picked into the cluster spec).
    type: str
    choices: [Ordered, Random]
    default: Ordered
  nat_gateways:
    description:
      - C(per_az) (CAPA) - one NAT gateway per zone that has a private subnet, in that zone's first public subnet;
        private route tables route to their zone's gateway.
      - C(single) - one NAT gateway in the first public subnet (zones sorted); every private route table routes to it.
      - C(none) - no NAT gateway; private route tables get no default route.
      - Owned NAT gateways a mode change leaves unused are kept and reported in a warning.
    type: str
    choices: [per_az, single, none]
    default: per_az
  nat_gateway_wait:
    description:
      - Wait until new NAT gateways are available before the private route tables are routed through them, as
        CAPA does (C(NatGatewayAvailable), about 2 minutes on AWS).
      - C(false) creates the NAT gateways and returns while they are C(pending); the private route tables are
        created and associated, and get their C(0.0.0.0/0) route from the next run with C(true), which waits for the
        gateways. The cluster role does this to create the EKS control plane and the control-plane load balancer
        while the gateways settle, and runs the step again before any machine needs a way out.
      - A route is only ever made to an available NAT gateway (also with I(wait=false)). Check mode does not wait;
        it plans the routes with the gateways.
    type: bool
    default: true
  internet_gateway_id:
    description:
      - Target of the public route tables' C(0.0.0.0/0) route (from M(clusterapi.aws.capa_vpc); may be a
        check-mode placeholder). Required for a managed VPC with public subnets.
    type: str
notes:
  - The NAT gateway creation carries an idempotency token derived from the cluster, VPC and subnet, so a create
    retried after a lost response does not make a second gateway.
  - Against moto, network interfaces of deleted NAT gateways stay behind (AWS removes them), which can block the
    deletion of their subnets there.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: VPC of cluster demo
  clusterapi.aws.capa_vpc:
    cluster_name: demo
  register: network_vpc

- name: CAPA's default layout - 3 zones, public and private subnets, a NAT gateway per zone
  clusterapi.aws.capa_subnet:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    vpc_cidr_block: "{{ network_vpc.vpc.cidr_block }}"
    internet_gateway_id: "{{ network_vpc.vpc.internet_gateway_id }}"
  register: network_subnets

- name: Two zones, one shared NAT gateway
  clusterapi.aws.capa_subnet:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    internet_gateway_id: "{{ network_vpc.vpc.internet_gateway_id }}"
    nat_gateways: single
    subnets:
      - {availability_zone: us-east-1a, cidr_block: 10.0.0.0/24, is_public: true}
      - {availability_zone: us-east-1a, cidr_block: 10.0.16.0/20}
      - {availability_zone: us-east-1b, cidr_block: 10.0.32.0/20}

- name: Subnets you bring, in a VPC you bring
  clusterapi.aws.capa_subnet:
    cluster_name: demo
    vpc_id: vpc-0123456789abcdef0
    subnets:
      - id: subnet-0123456789abcdef0
      - id: subnet-0fedcba9876543210

- name: Delete what the cluster owns
  clusterapi.aws.capa_subnet:
    cluster_name: demo
    vpc_id: "{{ network_vpc.vpc.id }}"
    state: absent
"""

RETURN = r"""
subnets:
  description: The cluster's subnets after the run (in check mode, as they would be). Empty after deletion.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Subnet id; C(planned:subnet:<name>) in check mode when it would be created.
      type: str
      sample: subnet-0a1b2c3d4e5f67890
    name:
      description: The Name tag.
      type: str
      sample: demo-subnet-public-us-east-1a
    availability_zone:
      description: Zone of the subnet.
      type: str
      sample: us-east-1a
    cidr_block:
      description: IPv4 CIDR block.
      type: str
      sample: 10.0.0.0/20
    is_public:
      description: Whether the subnet is public.
      type: bool
      sample: true
    managed:
      description: Whether the cluster owns the subnet (false for a subnet you bring).
      type: bool
      sample: true
    route_table_id:
      description: The subnet's own route table (C(null) for subnets you bring); C(planned:rtb:<name>) in check mode.
      type: str
      sample: rtb-0a1b2c3d4e5f67890
    nat_gateway_id:
      description:
        - NAT gateway the private subnet's default route points at.
        - C(null) for public subnets, without a NAT gateway, and while the gateway is pending
          (I(nat_gateway_wait=false)).
      type: str
      sample: nat-0a1b2c3d4e5f67890
    map_public_ip_on_launch:
      description: Whether instances launched in the subnet get a public IP.
      type: bool
      sample: true
    tags:
      description: Tags of the subnet.
      type: dict
      sample: {"Name": "demo-subnet-public-us-east-1a", "sigs.k8s.io/cluster-api-provider-aws/role": "public"}
nat_gateways:
  description: The cluster's NAT gateways (in check mode, as they would be).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: NAT gateway id; C(planned:nat:<zone>) in check mode when it would be created.
      type: str
      sample: nat-0a1b2c3d4e5f67890
    availability_zone:
      description: Zone of the NAT gateway's subnet.
      type: str
      sample: us-east-1a
    subnet_id:
      description: Public subnet holding the NAT gateway.
      type: str
      sample: subnet-0a1b2c3d4e5f67890
    allocation_id:
      description: Allocation id of its Elastic IP; C(planned:eip:<name>) in check mode when it would be allocated.
      type: str
      sample: eipalloc-0a1b2c3d4e5f67890
    public_ip:
      description: Its public IP address (a placeholder in check mode when the address would be allocated).
      type: str
      sample: 203.0.113.10
    state:
      description: State of the NAT gateway.
      type: str
      sample: available
nat_gateway_ips:
  description: Public IPs of the NAT gateways (CAPA's C(status.network.natGatewaysIPs)); placeholders in check mode.
  returned: always
  type: list
  elements: str
  sample: ["203.0.113.10", "203.0.113.11"]
availability_zones:
  description: The zones the cluster's subnets use.
  returned: always
  type: list
  elements: str
  sample: [us-east-1a, us-east-1b, us-east-1c]
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "ec2:CreateSubnet", "resource": "demo-subnet-public-us-east-1a", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeSubnets": 1, "ec2:DescribeRouteTables": 1}
diff:
  description: The subnets and NAT gateways before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.network.subnet import SubnetTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=SubnetTier(),
        result_key=None,
    )


if __name__ == "__main__":
    main()
