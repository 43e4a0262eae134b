#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_vpc
short_description: Reconcile a cluster's VPC and internet gateway as Cluster API Provider AWS does
version_added: 0.1.0
description:
  - Creates and keeps the cluster VPC the way CAPA's AWSCluster controller does - CIDR C(10.0.0.0/16) by default,
    DNS support and DNS hostnames on, secondary CIDR blocks added (never removed), and an internet gateway created
    and attached - all tagged with CAPA's ownership, role and Name tags.
  - With I(id), uses a VPC you bring. A VPC without the cluster's ownership tag is validated and used, never changed
    and never deleted.
  - C(state=absent) deletes the internet gateway and the VPC the cluster owns. Delete subnets and security groups
    first (M(clusterapi.aws.capa_subnet), M(clusterapi.aws.capa_security_group)); the VPC deletion waits, within
    I(wait_timeout), while AWS still releases their network interfaces.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  id:
    description:
      - Id of an existing VPC to use (bring your own). Without it the module finds the VPC the cluster owns by its
        ownership tag, or creates one.
    type: str
  cidr_block:
    description:
      - Primary IPv4 CIDR block of a VPC the module creates (/16 to /28). Ignored for a VPC you bring.
    type: str
    default: 10.0.0.0/16
  secondary_cidr_blocks:
    description:
      - Additional IPv4 CIDR blocks to associate. Add-only, as in CAPA - blocks not listed are kept and reported
        in a warning.
    type: list
    elements: str
    default: []
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
- name: Reconcile the VPC of cluster demo
  clusterapi.aws.capa_vpc:
    cluster_name: demo
    region: us-east-1
  register: network_vpc

- name: Use a VPC made outside the collection
  clusterapi.aws.capa_vpc:
    cluster_name: demo
    id: vpc-0123456789abcdef0

- name: Delete the VPC and internet gateway the cluster owns
  clusterapi.aws.capa_vpc:
    cluster_name: demo
    state: absent
"""

RETURN = r"""
vpc:
  description: The VPC after the run (in check mode, as it would be). C(null) after deletion.
  returned: always
  type: dict
  contains:
    id:
      description: VPC id; C(planned:vpc:<name>) in check mode when it would be created.
      type: str
      sample: vpc-0a1b2c3d4e5f67890
    name:
      description: The Name tag.
      type: str
      sample: demo-vpc
    cidr_block:
      description: Primary CIDR block.
      type: str
      sample: 10.0.0.0/16
    secondary_cidr_blocks:
      description: Associated secondary CIDR blocks.
      type: list
      elements: str
      sample: []
    managed:
      description: Whether the cluster owns the VPC (false for a VPC you bring).
      type: bool
      sample: true
    enable_dns_support:
      description: DNS resolution attribute (C(null) for a VPC you bring; not read).
      type: bool
      sample: true
    enable_dns_hostnames:
      description: DNS hostnames attribute (C(null) for a VPC you bring; not read).
      type: bool
      sample: true
    internet_gateway_id:
      description: The attached internet gateway.
      type: str
      sample: igw-0a1b2c3d4e5f67890
    tags:
      description: Tags of the VPC.
      type: dict
      sample: {"Name": "demo-vpc", "sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned"}
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "ec2:CreateVpc", "resource": "demo-vpc", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeVpcs": 1, "ec2:DescribeInternetGateways": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.network.vpc import VpcTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=VpcTier(),
        result_key="vpc",
    )


if __name__ == "__main__":
    main()
