#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_eks_cluster
short_description: Reconcile an EKS control plane as Cluster API Provider AWS's AWSManagedControlPlane does
version_added: 0.1.0
description:
  - >-
    Creates the EKS cluster I(name) with its control-plane IAM role, subnets, the C(node-eks-additional) security
    group, endpoint access, control-plane logging, KMS secrets encryption, authentication mode and tags, and waits
    until it is C(ACTIVE). Then, in CAPA's order, its addons, the IAM OIDC provider for IRSA, the aws-auth
    mappings and access entries, and two kubeconfigs.
  - >-
    Upgrades go one minor version at a time, as EKS requires, each waited for before the next (1.29 to 1.31 is
    two C(UpdateClusterVersion) requests). A downgrade is refused before any request. Endpoint access, logging
    and authentication mode are changed with C(UpdateClusterConfig), one update at a time. Encryption can be
    added to a cluster without it; changing or removing it is an error (EKS cannot).
  - >-
    Without I(role_arn) the role I(role_name) (default C(<cluster_name>-iam-service-role)) is created with the
    trust of C(eks.amazonaws.com) and the policy C(AmazonEKSClusterPolicy), tagged
    C(kubernetes.io/cluster/<cluster_name>=owned) plus CAPA's ownership tags, and deleted with the cluster. A role
    of that name without those tags is used as it is.
  - >-
    Addons installed by this module carry the cluster's ownership tag; one dropped from I(addons) is deleted.
    Addons installed otherwise are reported in C(addons.other) and never changed or deleted (CAPA deletes them).
  - >-
    A cluster found without the ownership tag is used as it is - kubeconfigs are written, nothing in AWS changes.
  - >-
    Files go to C(<output_dir>/<cluster_name>/) with mode C(0600) - C(user-kubeconfig) (exec plugin
    C(aws eks get-token)), C(kubeconfig) (an embedded IAM authenticator token) and C(aws-auth.yaml) (the
    C(kube-system/aws-auth) ConfigMap to apply to the cluster, for example with M(kubernetes.core.k8s)).
  - >-
    The token in C(kubeconfig) expires 15 minutes after it is signed, so that file is rewritten on every run
    outside check mode, as CAPA refreshes its kubeconfig secret on every reconcile. It is an output, not state -
    rewriting it never makes the run C(changed). The token never appears in the result or logs.
  - >-
    A steady run reads C(DescribeCluster), C(GetRole) and C(ListAttachedRolePolicies) (the role when the
    cluster owns it), C(ListAddons) and one C(DescribeAddon) per installed addon (EKS has no batch describe),
    C(ListOpenIDConnectProviders) and C(GetOpenIDConnectProvider) with I(associate_oidc_provider), and
    C(ListAccessEntries) when the authentication mode uses access entries.
  - >-
    With I(wait=false) a new cluster's creation is asked and nothing that needs it ACTIVE (addons, OIDC provider,
    aws-auth or access entries, kubeconfigs) is tried (C(conditions.EKSControlPlaneReady.reason) is
    C(EKSControlPlaneCreating)); a run with I(wait) waits for it and does the rest.
  - >-
    C(state=absent) refuses while node groups or Fargate profiles remain (naming them), then deletes the cluster,
    waits until it is gone, and deletes the owned OIDC provider, the owned role and the files. With I(wait=false) it
    asks the deletion and keeps the rest (C(conditions.EKSControlPlaneReady.reason) is C(Deleting)); a run with
    I(wait) deletes them once the cluster is gone. The C(cluster) role deletes a cluster's control plane that way -
    asked as soon as its node groups are gone, the network's egress released while it goes, then waited for.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  wait_timeout:
    description:
      - Seconds the whole run may spend waiting, shared by every wait of the run.
      - Sized for EKS (AWS documents 10 to 15 minutes to create a cluster, and about as long for each minor version of
        an upgrade). The cluster spec's C(wait_timeout) or C(module_defaults) set another.
      - While it waits the module writes where it stands every 30 seconds to its log, and the last lines to
        C(progress) in its result.
    type: int
    default: 1800
  name:
    description:
      - EKS cluster name. CAPA generates C(<namespace>_<name>); without namespaces, the default is I(cluster_name).
      - It cannot change once the cluster exists.
    type: str
  version:
    description:
      - Kubernetes version C(major.minor), for example C(1.31). Omitted, EKS picks its default on create and the
        version is not managed.
    type: str
  role_arn:
    description: ARN of an existing control-plane role to use as it is (never changed or deleted).
    type: str
  role_name:
    description:
      - Name of the control-plane role to create and own when I(role_arn) is not given.
      - Defaults to C(<cluster_name>-iam-service-role).
    type: str
  subnets:
    description:
      - Subnets of the cluster, at least two in two availability zones; required with I(state=present).
      - Either ids or the C(subnets) list M(clusterapi.aws.capa_subnet) returns (dicts with I(id),
        I(availability_zone), I(is_public); other keys are ignored).
    type: list
    elements: raw
    default: []
  restrict_private_subnets:
    description: Give EKS only the private subnets (those whose I(is_public) is false).
    type: bool
    default: false
  security_group_ids:
    description:
      - Additional security groups of the control-plane network interfaces, normally C(node-eks-additional)
        from M(clusterapi.aws.capa_security_group) with I(kind=eks). Set at create time.
    type: list
    elements: str
    default: []
  endpoint_access:
    description: Who can reach the Kubernetes API endpoint.
    type: dict
    default: {}
    suboptions:
      public:
        description: Endpoint reachable from the internet (from I(public_cidrs)).
        type: bool
        default: true
      private:
        description: Endpoint reachable from inside the VPC.
        type: bool
        default: false
      public_cidrs:
        description: CIDR blocks allowed to reach the public endpoint.
        type: list
        elements: str
        default: ['0.0.0.0/0']
  logging:
    description: Control-plane log types sent to CloudWatch Logs.
    type: dict
    default: {}
    suboptions:
      api_server:
        description: API server logs (C(api)).
        type: bool
        default: false
      audit:
        description: Audit logs.
        type: bool
        default: false
      authenticator:
        description: Authenticator logs.
        type: bool
        default: false
      controller_manager:
        description: Controller manager logs (C(controllerManager)).
        type: bool
        default: false
      scheduler:
        description: Scheduler logs.
        type: bool
        default: false
  encryption_config:
    description:
      - KMS envelope encryption of Kubernetes resources. Can be added to an existing cluster; once set it can be
        neither changed nor removed.
      - Give the key as AWS stores it (its ARN) to keep runs idempotent.
    type: dict
    suboptions:
      provider:
        description: KMS key ARN (or alias).
        type: str
      resources:
        description: Resources to encrypt.
        type: list
        elements: str
        default: [secrets]
  access_config:
    description: How IAM principals authenticate to the cluster.
    type: dict
    default: {}
    suboptions:
      authentication_mode:
        description:
          - C(CONFIG_MAP) (the aws-auth ConfigMap), C(API) (access entries) or C(API_AND_CONFIG_MAP).
          - EKS only moves from C(CONFIG_MAP) towards C(API); going back is refused.
        type: str
        choices: [CONFIG_MAP, API, API_AND_CONFIG_MAP]
        default: CONFIG_MAP
      bootstrap_cluster_creator_admin_permissions:
        description: Give the creating principal cluster admin rights (create time only).
        type: bool
        default: true
  addons:
    description:
      - EKS addons to install and keep as specified.
      - Not given, addons are not managed (no request is made for them). Given, addons this module installed that
        the list no longer names are deleted (an empty list deletes all of them).
    type: list
    elements: dict
    suboptions:
      name:
        description: Addon name, for example C(vpc-cni), C(coredns), C(kube-proxy).
        type: str
        required: true
      version:
        description: Addon version; omitted, EKS picks the default and the version is not managed.
        type: str
      configuration:
        description: Addon configuration values as a JSON string.
        type: str
      service_account_role_arn:
        description: IAM role for the addon's service account (IRSA).
        type: str
      conflict_resolution:
        description: How EKS resolves conflicts with fields changed in the cluster.
        type: str
        choices: [overwrite, none, preserve]
        default: overwrite
  associate_oidc_provider:
    description:
      - Create and own the IAM OIDC provider of the cluster's issuer (client id C(sts.amazonaws.com)) for IAM
        roles for service accounts. It is deleted with the cluster.
    type: bool
    default: false
  oidc_thumbprint:
    description:
      - SHA-1 (40 hex digits) of the issuer's root CA certificate. Omitted, it is read from the issuer's TLS
        chain when the provider is created (needs network access to the issuer).
      - Given, an owned provider's thumbprint is kept equal to it.
    type: str
  iam_authenticator:
    description: IAM principals mapped to Kubernetes users and groups.
    type: dict
    default: {}
    suboptions:
      map_roles:
        description:
          - Roles for C(mapRoles) of aws-auth and, when the authentication mode allows, access entries
            (type C(STANDARD); C(system:) groups are left out of access entries, as EKS refuses them).
          - aws-auth gets each role's ARN without its IAM path, node roles' too (the authenticator matches the
            role a session assumed, whose ARN has no path); an access entry gets the ARN as given.
        type: list
        elements: dict
        default: []
        suboptions:
          rolearn:
            description: Role ARN.
            type: str
            required: true
          username:
            description: Kubernetes user name.
            type: str
          groups:
            description: Kubernetes groups.
            type: list
            elements: str
            default: []
          policy_arn:
            description: EKS access policy associated (cluster scope) with the role's access entry.
            type: str
      map_users:
        description: Users for C(mapUsers) of aws-auth.
        type: list
        elements: dict
        default: []
        suboptions:
          userarn:
            description: User ARN.
            type: str
            required: true
          username:
            description: Kubernetes user name.
            type: str
          groups:
            description: Kubernetes groups.
            type: list
            elements: str
            default: []
          policy_arn:
            description: Not used for users (access entries are made for roles); accepted for symmetry.
            type: str
  node_role_arns:
    description:
      - Node IAM roles (managed node groups, self-managed nodes). They get the node mapping in aws-auth
        (C(system:node:{{EC2PrivateDNSName}}), groups C(system:bootstrappers) and C(system:nodes)) and, when the
        authentication mode allows, an C(EC2_LINUX) access entry.
    type: list
    elements: str
    default: []
  node_instance_profiles:
    description:
      - Instance profiles of the cluster's self-managed nodes (machine pools). The role named like each profile
        gets the node mapping, as a role of I(node_role_arns) does; this is how CAPA maps the instance profiles of
        an EKS cluster's AWSMachinePools (C(clusterawsadm) and C(playbooks/iam.yml) name a profile and its role
        alike). Without it, nodeadm on those nodes authenticates as a role the cluster does not know and the nodes
        never join.
      - Each role is read with C(iam:GetRole); a missing one is an error before any change.
    type: list
    elements: str
    default: []
  output_dir:
    description: Directory of the cluster outputs; files go to C(<output_dir>/<cluster_name>/).
    type: path
    default: .capa
