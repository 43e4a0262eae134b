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
        description: Base OS in the looked-up image name.
        type: str
        default: ubuntu-24.04
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
