#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_preflight
short_description: Check what a cluster spec needs from the account before the first change
version_added: 0.1.0
description:
  - Checks, with reads only, what the cluster spec needs from the account and region, and fails naming every spec
    field that cannot work there - all of them at once - before any other module of the run changes anything.
    The C(cluster) role runs it right after M(clusterapi.aws.capa_cluster_spec), before the network.
  - "Checked: the availability zones the spec names exist and are C(available); each machine group's, pool's and
    EKS node group's instance types are offered in its zones (C(DescribeInstanceTypeOfferings)) and run the
    architecture of its AMI (or of a node group's AMI type); AMIs given by id exist in the region, CAPA's AMI lookups
    find an image; key pairs, instance profiles, a VPC, subnets and security groups brought by id, and an external
    control-plane load balancer exist; the EKS encryption key exists, is enabled and is for C(ENCRYPT_DECRYPT); the
    EKS version is one AWS offers (C(DescribeClusterVersions)); the Service Quotas for VPCs, Elastic IPs, NAT
    gateways per zone, classic / network load balancers and running on-demand / spot standard vCPUs leave room for
    what the run adds beyond what the account already uses."
  - One tagging-API request finds what the cluster already has (its VPC, subnets, NAT gateways, machines per group
    and pool, EKS cluster and node groups). Only what the run would create is checked, with one request per
    resource type (IAM has no batch read, so one C(GetInstanceProfile) per distinct name; one C(GetServiceQuota)
    per quota that matters). A run that creates nothing costs that one request.
  - "Permissions: the caller's policies are asked, through IAM's policy simulation (C(iam:SimulatePrincipalPolicy) on
    the caller's user, or on the role of its assumed-role session), whether they allow the requests the run needs
    for what it would create (those the generated controllers policies grant on any resource); a permission they
    do not allow fails the run here, naming it and the caller, before the first change. A decision IAM cannot make
    without the request's context (a statement with a C(Condition)) is not a refusal."
  - A check that cannot be made does not stop the run - when a read it needs is denied (C(AccessDenied),
    C(UnauthorizedOperation), HTTP 403) or not served by the endpoint (an unknown operation), the check is skipped
    with a warning that names it and the permission that would enable it, and the run goes on; only facts that
    were read can refuse a change. The generated controllers policies keep the permissions that only these
    checks use in statements whose C(Sid) starts with C(Optional) (Service Quotas, C(DescribeClusterVersions),
    C(DescribeInstanceTypeOfferings), C(DescribeKeyPairs), C(GetInstanceProfile), C(kms:DescribeKey),
    C(SimulatePrincipalPolicy)); a policy without them (CAPA's C(clusterawsadm) controllers policy, say) builds
    clusters with those warnings. Leaving out C(iam:SimulatePrincipalPolicy) turns the permissions check off.
  - When the tagging-API read of what the cluster has is itself denied, nothing says what the run would create, so
    no check is made (one warning).
  - In check mode the failure reads C(would fail:) followed by the problems.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  spec:
    description:
      - The normalised cluster spec, as M(clusterapi.aws.capa_cluster_spec) returns it under C(cluster) (its
        C(name) must be O(cluster_name)).
    type: dict
    required: true
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.attributes.info
notes:
  - Not checkable before a run - capacity (C(InsufficientInstanceCapacity) is known only when AWS launches), a
    spec change on what already exists (another instance type for a group at its size; that group's own module
    reads its type and image before it launches), and permissions that the controllers policies scope to
    resources (Secrets Manager, SSM parameters, IAM roles, C(iam:PassRole)) or to conditions, and service control
    policies - AWS judges those when each request is made. A permission the caller holds only on specific
    resources reads as not allowed to the simulation; such a policy should leave out C(iam:SimulatePrincipalPolicy).
  - The bastion's Canonical image and an EKS pool's EKS-optimised image are looked up by their own modules.
"""

EXAMPLES = r"""
- name: Build the cluster spec
  clusterapi.aws.capa_cluster_spec:
    cluster: "{{ capa_cluster }}"
  register: compiled

- name: Check the account before anything changes
  clusterapi.aws.capa_step:
    module: capa_preflight
    params: "{{ compiled.steps.preflight }}"
"""

RETURN = r"""
preflight:
  description: What was checked. A failing check fails the module instead, naming each field and fact.
  returned: success
  type: dict
  contains:
    skipped:
      description: True when the run creates nothing, so nothing but the one tagging-API read was made.
      type: bool
      sample: false
    checked:
      description: The kinds of checks made.
      type: list
      elements: str
      sample: [availability_zones, instance_types, instance_type_offerings, images, key_pairs, quotas, permissions]
    creates:
      description:
        - What the run would create as the preflight sees it - C(network), C(vpc), C(load_balancer), C(eks_cluster)
          (bools), C(nat_gateways) (zones), C(machines) (field to count), C(on_demand_vcpus), C(spot_vcpus).
      type: dict
      sample: {"network": true, "vpc": true, "machines": {"capa_cluster.control_plane": 3}, "on_demand_vcpus": 6}
    quotas:
      description: The quota values read (C(null) for one Service Quotas does not know), by name.
      type: dict
      sample: {"vpcs": 5.0, "elastic_ips": 5.0, "on_demand_vcpus": 1152.0}
    not_checked:
      description:
        - The checks skipped because a read they need was denied or not served, each with the permission that would
          enable it (the run's warnings say the same).
      type: dict
      sample: {"quotas": "servicequotas:GetServiceQuota and servicequotas:GetAWSDefaultServiceQuota"}
    failures:
      description: Always empty on success.
      type: list
      elements: str
      sample: []
plan:
  description: Always empty - the module makes no mutating call.
  returned: always
  type: list
  elements: dict
  sample: []
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"resourcegroupstaggingapi:GetResources": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.preflight import PreflightTier


def main():
    run_tier(dict(spec=dict(type="dict", required=True)), tier=PreflightTier(), result_key="preflight", info=True)


if __name__ == "__main__":
    main()
