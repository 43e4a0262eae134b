#!/usr/bin/python
# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0); modules are also offered under
# the GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt), as Ansible modules usually are.

DOCUMENTATION = r"""
module: capa_addons
short_description: Apply the addons a self-managed cluster needs before any node is Ready (CNI, AWS cloud controller)
version_added: 0.2.0
description:
  - Applies, once the cluster's API server answers after C(kubeadm init), what Cluster API users apply with a
    ClusterResourceSet - the CNI (Calico by default, matching the security groups of C(cni_ingress_rules=calico)
    and the cluster's pod CIDR), the AWS cloud controller manager (which sets each Node's C(spec.providerID) and
    removes the C(node.cloudprovider.kubernetes.io/uninitialized) taint), and I(additional_manifests).
  - Manifests ship with the collection, pinned by version; nothing is downloaded at run time. Objects are applied
    with server-side apply (field manager C(clusterapi.aws)), in order, each as a C(k8s:Apply) entry of the plan.
  - What was applied is recorded per addon, with the hash of its manifests, in the ConfigMap
    C(kube-system/clusterapi-aws-addons); a run that changes nothing reads that one object and writes none.
  - The API server is reached at I(endpoint) (or I(kubernetes_api.server)) with a client certificate minted for the
    run from the cluster CA in the PKI secret of M(clusterapi.aws.capa_kubeadm); it is never written to disk
    unencrypted.
  - After it applied the CNI (and with I(wait)), it waits until no Node's kubelet reports its network plugin not
    ready (Ready=False with C(NetworkPluginNotReady)) - one Node list per poll - so the first control-plane machine's
    Node serves before the run goes on and the status the run ends with says so. A CNI that does not come up within
    I(wait_timeout) is a warning, not a failure.
  - C(state=absent) does nothing - addons live in the cluster and go with it.
author:
  - clusterapi.aws maintainers (@clusterapi)
options:
  kubernetes_version:
    description: Kubernetes version of the cluster; picks the cloud controller manager's release line.
    type: str
    required: true
  endpoint:
    description: The control-plane endpoint (the load balancer), as M(clusterapi.aws.capa_elb) returns it.
    type: dict
    required: true
    suboptions:
      host:
        description: DNS name or address of the endpoint.
        type: str
        required: true
      port:
        description: Port of the endpoint.
        type: int
        default: 6443
  cni:
    description:
      - The CNI to apply - C(calico) (Calico 3.29, BGP with IP-in-IP, its pool the cluster's pod CIDR) or C(none).
    type: str
    choices: [calico, none]
    default: calico
  cloud_controller_manager:
    description: The AWS cloud controller manager (a DaemonSet on the control-plane nodes).
    type: dict
    default: {}
    suboptions:
      enabled:
        description: Apply it.
        type: bool
        default: true
      image:
        description: Its image (default the collection's pin for the cluster's Kubernetes minor).
        type: str
  additional_manifests:
    description:
      - More Kubernetes objects to apply after the collection's addons, as one addon (for example Calico's own
        release manifest with I(cni=none), loaded with C(lookup('file', ...) | from_yaml_all)).
    type: list
    elements: dict
    default: []
  strategy:
    description:
      - C(ApplyOnce) (as Cluster API's ClusterResourceSet by default) - apply each addon once and never again.
        C(Reconcile) - apply an addon again whenever its manifests change.
    type: str
    choices: [ApplyOnce, Reconcile]
    default: ApplyOnce
notes:
  - Without an AWS cloud controller manager, Nodes of C(cloud-provider=external) kubelets stay tainted and have no
    providerID; without a CNI they never become Ready.
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
- name: Calico and the AWS cloud controller manager, once the first control-plane machine is up
  clusterapi.aws.capa_addons:
    cluster_name: demo
    kubernetes_version: v1.31.2
    endpoint: "{{ control_plane_lb.endpoint }}"

- name: A private cluster reached through a local tunnel, with Calico's own release manifest
  clusterapi.aws.capa_addons:
    cluster_name: private
    kubernetes_version: v1.31.2
    endpoint: {host: internal-private-apiserver.example.internal, port: 6443}
    kubernetes_api: {mode: required, server: "https://127.0.0.1:16443"}
    cni: none
    additional_manifests: "{{ lookup('file', 'calico-v3.29.1.yaml') | from_yaml_all | list }}"
"""

RETURN = r"""
addons:
  description: Each addon - the hash of its manifests, its object count, the hash recorded in the cluster, and whether
    this run applied (or in check mode would apply) it.
  returned: when state is present
  type: dict
  sample:
    cni-calico: {"digest": "3f9a1c0b2d4e5f60", "objects": 31, "recorded": "3f9a1c0b2d4e5f60", "applied": false}
kubernetes_api:
  description: Whether the API server answered, and why not.
  returned: when state is present
  type: dict
  sample: {"reachable": true, "reason": null}
plan:
  description: The writes the run made, or in check mode would make, in order (C(k8s:Apply) per object).
  returned: always
  type: list
  elements: dict
  sample:
    - {"call": "k8s:Apply", "resource": "DaemonSet kube-system/calico-node", "reason": "addon cni-calico: new"}
api_calls:
  description: Number of requests the run made, per C(service:Operation) (C(k8s:...) for the Kubernetes API).
  returned: always
  type: dict
  sample: {"secretsmanager:GetSecretValue": 1, "k8s:GetConfigMap": 1}
diff:
  description: The addons before and after the run (with C(--diff)).
  returned: when diff mode is on
  type: dict
"""

from ansible_collections.clusterapi.aws.plugins.module_utils.capa import run_tier
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.addons import AddonsTier, argument_spec


def main():
    run_tier(argument_spec(), tier=AddonsTier(), result_key=None)


if __name__ == "__main__":
    main()
