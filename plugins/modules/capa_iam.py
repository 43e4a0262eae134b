#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_iam
short_description: The account's IAM roles, instance profiles and policies for clusters (clusterawsadm bootstrap iam)
version_added: 0.1.0
description:
  - Does what C(clusterawsadm bootstrap iam create-cloudformation-stack) does, without CloudFormation - roles,
    instance profiles and customer-managed policies named I(prefix) + base name + I(suffix).
  - Roles C(control-plane), C(controllers) and C(nodes) (each with an instance profile of the same name, trusting
    C(ec2.amazonaws.com)); with I(eks) the role C(eks-controlplane) (trusting C(eks.amazonaws.com), with
    C(AmazonEKSClusterPolicy)); with I(eks_nodegroup) the role C(eks-nodegroup) (trusting C(ec2.amazonaws.com));
    with I(eks_fargate) the role C(eks-fargate) (trusting C(eks-fargate-pods.amazonaws.com)).
  - Policies C(controllers) (exactly the operations this collection's modules make), C(controllers-eks) (with
    I(eks)), C(control-plane) (the cloud provider on control-plane machines) and C(nodes) (the cloud provider on
    nodes, image pulls, Session Manager, reading and deleting bootstrap data of the I(secret_backends), and the
    termination watcher). C(control-plane) gets the control-plane, nodes and controllers policies, C(controllers)
    the controllers policies, C(nodes) the nodes policy plus C(AmazonEC2ContainerRegistryReadOnly) (and the EKS
    worker and CNI policies with I(eks)).
  - These resources belong to the account, not to a cluster. I(cluster_name) names the bootstrap configuration
    and everything created is tagged C(clusterapi.aws/bootstrap=<cluster_name>) (plus C(Name) and
    I(additional_tags)). Only resources with that tag are changed or deleted; a role, instance profile or policy
    of the same name without it is used as it is.
  - A changed policy document becomes a new default policy version; when IAM's five versions exist the oldest
    non-default version is deleted first. Trust policies, permissions boundaries, attachments, tags and the role
    of each instance profile are reconciled. Roles and policies the options no longer ask for are deleted.
  - C(state=absent) detaches and deletes what the configuration created - roles (removed from their instance
    profiles), instance profiles, policy versions and policies.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  prefix:
    description: Prepended to every name (CAPA's C(namePrefix)).
    type: str
    default: ""
  suffix:
    description: Appended to every name (CAPA's C(nameSuffix)).
    type: str
    default: .cluster-api-provider-aws.sigs.k8s.io
  path:
    description: IAM path of the roles, instance profiles and policies. A role's path cannot change.
    type: str
    default: /
  permissions_boundary:
    description: ARN of a managed policy set as the permissions boundary of every role.
    type: str
  eks:
    description:
      - Create the C(controllers-eks) policy and the C(eks-controlplane) role, and give nodes the EKS worker policies.
    type: bool
    default: true
  eks_nodegroup:
    description: Create the C(eks-nodegroup) role for managed node groups.
    type: bool
    default: false
  eks_fargate:
    description: Create the C(eks-fargate) role for Fargate profiles.
    type: bool
    default: false
  secret_backends:
    description:
      - Where bootstrap data may be kept; the controllers and nodes policies allow exactly these.
    type: list
    elements: str
    choices: [secrets-manager, ssm-parameter-store]
    default: [secrets-manager]
  extra_statements:
    description:
      - Statements appended to a policy, keyed by its base name (C(controllers), C(controllers-eks),
        C(control-plane), C(nodes)). Each statement needs C(Effect) and C(Action).
    type: dict
    default: {}
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.attributes
notes:
  - IAM is global; I(region) only picks the partition of AWS managed policy ARNs.
  - The C(controllers) role trusts C(ec2.amazonaws.com) only; EKS pod identity is not set up.
  - Run it with an administrator's credentials; the C(controllers) policy does not allow IAM bootstrap itself.
"""

EXAMPLES = r"""
- name: Create the IAM roles, instance profiles and policies clusters use
  clusterapi.aws.capa_iam:
    cluster_name: default
    eks_nodegroup: true
  register: iam

- name: Let nodes read one more bucket
  clusterapi.aws.capa_iam:
    cluster_name: default
    extra_statements:
      nodes:
        - Effect: Allow
          Action: ["s3:GetObject"]
          Resource: ["arn:aws:s3:::my-bucket/*"]

- name: Remove them
  clusterapi.aws.capa_iam:
    cluster_name: default
    state: absent
"""

RETURN = r"""
iam:
  description: The bootstrap configuration's resources (empty lists after C(state=absent)).
  returned: always
  type: dict
  contains:
    configuration:
      description: The configuration name (I(cluster_name)), the value of the C(clusterapi.aws/bootstrap) tag.
      type: str
      sample: default
    roles:
      description: >-
        The roles - C(base), C(name), C(arn), C(managed) (false for a role found without our tag), C(created),
        C(trust_services), C(policy_arns), C(instance_profile).
      type: list
      elements: dict
      sample: [{"base": "nodes", "name": "nodes.cluster-api-provider-aws.sigs.k8s.io",
                "arn": "arn:aws:iam::123456789012:role/nodes.cluster-api-provider-aws.sigs.k8s.io"}]
    instance_profiles:
      description: The instance profiles - C(name), C(arn), C(role), C(managed).
      type: list
      elements: dict
      sample: [{"name": "nodes.cluster-api-provider-aws.sigs.k8s.io", "managed": true}]
    policies:
      description: >-
        The customer-managed policies - C(base), C(name), C(arn), C(default_version), C(document), C(managed),
        C(created).
      type: list
      elements: dict
      sample: [{"base": "nodes", "name": "nodes.cluster-api-provider-aws.sigs.k8s.io", "default_version": "v1"}]
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "iam:CreatePolicy", "resource": "nodes.cluster-api-provider-aws.sigs.k8s.io", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"iam:ListPolicies": 1, "iam:GetRole": 3}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.iam.iam import IamBootstrapTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=IamBootstrapTier(),
        result_key="iam",
    )


if __name__ == "__main__":
    main()
