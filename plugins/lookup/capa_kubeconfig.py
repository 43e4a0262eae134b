# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); plugins are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible plugins usually are.

DOCUMENTATION = r"""
name: capa_kubeconfig
short_description: A kubeconfig of a self-managed or EKS cluster, built in memory for the job
version_added: 0.1.0
description:
  - Returns a kubeconfig, as a dictionary that the C(kubeconfig) option of the kubernetes.core modules
    (M(kubernetes.core.k8s_info), M(kubernetes.core.k8s) ...) takes as it is, for each cluster name given.
    Nothing is written to disk and nothing needs to be installed where it is used (no C(aws) CLI, no C(kubectl)),
    so this is how a job that keeps no files (AWX, an execution environment) reaches a cluster.
  - B(Self-managed) clusters (M(clusterapi.aws.capa_kubeadm)) - reads the cluster PKI from Secrets Manager (one
    C(GetSecretValue) request) and mints a short-lived C(kubernetes-admin) client certificate (group
    C(system:masters)) signed by the cluster CA. Each lookup mints a new certificate, valid I(validity_minutes).
  - B(EKS) clusters (M(clusterapi.aws.capa_eks_cluster)) - reads the endpoint and CA with C(DescribeCluster) and
    signs a bearer token with the lookup's credentials, as C(aws eks get-token) and aws-iam-authenticator do (a
    presigned STS C(GetCallerIdentity) URL for that cluster; signing makes no request). EKS accepts the token for
    15 minutes; the IAM identity must have access to the cluster (its creator, C(aws-auth) or an access entry).
  - Credentials are amazon.aws's (options, or the usual AWS environment variables and profiles). With I(identity)
    the lookup first assumes the role the cluster was built with (as the modules' I(identity) option does), so a
    cluster in another account is reached with that account's secret, EKS cluster and identity.
  - The kubeconfig holds a private key or a token. kubernetes.core never shows its I(kubeconfig); anything else
    that shows it must have C(no_log), and a copy written to a file must have mode C(0600).
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  _terms:
    description:
      - Cluster names. For a self-managed cluster the I(cluster_name) given to M(clusterapi.aws.capa_kubeadm); for
        an EKS cluster its EKS name (the I(name) of M(clusterapi.aws.capa_eks_cluster), by default its
        I(cluster_name)).
    required: true
    type: list
    elements: str
  kind:
    description:
      - What kind of cluster the names are.
      - V(auto) - self-managed when I(host) is given; otherwise C(DescribeCluster) decides (found - EKS, not found -
        an error asking for I(host)).
    type: str
    choices: [auto, self-managed, eks]
    default: auto
  host:
    description:
      - Self-managed clusters only - the control-plane endpoint (the load balancer's DNS name, or the
        C(control_plane_endpoint) host), for the kubeconfig's server. Required for a self-managed cluster.
    type: str
  port:
    description: Self-managed clusters only - the API server port.
    type: int
    default: 6443
  validity_minutes:
    description:
      - Self-managed clusters only - how long the client certificate is valid (never past the cluster CA), between
        5 minutes and 7 days.
    type: int
    default: 60
  region:
    description:
      - The AWS region of the cluster.
    type: str
    aliases: [aws_region]
    env:
      - name: AWS_REGION
      - name: AWS_DEFAULT_REGION
  endpoint_url:
    description:
      - URL to connect to instead of the default AWS endpoints, for example a test server.
    type: str
    aliases: [aws_endpoint_url]
    env:
      - name: AWS_ENDPOINT_URL
      - name: AWS_URL
extends_documentation_fragment:
  - amazon.aws.common.plugins
  - clusterapi.aws.common.identity
notes:
  - I(identity) is the role the cluster was built with (the modules' I(identity) option); the EKS token is signed with
    the role's credentials.
  - A self-managed cluster's server certificate is checked against the cluster CA, as in the kubeconfig
    M(clusterapi.aws.capa_kubeadm) writes; I(host) must be a name the API server certificate carries (the load
    balancer's DNS name is one). An EKS cluster's is checked against the CA EKS reports.
  - With several names, C(query) (or C(wantlist=true)) returns the list of kubeconfigs; C(lookup) with one name
    returns the kubeconfig itself, as the C(kubeconfig) option of the kubernetes.core modules wants it.
seealso:
  - module: clusterapi.aws.capa_kubeadm
  - module: clusterapi.aws.capa_eks_cluster
  - module: kubernetes.core.k8s_info
"""

