# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)


class ModuleDocFragment:
    # What every module that launches machines (capa_instance, capa_asg, capa_fleet) takes to describe them;
    # the argument spec is capa.machine_argument_spec().
    DOCUMENTATION = r"""
options:
  subnets:
    description:
      - The cluster's subnets as M(clusterapi.aws.capa_subnet) returns them; each needs C(id),
        C(availability_zone) and C(is_public) (other keys are ignored). Ids may be check-mode placeholders.
    type: list
    elements: dict
    default: []
  kubernetes_version:
    description:
      - Kubernetes version of the machines, e.g. C(v1.31.2). Used by the AMI lookup and by kubeadm bootstrap.
    type: str
  ami:
    description:
      - The machine image, or how to look it up - the newest available HVM image of the instance type's
        architecture.
    type: dict
    default: {}
    suboptions:
      id:
        description: AMI id; no lookup when given.
        type: str
      base_os:
        description:
          - Base OS in the looked-up image name. Default C(ubuntu-24.04); with C(eks) bootstrap, leaving this,
            I(ami.owner) and I(ami.name_format) out picks the EKS-optimised image instead.
        type: str
      owner:
        description:
          - Owner account of the looked-up image. Default CAPA's C(819546954734) (for a bastion, Canonical's
            C(099720109477)).
        type: str
      name_format:
        description:
          - Name pattern of the looked-up image, with the placeholders C({base_os}) and C({k8s_version}) (the version
            without its leading C(v); images named with or without the C(v) are both found). Default
            C(capa-ami-{base_os}-?{k8s_version}-*).
          - CAPA's Go-template spelling with C(.BaseOS) and C(.K8sVersion) in double braces is understood too, but
            Ansible would template the braces - escape it with raw/endraw or use our placeholders.
        type: str
  root_volume:
    description:
      - Root volume. The device name comes from the AMI; the volume is deleted with the instance.
    type: dict
    default: {}
    suboptions:
      size:
        description: Size in GiB (at least the AMI's); default the AMI's size.
        type: int
      type:
        description: EBS volume type.
        type: str
        default: gp3
      encrypted:
        description: Encrypt the volume (safer than CAPA, which leaves it to the AMI).
        type: bool
        default: true
  ssh_key_name:
    description: EC2 key pair of the machines; none when empty.
    type: str
  iam_instance_profile:
    description:
      - Instance profile name (clusterawsadm's are C(control-plane.cluster-api-provider-aws.sigs.k8s.io) and
        C(nodes.cluster-api-provider-aws.sigs.k8s.io)). Machines with bootstrap data need C(GetSecretValue) (or
        C(GetParameter)) on their entries.
    type: str
  security_group_ids:
    description:
      - Security groups of the machines - the role's groups from M(clusterapi.aws.capa_security_group) plus any
        extra ones. Ids may be check-mode placeholders.
    type: list
    elements: str
    default: []
  imds:
    description:
      - Instance metadata service options (IMDSv2 required by default, safer than CAPA; the termination watcher
        speaks IMDSv2).
    type: dict
    default: {}
    suboptions:
      http_tokens:
        description: C(required) means IMDSv2 only.
        type: str
        choices: [required, optional]
        default: required
      http_put_response_hop_limit:
        description: Hop limit of metadata responses (1 to 64).
        type: int
        default: 1
"""

    # The bootstrap option of the pool modules (capa_asg, capa_fleet); the argument spec is
    # capa.pool_bootstrap_argument_spec().
    POOL_BOOTSTRAP = r"""
options:
  bootstrap:
    description:
      - The pool machines' bootstrap data. Whatever the type, the document waits in Secrets Manager or SSM (one set
        of entries per launch template version); the launch template only carries a boot hook that fetches it.
    type: dict
    default: {}
    suboptions:
      type:
        description:
          - C(kubeadm) - a kubeadm worker join rendered from the cluster PKI that M(clusterapi.aws.capa_kubeadm)
            stored.
          - C(eks) - a self-managed node of the EKS cluster I(bootstrap.eks_cluster_name) - a C(#cloud-config) that
            writes a nodeadm C(NodeConfig) (API endpoint, CA, service CIDR, read with one C(DescribeCluster)) and
            runs C(nodeadm init). Unless I(ami) names an image or lookup fields, the image is the EKS-optimised
            Amazon Linux 2023 AMI of I(kubernetes_version) (C(1.31) or C(v1.31.2)) from AWS's public SSM parameter.
            The instance profile's role must be allowed into the cluster (an access entry of type C(EC2_LINUX), or
            an aws-auth mapping).
          - C(raw) - the document in I(bootstrap.data) (the termination watcher is merged into a C(#cloud-config);
            other documents are used as they are).
          - C(none) - no user data.
        type: str
        choices: [kubeadm, eks, raw, none]
        default: kubeadm
      endpoint_host:
        description: Host name of the Kubernetes API endpoint; kubeadm.
        type: str
      endpoint_port:
        description: Port of the Kubernetes API endpoint; kubeadm.
        type: int
        default: 6443
      eks_cluster_name:
        description: The EKS cluster the nodes join; eks. Default - I(cluster_name).
        type: str
      data:
        description: The bootstrap document for C(raw). Never logged or returned.
        type: str
      backend:
        description: Where each launch template version's document waits for the machines.
        type: str
        choices: [secrets-manager, ssm-parameter-store]
        default: secrets-manager
"""