notes:
  - Access entries and aws-auth mappings are append-only, as in CAPA - a mapping dropped from the spec is removed
    from C(aws-auth.yaml) but an access entry once made stays until the cluster is deleted.
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
- name: EKS control plane on the cluster network
  clusterapi.aws.capa_eks_cluster:
    cluster_name: demo
    version: "1.31"
    subnets: "{{ network_subnets.subnets }}"
    security_group_ids: ["{{ network_sgs.security_groups['node-eks-additional'].id }}"]
    endpoint_access:
      public: true
      private: true
      public_cidrs: [203.0.113.0/24]
    logging:
      api_server: true
      audit: true
    addons:
      - name: vpc-cni
      - name: coredns
        configuration: '{"replicaCount": 3}'
    associate_oidc_provider: true
    node_role_arns: [arn:aws:iam::123456789012:role/demo-nodegroup-iam-service-role]
  register: eks

- name: Access entries with an admin role
  clusterapi.aws.capa_eks_cluster:
    cluster_name: demo
    subnets: "{{ network_subnets.subnets }}"
    access_config:
      authentication_mode: API_AND_CONFIG_MAP
    iam_authenticator:
      map_roles:
        - rolearn: arn:aws:iam::123456789012:role/platform-admins
          username: admin
          policy_arn: arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy

- name: Delete the control plane (after its node groups)
  clusterapi.aws.capa_eks_cluster:
    cluster_name: demo
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
  sample: ["95s: waiting for EKS cluster demo-eks to be ACTIVE (CREATING): 1m30s waited, up to 28m25s left"]
cluster:
  description: The EKS cluster after the run (in check mode, as it would be); C(null) after deletion.
  returned: always
  type: dict
  contains:
    name:
      description: EKS cluster name.
      type: str
      sample: demo
    arn:
      description: Cluster ARN; C(planned:eks:<name>) in check mode when it would be created.
      type: str
    version:
      description: Kubernetes version.
      type: str
      sample: "1.31"
    status:
      description: EKS status (C(CREATING), C(ACTIVE), C(UPDATING) ...).
      type: str
      sample: ACTIVE
    endpoint:
      description: API server URL.
      type: str
    certificate_authority_data:
      description: Base64 PEM of the cluster CA (public).
      type: str
    role_arn:
      description: Control-plane role.
      type: str
    security_group_id:
      description: The security group EKS created for the cluster.
      type: str
    subnet_ids:
      description: Subnets of the cluster.
      type: list
      elements: str
    security_group_ids:
      description: Additional security groups.
      type: list
      elements: str
    endpoint_access:
      description: I(public), I(private), I(public_cidrs).
      type: dict
    logging:
      description: Log type option name to enabled.
      type: dict
    encryption:
      description: I(provider) and I(resources), or C(null).
      type: dict
    authentication_mode:
      description: The authentication mode.
      type: str
    oidc:
      description:
        - I(issuer); with I(associate_oidc_provider) also I(provider_arn) and I(trust_policy_template), a trust
          policy for IRSA roles with C(${SERVICE_ACCOUNT_NAMESPACE}) and C(${SERVICE_ACCOUNT_NAME}) to fill in.
      type: dict
    tags:
      description: Tags of the cluster.
      type: dict