EXAMPLES = r"""
- name: The nodes of self-managed cluster demo, as its admin
  kubernetes.core.k8s_info:
    kind: Node
    kubeconfig: "{{ lookup('clusterapi.aws.capa_kubeconfig', 'demo', host=control_plane_lb.dns_name) }}"

- name: The namespaces of EKS cluster demo-eks, with a token of the job's credentials (no aws CLI needed)
  kubernetes.core.k8s_info:
    kind: Namespace
    kubeconfig: "{{ lookup('clusterapi.aws.capa_kubeconfig', 'demo-eks', kind='eks', region='eu-west-1') }}"

- name: A cluster built in another account, reached through the role it was built with
  kubernetes.core.k8s_info:
    kind: Node
    kubeconfig: "{{ lookup('clusterapi.aws.capa_kubeconfig', 'team-a', host=team_a_endpoint, identity=team_a) }}"
  vars:
    team_a:
      role_arn: arn:aws:iam::111111111111:role/capa-team-a
      external_id: "{{ team_a_external_id }}"

- name: A kubeconfig file valid for ten minutes, for tools that read files
  ansible.builtin.copy:
    content: "{{ lookup('clusterapi.aws.capa_kubeconfig', 'demo', host=api_host, validity_minutes=10) | to_nice_yaml }}"
    dest: "{{ lookup('env', 'HOME') }}/.kube/demo"
    mode: "0600"
  no_log: true
"""

RETURN = r"""
_raw:
  description:
    - One kubeconfig per cluster name, in the order given - C(apiVersion) C(v1), C(kind) C(Config), one entry each in
      C(clusters), C(users) and C(contexts), and C(current-context). A self-managed cluster's user holds
      C(client-certificate-data) and C(client-key-data), an EKS cluster's a C(token).
  type: list
  elements: dict
"""


import datetime  # noqa: E402  (plugins put their documentation first)
import os  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: E402

try:
    from ansible_collections.amazon.aws.plugins.plugin_utils.botocore import get_aws_connection_info
    from ansible_collections.amazon.aws.plugins.plugin_utils.lookup import AWSLookupBase
    from ansible_collections.clusterapi.aws.plugins.module_utils.capa import check_identity, identity_argument_spec
    from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.job_kubeconfig import (
        KubeconfigRequest,
        check_request,
        job_kubeconfig,
    )
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import (
        AwsSession,
        IdentityRefused,
        with_legacy_session_token,
    )
    from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.pki import HAS_CRYPTOGRAPHY

    HAS_BOTO3 = True
except ImportError:
    from ansible.plugins.lookup import LookupBase as AWSLookupBase

    HAS_BOTO3 = False
    HAS_CRYPTOGRAPHY = False

try:
    import botocore.exceptions
except ImportError:
    HAS_BOTO3 = False

PREFIX = "capa_kubeconfig"


class LookupModule(AWSLookupBase):
    def run(self, terms, variables=None, **kwargs):
        if not HAS_BOTO3:
            raise AnsibleLookupError(f"{PREFIX}: the lookup needs amazon.aws, boto3 and botocore")
        if not HAS_CRYPTOGRAPHY:
            raise AnsibleLookupError(f"{PREFIX}: the lookup needs the 'cryptography' package")
        super().run(terms, variables, **kwargs)
        # Every option is checked before the first request: a wrong one costs no AssumeRole, no read.
        requests = [self._request(str(term)) for term in terms]
        identity = self._identity()
        region, endpoint_url, connect = get_aws_connection_info(self)
        if not region:
            raise AnsibleLookupError(f"{PREFIX}: no region (option region, AWS_REGION or AWS_DEFAULT_REGION)")
        connect = with_legacy_session_token(connect, os.environ)
        return [self._kubeconfig(AwsSession(region, endpoint_url, connect), request, identity) for request in requests]

    def _request(self, cluster):
        request = KubeconfigRequest(
            cluster=cluster,
            kind=self.get_option("kind"),
            host=self.get_option("host") or None,
            port=self.get_option("port"),
            validity=datetime.timedelta(minutes=self.get_option("validity_minutes")),
        )
        try:
            check_request(request)
        except SpecError as e:
            raise AnsibleLookupError(f"{PREFIX}: {e.field}: {e.reason}") from e
        return request

    def _identity(self):
        """The ``identity`` option as the modules' argument spec reads it (defaults filled in), or ``None``."""
        given = self.get_option("identity")
        if not given:
            return None
        result = ArgumentSpecValidator({"identity": {"type": "dict", "options": identity_argument_spec()}}).validate(
            {"identity": given}
        )
        if result.error_messages:
            raise AnsibleLookupError(f"{PREFIX}: identity: {'; '.join(result.error_messages)}")
        identity = result.validated_parameters["identity"]
        try:
            check_identity(identity)
        except SpecError as e:
            raise AnsibleLookupError(f"{PREFIX}: {e.field}: {e.reason}") from e
        return identity

    def _kubeconfig(self, session, request, identity):
        try:
            if identity:
                # One session per cluster, named after it, as a module run of that cluster names its session.
                session.assume(identity, default_session_name=f"capa-{request.cluster}"[:64])
            # A read-only context: nothing this lookup does is a change.
            ctx = Context(session=session, cluster=request.cluster, check_mode=True)
            return job_kubeconfig(ctx, request)
        except (ReconcileError, IdentityRefused) as e:
            raise AnsibleLookupError(f"{PREFIX}: {e}") from e
        except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
            raise AnsibleLookupError(f"{PREFIX}: AWS request failed: {e}") from e
