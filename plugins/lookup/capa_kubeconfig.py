# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); plugins are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible plugins usually are.

DOCUMENTATION = r"""
name: capa_kubeconfig
short_description: The admin kubeconfig of a self-managed cluster, built on demand from its PKI secret
version_added: 0.1.0
description:
  - Reads the cluster PKI that M(clusterapi.aws.capa_kubeadm) keeps in Secrets Manager (one C(GetSecretValue)
    request per cluster), mints a short-lived C(kubernetes-admin) client certificate (group C(system:masters))
    signed by the cluster CA, and returns the admin kubeconfig that carries it.
  - The certificate and its key exist only in memory and in what is returned; nothing is written to disk, so this
    is how a controller that keeps no files (AWX, or M(clusterapi.aws.capa_kubeadm) with I(output_dir=""))
    reaches the cluster. Each lookup mints a new certificate.
  - The kubeconfig holds a private key. Keep it out of logs (C(no_log)) and write it only where it is needed, with
    mode C(0600).
  - Fails when the cluster has no PKI secret. Credentials come from the usual AWS environment (C(AWS_PROFILE),
    C(AWS_ACCESS_KEY_ID) ..., C(AWS_ENDPOINT_URL)).
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  _terms:
    description: Cluster names (the I(cluster_name) given to M(clusterapi.aws.capa_kubeadm)).
    required: true
    type: list
    elements: str
  host:
    description:
      - The control-plane endpoint (the load balancer's DNS name, or the C(control_plane_endpoint) host), for the
        kubeconfig's server.
    required: true
    type: str
  port:
    description: API server port.
    type: int
    default: 6443
  validity_minutes:
    description: How long the client certificate is valid (never past the cluster CA), between 5 minutes and 7 days.
    type: int
    default: 60
  region:
    description: Region of the PKI secret; default C(AWS_REGION) or C(AWS_DEFAULT_REGION).
    type: str
  endpoint_url:
    description: AWS endpoint, for example a test server; default C(AWS_ENDPOINT_URL).
    type: str
  profile:
    description: Named AWS profile.
    type: str
notes:
  - The server certificate is checked against the cluster CA, as in the kubeconfig M(clusterapi.aws.capa_kubeadm)
    writes; I(host) must be a name the API server certificate carries (the load balancer's DNS name is one).
seealso:
  - module: clusterapi.aws.capa_kubeadm
"""

EXAMPLES = r"""
- name: Admin kubeconfig of cluster demo, for the tasks of this play only
  ansible.builtin.copy:
    content: "{{ lookup('clusterapi.aws.capa_kubeconfig', 'demo', host=control_plane_lb.dns_name) }}"
    dest: "{{ lookup('env', 'HOME') }}/.kube/demo"
    mode: "0600"
  no_log: true

- name: A kubeconfig valid for ten minutes, handed to kubernetes.core
  kubernetes.core.k8s_info:
    kind: Node
    kubeconfig: "{{ lookup('clusterapi.aws.capa_kubeconfig', 'demo', host=api_host, validity_minutes=10) | from_yaml }}"
  no_log: true
"""

RETURN = r"""
_raw:
  description: One kubeconfig document (YAML text) per cluster name, in the order given.
  type: list
  elements: str
"""


import datetime  # noqa: E402  (plugins put their documentation first)
import os  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

try:
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.validation import check_cluster_name
    from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.admin_kubeconfig import admin_kubeconfig
    from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.pki import HAS_CRYPTOGRAPHY, load_cluster_pki

    HAS_BOTO3 = True
except ImportError:
    HAS_BOTO3 = False
    HAS_CRYPTOGRAPHY = False

try:
    import botocore.exceptions
except ImportError:
    HAS_BOTO3 = False

SHORTEST = 5
LONGEST = 7 * 24 * 60


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if not HAS_BOTO3:
            raise AnsibleLookupError("the capa_kubeconfig lookup needs boto3 and botocore")
        if not HAS_CRYPTOGRAPHY:
            raise AnsibleLookupError("the capa_kubeconfig lookup needs the 'cryptography' package")
        host, port, minutes = self.get_option("host"), self.get_option("port"), self.get_option("validity_minutes")
        if not host:
            raise AnsibleLookupError("capa_kubeconfig: host is required (the control-plane endpoint)")
        if not 1 <= port <= 65535:
            raise AnsibleLookupError(f"capa_kubeconfig: port {port} is not a port number")
        if not SHORTEST <= minutes <= LONGEST:
            raise AnsibleLookupError(
                f"capa_kubeconfig: validity_minutes {minutes} is not between {SHORTEST} and {LONGEST}"
            )
        region = self.get_option("region") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise AnsibleLookupError("capa_kubeconfig: no region (option region, AWS_REGION or AWS_DEFAULT_REGION)")
        endpoint = self.get_option("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")
        session = AwsSession(region, endpoint, {"profile_name": self.get_option("profile")})
        return [
            self._kubeconfig(session, str(cluster), host, port, datetime.timedelta(minutes=minutes))
            for cluster in terms
        ]

    def _kubeconfig(self, session, cluster, host, port, validity):
        try:
            check_cluster_name(cluster, "cluster name")
            # A read-only context: nothing this lookup does is a change.
            ctx = Context(session=session, cluster=cluster, check_mode=True)
            pki = load_cluster_pki(ctx, cluster)
        except SpecError as e:
            raise AnsibleLookupError(f"capa_kubeconfig: {e.field}: {e.reason}") from e
        except ReconcileError as e:
            raise AnsibleLookupError(f"capa_kubeconfig: {e}") from e
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
            raise AnsibleLookupError(f"capa_kubeconfig: AWS request failed: {e}") from e
        return admin_kubeconfig(pki, cluster, host, port, validity)
