#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_ami_info
short_description: List the Cluster API machine images per region, base OS, Kubernetes version (clusterawsadm ami list)
version_added: 0.1.0
description:
  - Finds, like C(clusterawsadm ami list), the newest available HVM image per region, base OS, Kubernetes version
    and architecture owned by I(owner) and named C(capa-ami-<base_os>-<version>-*) or
    C(capa-ami-<base_os>-v<version>-*).
  - One C(DescribeImages) request per region covers every base OS, version and architecture.
  - With I(eks_optimized), also reports the EKS-optimised Amazon Linux 2023 image of each version's minor release
    and architecture, read from AWS's public SSM parameters
    C(/aws/service/eks/optimized-ami/<major.minor>/amazon-linux-2023/<arch>/standard/recommended/image_id); these
    entries have the base OS C(eks-al2023).
  - Read-only; never reports C(changed). When nothing matches, I(images) is empty and I(msg) (also a warning)
    says what was searched.
  - I(cluster_name) is only used as the default STS session name when I(identity) is given.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  kubernetes_versions:
    description: Kubernetes versions, with or without the leading C(v) (for example C(v1.31.2)).
    type: list
    elements: str
    required: true
  base_oses:
    description: Base operating systems as CAPA names them in image names.
    type: list
    elements: str
    default: [centos-7, ubuntu-24.04, ubuntu-22.04, amazon-2, flatcar-stable, rhel-8]
  owner:
    description: Account that publishes the images (CAPA's CNCF account by default).
    type: str
    default: "819546954734"
  regions:
    description: Regions to search. Default is the module's I(region).
    type: list
    elements: str
  architectures:
    description: Image architectures.
    type: list
    elements: str
    choices: [x86_64, arm64]
    default: [x86_64]
  eks_optimized:
    description: Also report the EKS-optimised Amazon Linux 2023 images from AWS's public SSM parameters.
    type: bool
    default: false
extends_documentation_fragment:
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
  - clusterapi.aws.common
  - clusterapi.aws.common.identity
  - clusterapi.aws.attributes.info
"""

EXAMPLES = r"""
- name: Newest CAPA images for two Kubernetes versions in two regions
  clusterapi.aws.capa_ami_info:
    cluster_name: demo
    kubernetes_versions: [v1.31.2, v1.32.0]
    base_oses: [ubuntu-24.04]
    regions: [us-east-1, eu-west-1]
  register: amis

- name: Use the newest one
  ansible.builtin.debug:
    msg: "{{ amis.images[0].image_id }}"
"""

RETURN = r"""
images:
  description: The newest image per region, base OS, Kubernetes version and architecture, newest first.
  returned: always
  type: list
  elements: dict
  contains:
    region:
      description: Region of the image.
      type: str
      sample: us-east-1
    base_os:
      description: Base OS from the image name, or C(eks-al2023) for an EKS-optimised image.
      type: str
      sample: ubuntu-24.04
    kubernetes_version:
      description: The requested version the image was built for.
      type: str
      sample: v1.31.2
    architecture:
      description: C(x86_64) or C(arm64).
      type: str
      sample: x86_64
    image_id:
      description: The AMI id.
      type: str
      sample: ami-0a1b2c3d4e5f67890
    name:
      description: The AMI name.
      type: str
      sample: capa-ami-ubuntu-24.04-v1.31.2-1731400000
    creation_date:
      description: When the image was created.
      type: str
      sample: "2024-11-12T08:26:40.000Z"
    owner:
      description: Account that owns the image.
      type: str
      sample: "819546954734"
msg:
  description: What was searched, when nothing was found.
  returned: when no image matched
  type: str
  sample: no image found (owner 819546954734, regions us-east-1, base OS ubuntu-24.04, Kubernetes v1.99.0, ...)
plan:
  description: Always empty - the module changes nothing.
  returned: always
  type: list
  elements: dict
  sample: []
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"ec2:DescribeImages": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.ami_info import AmiInfoTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=AmiInfoTier(),
        result_key=None,
        info=True,
    )


if __name__ == "__main__":
    main()
