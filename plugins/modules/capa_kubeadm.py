#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_kubeadm
short_description: Keep a self-managed cluster's kubeadm PKI and admin kubeconfig
version_added: 0.1.0
description:
  - Does what Cluster API's kubeadm bootstrap and control-plane providers do before the first machine boots -
    generates the cluster certificate authorities (cluster, etcd, front proxy; RSA 2048, valid 10 years like
    kubeadm's) and the service-account key pair, and keeps them in one AWS Secrets Manager secret,
    C(clusterapi.aws/<cluster_name>/pki), tagged with the cluster's ownership tags.
  - The secret is created once and rewritten only when I(pki) brings certificates or keys that differ from what it
    holds. Machine modules render each machine's C(kubeadm init) / C(kubeadm join) cloud-init from it.
  - The PKI's public facts (the CA's discovery hash, the CAs' expiry, the CIDRs, the cluster CA certificate's
    digest) are tags of the secret (C(clusterapi.aws/pki-*)), bound to the version of the value they describe
    (C(clusterapi.aws/pki-version)). A run that changes nothing makes one C(ListSecrets) request and reads no value,
    as the tags describe the secret's current version, I(pki) is not given, the CIDRs are the described ones and the
    kubeconfig is good. Otherwise (a first run, I(pki) given, a version someone else wrote, a kubeconfig to write)
    the value is read (one C(GetSecretValue)) and the tags follow it. ListSecrets is eventually consistent - for a
    few minutes after someone else writes a version, a run may still see the one before, and describe it.
  - Writes the admin kubeconfig (user C(kubernetes-admin), group C(system:masters), signed by the cluster CA) to
    C(<output_dir>/<cluster_name>/kubeconfig) with mode C(0600). An existing file is kept while its server, CA and
    names are right and its client certificate has more than 30 days left, so a run that changes nothing mints no
    certificate and reports C(changed=false). With I(output_dir=""), no local file is written.
  - Never returns keys or certificates - only public facts (the CA's discovery hash, expiry dates).
  - C(state=absent) deletes the secret (without recovery window) if the cluster owns it, and the kubeconfig file.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  kubernetes_version:
    description:
      - Kubernetes version of the cluster, like C(v1.31.2). Required with C(state=present).
      - Decides the kubeadm configuration API of the rendered bootstrap data (v1beta4 from 1.31, v1beta3 before).
    type: str
  endpoint:
    description:
      - The control-plane endpoint (the load balancer's DNS name), for the kubeconfig's server. Required with
        C(state=present). In check mode the host may be a C(planned:...) placeholder from another module.
    type: dict
    suboptions:
      host:
        description: DNS name or IP address of the API server endpoint.
        type: str
        required: true
      port:
        description: API server port.
        type: int
        default: 6443
  pki:
    description:
      - Certificate authorities and keys to use instead of generated ones (bring your own). Each certificate comes
        with its key, each key must match its certificate, and certificates must be unexpired CAs; this is checked
        before any AWS request. Pairs not given are kept as stored (or generated).
    type: dict
    suboptions:
      cluster_ca_cert:
        description: PEM certificate of the cluster CA.
        type: str
      cluster_ca_key:
        description: PEM private key of the cluster CA.
        type: str
      etcd_ca_cert:
        description: PEM certificate of the etcd CA.
        type: str
      etcd_ca_key:
        description: PEM private key of the etcd CA.
        type: str
      front_proxy_ca_cert:
        description: PEM certificate of the front-proxy CA.
        type: str
      front_proxy_ca_key:
        description: PEM private key of the front-proxy CA.
        type: str
      service_account_public_key:
        description: PEM public key that verifies service-account tokens.
        type: str
      service_account_private_key:
        description: PEM private key that signs service-account tokens.
        type: str
  output_dir:
    description:
      - Directory of the cluster outputs; the kubeconfig goes to C(<output_dir>/<cluster_name>/kubeconfig).
      - C("") writes, reads and deletes no local file at all (for AWX and other controllers whose disk does not
        outlive the job); the kubeconfig is then built on demand with the P(clusterapi.aws.capa_kubeconfig#lookup)
        lookup, from the PKI secret.
    type: path
    default: .capa
  service_cidr:
    description: Service network of the cluster, given to kubeadm.
    type: str
    default: 10.96.0.0/12
  pod_cidr:
    description: Pod network of the cluster, given to kubeadm (the CNI's pool).
    type: str
    default: 192.168.0.0/16
notes:
  - The secret holds no bootstrap token. Machines join with tokens that expire, minted for each of them in the
    cluster by M(clusterapi.aws.capa_instance), M(clusterapi.aws.capa_asg) and M(clusterapi.aws.capa_fleet)
    (I(bootstrap.token_ttl)). A secret written by a release before 0.2.0 holds a token that never expires; the next
    run rewrites the secret without it (reason C(bootstrap_token (retired))), and the machine modules delete that
    token from the cluster.
  - The secret name is outside the C(aws.cluster.x-k8s.io/) prefix that node instance profiles may read.
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
- name: Cluster PKI and admin kubeconfig of cluster demo
  clusterapi.aws.capa_kubeadm:
    cluster_name: demo
    kubernetes_version: v1.31.2
    endpoint:
      host: "{{ control_plane_lb.dns_name }}"
  register: kubeadm

- name: Bring your own cluster CA
  clusterapi.aws.capa_kubeadm:
    cluster_name: demo
    kubernetes_version: v1.31.2
    endpoint:
      host: api.demo.example.com
    pki:
      cluster_ca_cert: "{{ lookup('file', 'pki/ca.crt') }}"
      cluster_ca_key: "{{ lookup('file', 'pki/ca.key') }}"

- name: Cluster PKI only, no local file (AWX); the kubeconfig comes from the capa_kubeconfig lookup
  clusterapi.aws.capa_kubeadm:
    cluster_name: demo
    kubernetes_version: v1.31.2
    endpoint:
      host: "{{ control_plane_lb.dns_name }}"
    output_dir: ""

- name: Delete the PKI secret and the kubeconfig
  clusterapi.aws.capa_kubeadm:
    cluster_name: demo
    state: absent
"""

RETURN = r"""
pki:
  description: Public facts about the cluster PKI (never keys, certificates or the token). C(null) after deletion.
  returned: always
  type: dict
  contains:
    secret_name:
      description: Name of the Secrets Manager secret holding the PKI.
      type: str
      sample: clusterapi.aws/demo/pki
    secret_arn:
      description: ARN of the secret; C(planned:secret:<name>) in check mode when it would be created.
      type: str
      sample: arn:aws:secretsmanager:us-east-1:123456789012:secret:clusterapi.aws/demo/pki-AbCdEf
    ca_cert_hash:
      description:
        - kubeadm's discovery hash of the cluster CA (C(--discovery-token-ca-cert-hash)). C(null) in check mode when
          the CA would be generated.
      type: str
      sample: sha256:2b1a0c7fd1e4f0b8a1d2b7c3e9f0a5d6c4b3a2918f7e6d5c4b3a29180f7e6d5c
    cluster_ca_expires:
      description: Expiry of the cluster CA certificate (ISO 8601).
      type: str
      sample: "2035-07-01T10:00:00+00:00"
    etcd_ca_expires:
      description: Expiry of the etcd CA certificate (ISO 8601).
      type: str
      sample: "2035-07-01T10:00:00+00:00"
    front_proxy_ca_expires:
      description: Expiry of the front-proxy CA certificate (ISO 8601).
      type: str
      sample: "2035-07-01T10:00:00+00:00"
    service_cidr:
      description: Service network given to kubeadm.
      type: str
      sample: 10.96.0.0/12
    pod_cidr:
      description: Pod network given to kubeadm.
      type: str
      sample: 192.168.0.0/16
kubeconfig:
  description: The admin kubeconfig file. C(null) after deletion, and when I(output_dir) is empty (no file).
  returned: always
  type: dict
  contains:
    path:
      description: Absolute path of the file (mode 0600).
      type: str
      sample: /home/me/.capa/demo/kubeconfig
    server:
      description: API server URL.
      type: str
      sample: https://demo-apiserver-123.us-east-1.elb.amazonaws.com:6443
    cluster:
      description: Cluster entry name.
      type: str
      sample: demo
    user:
      description: User entry name.
      type: str
      sample: demo-admin
    context:
      description: Context name (the current context).
      type: str
      sample: demo-admin@demo
    client_certificate_expires:
      description: Expiry of the admin client certificate (ISO 8601); C(null) in check mode when it would be written.
      type: str
      sample: "2026-07-01T10:00:00+00:00"
plan:
  description:
    - The mutating calls the run made, or in check mode would make, in order. Writing or deleting the kubeconfig
      file shows as C(file:WriteFile) / C(file:DeleteFile).
  returned: always
  type: list
  elements: dict
  sample: [{"call": "secretsmanager:CreateSecret", "resource": "clusterapi.aws/demo/pki", "reason": "missing"}]
api_calls:
  description: Number of AWS requests the run made, per C(service:Operation).
  returned: always
  type: dict
  sample: {"secretsmanager:ListSecrets": 1}
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.kubeadm import KubeadmTier, module_argument_spec


def main():
    run_tier(
        module_argument_spec(),
        tier=KubeadmTier(),
        result_key=None,
        required_if=[("state", "present", ("kubernetes_version", "endpoint"))],
    )


if __name__ == "__main__":
    main()