addons:
  description: C(installed) - addons installed by this module; C(other) - addons installed otherwise (left alone).
  returned: always
  type: dict
  sample: {"installed": ["coredns", "vpc-cni"], "other": []}
kubeconfig:
  description:
    - C(path) of the token kubeconfig and C(user_kubeconfig) path of the exec kubeconfig (both C(null) while the
      cluster has no endpoint).
  returned: always
  type: dict
  sample: {"path": "/home/me/.capa/demo/kubeconfig", "user_kubeconfig": "/home/me/.capa/demo/user-kubeconfig"}
aws_auth:
  description: Path of the aws-auth ConfigMap manifest, or C(null) when there are no mappings or the mode is C(API).
  returned: always
  type: str
conditions:
  description:
    - CAPA's conditions C(IAMControlPlaneRolesReady), C(EKSControlPlaneReady), C(EKSAddonsConfigured),
      C(IAMAuthenticatorConfigured), each with I(status), I(reason), I(message).
  returned: always
  type: dict
plan:
  description: The mutating AWS calls (and file writes) the run made, or in check mode would make, in order.
  returned: always
  type: list
  elements: dict
  sample: [{"call": "eks:CreateCluster", "resource": "demo", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"eks:DescribeCluster": 1, "iam:GetRole": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster import EksClusterTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=EksClusterTier(),
        result_key=None,
        mutually_exclusive=[("role_arn", "role_name")],
    )


if __name__ == "__main__":
    main()
