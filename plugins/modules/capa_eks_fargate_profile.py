#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_eks_fargate_profile
short_description: Reconcile an EKS Fargate profile as CAPA's AWSFargateProfile does
version_added: 0.1.0
description:
  - Keeps one Fargate profile of the EKS cluster I(eks_cluster_name) - pods matching I(selectors) run on Fargate in
    I(subnets) with the pod execution role.
  - The profile carries CAPA's ownership and role tags, C(kubernetes.io/cluster/<eks_cluster_name>=owned),
    C(clusterapi.aws/fargate-profile=<name>), C(clusterapi.aws/template-hash=<hash>), I(additional_tags) and
    I(tags); the module finds it by these tags.
  - Every field of a Fargate profile is immutable. A change of role, subnets or selectors replaces the profile -
    a new one named C(<name>-<4 characters of its template hash>) is created and waited for until C(ACTIVE), then
    the old one is deleted. Creating first keeps a profile for matching pods at all times; deleting first would
    keep the name but leave new pods Pending while EKS deletes and creates (minutes each). Tags are added in
    place.
  - The pod execution role is I(pod_execution_role_arn), or a role the module creates and owns,
    C(<cluster_name>-<name>-fargate-iam-service-role) (cut and hashed to 64 characters when longer), trusting
    C(eks-fargate-pods.amazonaws.com) with AmazonEKSFargatePodExecutionRolePolicy. One role per profile, so
    deleting a profile never takes a role another profile uses.
  - C(state=absent) deletes the profile (one at a time, as EKS requires), waits until it is gone and deletes the
    role it created.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  wait_timeout:
    description:
      - Seconds the whole run may spend waiting, shared by every wait of the run.
      - Sized for EKS (AWS creates and deletes Fargate profiles one at a time, each in a few minutes). The cluster
        spec's C(wait_timeout) or C(module_defaults) set another.
      - While it waits the module writes where it stands every 30 seconds to its log, and the last lines to
        C(progress) in its result.
    type: int
    default: 900
  name:
    description:
      - Name of the profile. Letters, digits, C(-) and C(_), starting with a letter or digit, at most 91
        characters.
    type: str
    required: true
  eks_cluster_name:
    description:
      - Name of the EKS cluster. Default I(cluster_name).
    type: str
  pod_execution_role_arn:
    description:
      - ARN of an existing pod execution role, used as it is. Default a role created and owned by the module.
    type: str
  subnets:
    description:
      - Private subnets of the pods as M(clusterapi.aws.capa_subnet) returns them (a public one is an error; other
        keys are ignored). Default the EKS cluster's subnets tagged private.
    type: list
    elements: dict
    default: []
  selectors:
    description:
      - Which pods run on Fargate; one to five selectors.
    type: list
    elements: dict
    default: []
    suboptions:
      namespace:
        description: Namespace of the pods.
        type: str
        required: true
      labels:
        description: Labels the pods must all have (at most five).
        type: dict
  tags:
    description: Tags of the profile on top of I(additional_tags).
    type: dict
    default: {}
notes:
  - C(CreateFargateProfile) carries an idempotency token derived from the cluster, profile name and template hash.
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
- name: Run kube-system and the batch namespace's Fargate-labelled pods on Fargate
  clusterapi.aws.capa_eks_fargate_profile:
    cluster_name: demo
    name: system
    selectors:
      - namespace: kube-system
      - namespace: batch
        labels: {compute: fargate}

- name: Delete the profile and its role
  clusterapi.aws.capa_eks_fargate_profile:
    cluster_name: demo
    name: system
    state: absent
"""

RETURN = r"""
progress:
  description:
    - The last lines a long wait reported, at least one every 30 seconds of a wait. Every line also went to the
      module's log as it happened and, when the module ran in the controller's worker process (a local target on
      the controller's Python), to the controller's display (a terminal, an AWX job's output), in lines that begin
      with C([capa] <host>).
  returned: when the run waited long enough to report
  type: list
  elements: str
  sample: ["95s: waiting for Fargate profile demo-eks-fp-0 to become ACTIVE: 1m30s waited, up to 13m25s left"]
fargate_profile:
  description: The profile after the run (in check mode, as it would be); C(null) when absent.
  returned: always
  type: dict
  contains:
    name:
      description: Profile name.
      type: str
      sample: system
    arn:
      description: Profile ARN (a placeholder in check mode when it would be created).
      type: str
    status:
      description: EKS status (C(ACTIVE), C(CREATING) ...).
      type: str
      sample: ACTIVE
    selectors:
      description: Selectors (C(namespace), C(labels)).
      type: list
      elements: dict
    subnets:
      description: Subnet ids.
      type: list
      elements: str
    pod_execution_role_arn:
      description: The pod execution role.
      type: str
    replaced_from:
      description: Profiles this run deleted because this one replaced them.
      type: list
      elements: str
conditions:
  description:
    - CAPA's conditions, each C(status) and C(reason) - C(EKSFargateProfileReady) and, when present,
      C(IAMFargateRolesReady).
  returned: always
  type: dict
  sample: {"EKSFargateProfileReady": {"status": true, "reason": ""}}
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "eks:CreateFargateProfile", "resource": "system", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"eks:DescribeCluster": 1, "eks:ListFargateProfiles": 1, "eks:DescribeFargateProfile": 1}
diff:
  description: The profile before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_fargate_profile import (
    FargateProfileTier,
    module_argument_spec,
)


def main():
    run_tier(
        module_argument_spec(),
        tier=FargateProfileTier(),
        result_key=None,
    )


if __name__ == "__main__":
    main()
