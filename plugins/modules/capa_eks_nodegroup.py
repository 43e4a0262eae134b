#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_eks_nodegroup
short_description: Reconcile an EKS managed node group pool as CAPA's AWSManagedMachinePool does
version_added: 0.1.0
description:
  - Keeps one pool of EKS managed nodes - a managed node group of the EKS cluster I(eks_cluster_name) - in line with
    the options, the way CAPA's AWSManagedMachinePool controller does.
  - A node group created or resized in the run is done when its desired size of Nodes is Ready, not only when EKS
    says C(ACTIVE) - one Node list per poll through I(kubernetes_api), with a token of the run's credentials. Without
    an answering API (C(kubernetes_api.mode=auto)) the Nodes are not awaited and the run warns; C(none) skips it.
  - The first node group of a pool is named I(name); a replacement is named C(<name>-<4 characters of its template
    hash>). The node groups of a pool are found by their tags - C(clusterapi.aws/node-group=<name>) and the
    cluster's ownership tag - read from C(DescribeNodegroup) (one call per node group whose name can belong to the
    pool; C(ListNodegroups) gives names only).
  - Each node group carries CAPA's ownership and role tags, C(kubernetes.io/cluster/<eks_cluster_name>=owned),
    C(clusterapi.aws/node-group=<name>), C(clusterapi.aws/template-hash=<hash>), I(additional_tags) and I(tags).
  - Scaling, labels, taints and the update config are changed in place with C(UpdateNodegroupConfig) (labels and
    taints as add-or-update and remove lists). The Kubernetes version moves one minor version per
    C(UpdateNodegroupVersion) towards I(version), never beyond the cluster's; then the AMI I(release_version); a new
    I(launch_template) version goes first.
  - Fields AWS cannot change on a node group - I(instance_types), I(capacity_type), I(ami_type), I(disk_size),
    I(remote_access), the node role, I(subnets) and the launch template itself - make up the template hash. When it
    changes the pool is replaced by surge - a new node group is created, waited for until C(ACTIVE), and only then
    is the old one deleted. Check mode shows both calls.
  - The node role is I(node_role_arn), or a role the module creates and owns,
    C(<cluster_name>-<name>-nodegroup-iam-service-role) (cut and hashed to 64 characters when longer), trusting
    C(ec2.amazonaws.com) with AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy and
    AmazonEC2ContainerRegistryReadOnly. One role per pool, so deleting a pool never takes a role another pool uses.
  - C(state=absent) deletes the pool's node groups, waits until they are gone and then deletes the role it created.
    With I(wait=false) it starts their deletion and keeps the role (C(conditions.EKSNodegroupReady.reason) is
    C(Deleting)); a run with I(wait) deletes the role once the node groups are gone. The C(eks_node_groups) role
    deletes a cluster's node groups that way - started before anything else, waited for later in the same run.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  wait_timeout:
    description:
      - Seconds the whole run may spend waiting, shared by every wait of the run.
      - Sized for EKS (a managed node group is created in minutes, but a version update replaces every node one batch at
        a time). The cluster spec's C(wait_timeout) or C(module_defaults) set another.
      - While it waits the module writes where it stands every 30 seconds to its log, and the last lines to
        C(progress) in its result.
    type: int
    default: 1800
  name:
    description:
      - Name of the pool (CAPA's AWSManagedMachinePool); the first node group gets this name.
      - Letters, digits, C(-) and C(_), starting with a letter or digit, at most 54 characters.
    type: str
    required: true
  eks_cluster_name:
    description:
      - Name of the EKS cluster. Default I(cluster_name).
    type: str
  version:
    description:
      - Kubernetes version of the nodes, C(major.minor) such as C(1.31). Default the cluster's version. A version
        newer than the cluster's is capped at the cluster's, with a warning.
    type: str
  release_version:
    description:
      - AMI release version, e.g. C(1.31.2-20241115); must belong to I(version). Default the latest AWS offers
        when the node group is created or upgraded.
    type: str
  scaling:
    description:
      - Size of the pool.
    type: dict
    default: {}
    suboptions:
      min_size:
        description: Fewest nodes.
        type: int
        default: 1
      max_size:
        description: Most nodes.
        type: int
        default: 3
      desired_size:
        description:
          - Nodes wanted; between I(scaling.min_size) and I(scaling.max_size). With I(externally_managed_replicas)
            used at creation only.
        type: int
        default: 2
  externally_managed_replicas:
    description:
      - The desired size belongs to an autoscaler (CAPA's C(cluster.x-k8s.io/replicas-managed-by) annotation). The
        module sets I(scaling.desired_size) only when it creates a node group, never changes it afterwards, and
        reports AWS's current value in C(nodegroup.scaling).
    type: bool
    default: false
  instance_types:
    description:
      - Instance types of the nodes. Default C([t3.large]), or none with a I(launch_template) (the template's).
    type: list
    elements: str
  capacity_type:
    description: On-demand or spot nodes.
    type: str
    choices: [ON_DEMAND, SPOT]
    default: ON_DEMAND
  ami_type:
    description:
      - EKS AMI type. Default C(AL2023_x86_64_STANDARD) - CAPA's default C(AL2_x86_64) is deprecated (AWS publishes
        no AL2 AMI for Kubernetes 1.33 and later). With a I(launch_template), none by default.
      - C(CUSTOM) means the I(launch_template) names the AMI (no AMI type is sent).
    type: str
  disk_size:
    description:
      - Root volume size in GiB. Default C(20); not allowed with a I(launch_template) (the template sets the volume).
    type: int
  labels:
    description: Kubernetes labels of the nodes.
    type: dict
    default: {}
  taints:
    description: Kubernetes taints of the nodes; a taint is identified by its key and effect.
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description: Taint key.
        type: str
        required: true
      value:
        description: Taint value.
        type: str
      effect:
        description: Taint effect.
        type: str
        required: true
        choices: [NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE]
  update_config:
    description:
      - How many nodes a node group update may take down at once. Default I(max_unavailable=1) (CAPA's webhook
        default).
    type: dict
    default: {}
    suboptions:
      max_unavailable:
        description: Nodes (1 to 100).
        type: int
      max_unavailable_percentage:
        description: Percentage of the nodes (1 to 100).
        type: int
  launch_template:
    description:
      - An EC2 launch template the nodes are made from (the module does not manage the template). Changing
        I(launch_template.version) updates the node group in place; changing the template replaces it.
    type: dict
    suboptions:
      id:
        description: Launch template id; exactly one of I(launch_template.id) and I(launch_template.name).
        type: str
      name:
        description: Launch template name.
        type: str
      version:
        description: Template version; default the template's default version.
        type: str
  remote_access:
    description:
      - SSH access to the nodes; not allowed with a I(launch_template).
    type: dict
    suboptions:
      ec2_ssh_key:
        description: EC2 key pair name.
        type: str
      source_security_group_ids:
        description: Security groups allowed to reach the nodes on port 22; default anywhere (AWS's rule).
        type: list
        elements: str
  node_role_arn:
    description:
      - ARN of an existing node role, used as it is. Default a role created and owned by the module (see above).
    type: str
  subnets:
    description:
      - Subnets of the nodes as M(clusterapi.aws.capa_subnet) returns them; the private ones (C(is_public) false or
        absent) are used, other keys are ignored. Default the EKS cluster's subnets tagged private.
    type: list
    elements: dict
    default: []
  tags:
    description: Tags of the node group on top of I(additional_tags).
    type: dict
    default: {}
  await_nodes:
    description:
      - With I(wait), wait until the node group's desired size of Nodes is Ready even when this run changes nothing -
        for a run after one that created or changed the node group with I(wait=false). A run that creates, resizes
        or updates the node group, or finds it C(CREATING) or C(UPDATING), waits for them anyway.
      - The C(eks_node_groups) role creates every node group without waiting, then the Fargate profiles (EKS creates
        one at a time per cluster), then waits for the node groups with this option, so they are created together.
    type: bool
    default: false
    version_added: 0.3.0
notes:
  - With I(wait), creation, every update and every deletion is waited for within I(wait_timeout); version upgrades
    several minor versions away run step by step in one run. Without it, the run makes one step and reports; a
    later run with I(wait) that finds the node group C(CREATING) or C(UPDATING) waits for it and for its Nodes.
  - C(CreateNodegroup) carries an idempotency token derived from the cluster, node group name and template hash.
  - Tags are added or updated, never removed.
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.common.state
  - clusterapi.aws.kubernetes_api
  - clusterapi.aws.attributes
"""

EXAMPLES = r"""
- name: A pool of three to six spot nodes in the cluster's private subnets
  clusterapi.aws.capa_eks_nodegroup:
    cluster_name: demo
    eks_cluster_name: demo
    name: md-0
    scaling: {min_size: 3, max_size: 6, desired_size: 3}
    instance_types: [m6i.large, m5.large]
    capacity_type: SPOT
    labels: {workload: batch}
    taints:
      - {key: dedicated, value: batch, effect: NO_SCHEDULE}
    subnets: "{{ network_subnets.subnets }}"

- name: Let the cluster autoscaler own the desired size
  clusterapi.aws.capa_eks_nodegroup:
    cluster_name: demo
    name: md-autoscaled
    scaling: {min_size: 1, max_size: 10, desired_size: 1}
    externally_managed_replicas: true

- name: Delete the pool and the role it created
  clusterapi.aws.capa_eks_nodegroup:
    cluster_name: demo
    name: md-0
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
  sample: ["95s: waiting for node group demo-eks-ng-0 to become ACTIVE: 1m30s waited, up to 28m25s left"]
nodegroup:
  description: The pool's current node group after the run (in check mode, as it would be); C(null) when absent.
  returned: always
  type: dict
  contains:
    name:
      description: Node group name.
      type: str
      sample: md-0
    arn:
      description: Node group ARN (a placeholder in check mode when it would be created).
      type: str
    status:
      description: EKS status (C(ACTIVE), C(CREATING), C(UPDATING) ...).
      type: str
      sample: ACTIVE
    version:
      description: Kubernetes version.
      type: str
      sample: "1.31"
    release_version:
      description: AMI release version.
      type: str
    scaling:
      description: AWS's current C(min_size), C(max_size) and C(desired_size).
      type: dict
      sample: {"min_size": 1, "max_size": 3, "desired_size": 2}
    instance_types:
      description: Instance types.
      type: list
      elements: str
    capacity_type:
      description: C(ON_DEMAND) or C(SPOT).
      type: str
    ami_type:
      description: AMI type.
      type: str
    labels:
      description: Kubernetes labels.
      type: dict
    taints:
      description: Kubernetes taints (C(key), C(value), C(effect)).
      type: list
      elements: dict
    node_role_arn:
      description: The node role.
      type: str
    subnets:
      description: Subnet ids.
      type: list
      elements: str
    replaced_from:
      description: Node groups this run deleted because this one replaced them.
      type: list
      elements: str
conditions:
  description:
    - CAPA's conditions, each C(status) and C(reason) - C(EKSNodegroupReady) and, when present,
      C(IAMNodegroupRolesReady).
  returned: always
  type: dict
  sample: {"EKSNodegroupReady": {"status": true, "reason": ""}, "IAMNodegroupRolesReady": {"status": true}}
plan:
  description: The mutating AWS calls the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "eks:CreateNodegroup", "resource": "md-0-3f9a", "reason": "replaces md-0: instance_types changed"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"eks:DescribeCluster": 1, "eks:ListNodegroups": 1, "eks:DescribeNodegroup": 1}
diff:
  description: The node group before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_nodegroup import (
    NodegroupTier,
    module_argument_spec,
)


def main():
    run_tier(
        module_argument_spec(),
        tier=NodegroupTier(),
        result_key=None,
    )


if __name__ == "__main__":
    main()
