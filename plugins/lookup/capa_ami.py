# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); plugins are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible plugins usually are.

DOCUMENTATION = r"""
name: capa_ami
short_description: The AMI a Cluster API machine would boot, for a Kubernetes version
version_added: 0.1.0
description:
  - Looks up, for each Kubernetes version given, the newest available HVM image a machine of the collection would
    use - the same lookup as the machine modules (CAPA's C(imageLookupFormat), C(imageLookupOrg) and
    C(imageLookupBaseOS)) - and returns its id.
  - Fails when no image matches.
  - Credentials come from the usual AWS environment (C(AWS_PROFILE), C(AWS_ACCESS_KEY_ID) ...,
    C(AWS_ENDPOINT_URL)).
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  _terms:
    description: Kubernetes versions, with or without the leading C(v).
    required: true
    type: list
    elements: str
  base_os:
    description: Base OS in the image name.
    type: str
    default: ubuntu-24.04
  architecture:
    description: Image architecture.
    type: str
    choices: [x86_64, arm64]
    default: x86_64
  region:
    description: Region to search; default C(AWS_REGION) or C(AWS_DEFAULT_REGION).
    type: str
  owner:
    description: Account that publishes the images.
    type: str
    default: "819546954734"
  name_format:
    description:
      - Image name format with C({base_os}) and C({k8s_version}); CAPA's Go template placeholders work too.
    type: str
    default: capa-ami-{base_os}-?{k8s_version}-*
  endpoint_url:
    description: AWS endpoint, for example a test server; default C(AWS_ENDPOINT_URL).
    type: str
  profile:
    description: Named AWS profile.
    type: str
"""

EXAMPLES = r"""
- name: The image of the cluster's Kubernetes version
  ansible.builtin.set_fact:
    node_ami: "{{ lookup('clusterapi.aws.capa_ami', 'v1.31.2', region='eu-west-1') }}"

- name: Arm images for two versions
  ansible.builtin.debug:
    msg: "{{ query('clusterapi.aws.capa_ami', 'v1.31.2', 'v1.32.0', architecture='arm64') }}"
"""

RETURN = r"""
_raw:
  description: One image id per Kubernetes version, in the order given.
  type: list
  elements: str
"""


import os  # noqa: E402  (plugins put their documentation first)

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

try:
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
    from ansible_collections.clusterapi.aws.plugins.module_utils.machines.ami import look_up_architecture

    HAS_BOTO3 = True
except ImportError:
    HAS_BOTO3 = False

try:
    import botocore.exceptions
except ImportError:
    HAS_BOTO3 = False


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if not HAS_BOTO3:
            raise AnsibleLookupError("the capa_ami lookup needs boto3 and botocore")
        region = self.get_option("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise AnsibleLookupError("capa_ami: no region (option region, AWS_REGION or AWS_DEFAULT_REGION)")
        endpoint = self.get_option("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")
        session = AwsSession(region, endpoint, {"profile_name": self.get_option("profile")})
        ctx = Context(session=session, cluster="lookup", check_mode=True)
        found = []
        for version in terms:
            try:
                image = look_up_architecture(
                    ctx,
                    self.get_option("architecture"),
                    kubernetes_version=str(version),
                    base_os=self.get_option("base_os"),
                    owner=self.get_option("owner"),
                    name_format=self.get_option("name_format"),
                )
            except ReconcileError as e:
                raise AnsibleLookupError(f"capa_ami: {e}") from e
            except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
                raise AnsibleLookupError(f"capa_ami: AWS request failed: {e}") from e
            found.append(image.id)
        return found
