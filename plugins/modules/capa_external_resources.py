#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_external_resources
short_description: Remove what the in-cluster cloud provider created, as CAPA's external resource GC does
version_added: 0.1.0
description:
  - A Kubernetes Service of type C(LoadBalancer) makes the in-cluster cloud provider (or the AWS load balancer
    controller) create load balancers, target groups and security groups in the cluster's subnets, tagged
    C(kubernetes.io/cluster/<cluster_name>=owned). The collection did not create them, but they block the deletion
    of the network. C(state=absent) deletes them before the network goes, as Cluster API Provider AWS does on cluster
    deletion (feature C(ExternalResourceGC), on by default).
  - Resources that also carry CAPA's own tags (the cluster's C(lb) security group, its API server load balancer)
    belong to the other modules and are never touched here; neither is anything without the cloud provider's
    owned tag.
  - Order - load balancers (their listeners go with them; v2 ones are waited for), target groups, then security
    groups, after the rules in the cluster's own (or the cloud provider's) groups that reference them are revoked.
    A deletion AWS still refuses after I(wait_timeout) fails naming what blocks it and whose it is.
  - C(state=present) only reports them (they belong to the cloud provider while the cluster lives).
  - One Resource Groups Tagging API request finds the v2 load balancers, target groups and security groups; classic
    load balancers come from the ELB API.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  tasks:
    description:
      - Which kinds to collect (CAPA's C(external-resource-tasks-gc) annotation). Empty means all.
    type: list
    elements: str
    choices: [load-balancer, target-group, security-group]
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
- name: Before deleting the network, remove the cloud provider's load balancers and security groups
  clusterapi.aws.capa_external_resources:
    cluster_name: demo
    state: absent

- name: Only list them
  clusterapi.aws.capa_external_resources:
    cluster_name: demo
  register: cloud_provider
"""

RETURN = r"""
resources:
  description:
    - The cloud provider's resources after the run (in check mode, as they would be) - empty after C(state=absent).
      The diff's C(before) lists those found.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: C(classic_load_balancer), C(network_load_balancer), C(application_load_balancer),
        C(target_group) or C(security_group).
      type: str
      sample: classic_load_balancer
    id:
      description: Name (classic), ARN (v2, target group) or group id.
      type: str
      sample: a1b2c3d4e5f6a7b8c9d0
    name:
      description: Name of the resource.
      type: str
      sample: a1b2c3d4e5f6a7b8c9d0
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "elb:DeleteLoadBalancer", "resource": "a1b2c3", "reason": "made by the in-cluster cloud provider"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"tag:GetResources": 1, "elb:DescribeLoadBalancers": 1}
diff:
  description: The resources before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.network.external_resources import (
    ExternalResourcesTier,
    module_argument_spec,
)


def main():
    run_tier(
        module_argument_spec(),
        tier=ExternalResourcesTier(),
        result_key=None,
    )


if __name__ == "__main__":
    main()
