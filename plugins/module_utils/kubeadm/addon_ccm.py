# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the AWS cloud controller manager addon, as the collection applies it (pinned per Kubernetes minor).

Nodes of a kubeadm cluster with ``cloud-provider: external`` (what the collection's bootstrap data sets) register
with the taint ``node.cloudprovider.kubernetes.io/uninitialized`` and no ``spec.providerID`` until a cloud
controller manager initialises them: it sets ``providerID: aws:///<zone>/<instance id>`` (how Cluster API matches
a Node to its machine), the zone/region/instance-type labels and addresses, removes the taint, and deletes the Node
of a terminated instance. Without it no workload is ever scheduled.

Written for this collection from the component's documented needs: a service account, its cluster role (Nodes,
node status, Services for load balancers, events, leases for leader election, service account tokens for the
per-controller credentials), and a DaemonSet on the control-plane nodes on the host network, where the instance
profile of the control plane (clusterawsadm's ``control-plane`` role) gives it AWS credentials.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "kube-system"
NAME = "aws-cloud-controller-manager"
SERVICE_ACCOUNT = "cloud-controller-manager"
IMAGE = "registry.k8s.io/provider-aws/cloud-controller-manager"
# One CCM release line per Kubernetes minor (the CCM follows the Kubernetes version skew policy).
RELEASES = {"1.29": "v1.29.0", "1.30": "v1.30.0", "1.31": "v1.31.0", "1.32": "v1.32.0", "1.33": "v1.33.0"}
DEFAULT_RELEASE = RELEASES["1.31"]


def release_for(kubernetes_version: str) -> str:
    minor = ".".join(kubernetes_version.lstrip("v").split(".")[:2])
    return RELEASES.get(minor, DEFAULT_RELEASE)


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def manifests(kubernetes_version: str, image: str | None = None) -> list[dict[str, Any]]:
    """The objects of the addon, in apply order."""
    labels = {"k8s-app": NAME, "app.kubernetes.io/managed-by": "clusterapi.aws"}
    role = "system:cloud-controller-manager"
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE, "labels": labels},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": labels},
            "rules": [
                _rule([""], ["events"], ["create", "patch", "update"]),
                _rule([""], ["nodes"], ["*"]),
                _rule([""], ["nodes/status"], ["patch"]),
                _rule([""], ["services"], ["list", "patch", "update", "watch"]),
                _rule([""], ["services/status"], ["list", "patch", "update", "watch"]),
                _rule([""], ["serviceaccounts"], ["create", "get"]),
                _rule([""], ["serviceaccounts/token"], ["create"]),
                _rule([""], ["persistentvolumes"], ["get", "list", "update", "watch"]),
                _rule([""], ["endpoints"], ["create", "get", "list", "watch", "update"]),
                _rule([""], ["configmaps"], ["get", "list", "watch"]),
                _rule(["coordination.k8s.io"], ["leases"], ["create", "get", "list", "watch", "update"]),
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
        },
        {
            # Lets it read the API server's client-CA configuration (delegated authentication of its own server).
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{SERVICE_ACCOUNT}:apiserver-authentication-reader", "namespace": NAMESPACE},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "selector": {"matchLabels": {"k8s-app": NAME}},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
                        # It must run before any Node is initialised - on a tainted, not yet Ready control plane.
                        "tolerations": [
                            {
                                "key": "node.cloudprovider.kubernetes.io/uninitialized",
                                "value": "true",
                                "effect": "NoSchedule",
                            },
                            {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                            {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                        ],
                        "hostNetwork": True,
                        "priorityClassName": "system-node-critical",
                        "serviceAccountName": SERVICE_ACCOUNT,
                        "securityContext": {"runAsUser": 65534},
                        "containers": [
                            {
                                "name": "cloud-controller-manager",
                                "image": image or f"{IMAGE}:{release_for(kubernetes_version)}",
                                "args": [
                                    "--v=2",
                                    "--cloud-provider=aws",
                                    "--use-service-account-credentials=true",
                                    # The VPC routes pods through the CNI (Calico's IP-in-IP), not cloud routes.
                                    "--configure-cloud-routes=false",
                                ],
                                "resources": {"requests": {"cpu": "200m"}},
                            }
                        ],
                    },
                },
            },
        },
    ]
