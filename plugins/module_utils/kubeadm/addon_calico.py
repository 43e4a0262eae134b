# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the Calico CNI addon, as the collection applies it (Calico 3.29, Kubernetes datastore, BGP + IP-in-IP).

A node of a kubeadm cluster stays ``NotReady`` ("container runtime network not ready") until a CNI is installed.
The default matches the security groups ``capa_security_group`` builds for ``cni_ingress_rules: calico`` (BGP on
TCP 179 and IP-in-IP, protocol 4, between the cluster's machines) and kubeadm's ``podSubnet`` (the pool CIDR):
``calico-node`` on every node (a DaemonSet on the host network that installs the CNI plugin and configuration,
programs routes with BIRD and policy with Felix), ``calico-kube-controllers`` (IPAM garbage collection, node
cleanup), their service accounts and cluster roles, and Calico's resource types.

Written for this collection from Calico's documented components (the manifest install on the Kubernetes API
datastore), not copied from Calico's release manifest: Calico's own resource definitions carry full OpenAPI schemas;
these carry structural schemas that accept any field (``x-kubernetes-preserve-unknown-fields``), which the API
server accepts for Calico's objects alike but does not validate field by field. To run Calico's release manifest
instead, set the cluster's ``addons.cni`` to ``none`` and list the file in ``addons.additional_manifests``.
"""

from __future__ import annotations

import json
from typing import Any

VERSION = "v3.29.1"
REGISTRY = "docker.io/calico"
NAMESPACE = "kube-system"
GROUP = "crd.projectcalico.org"
LABELS = {"app.kubernetes.io/managed-by": "clusterapi.aws", "app.kubernetes.io/part-of": "calico"}

# Calico's resource types: kind, plural, namespaced, with a status subresource.
RESOURCES: tuple[tuple[str, str, bool, bool], ...] = (
    ("BGPConfiguration", "bgpconfigurations", False, False),
    ("BGPFilter", "bgpfilters", False, False),
    ("BGPPeer", "bgppeers", False, False),
    ("BlockAffinity", "blockaffinities", False, False),
    ("CalicoNodeStatus", "caliconodestatuses", False, True),
    ("ClusterInformation", "clusterinformations", False, False),
    ("FelixConfiguration", "felixconfigurations", False, False),
    ("GlobalNetworkPolicy", "globalnetworkpolicies", False, False),
    ("GlobalNetworkSet", "globalnetworksets", False, False),
    ("HostEndpoint", "hostendpoints", False, False),
    ("IPAMBlock", "ipamblocks", False, False),
    ("IPAMConfig", "ipamconfigs", False, False),
    ("IPAMHandle", "ipamhandles", False, False),
    ("IPPool", "ippools", False, False),
    ("IPReservation", "ipreservations", False, False),
    ("KubeControllersConfiguration", "kubecontrollersconfigurations", False, True),
    ("NetworkPolicy", "networkpolicies", True, False),
    ("NetworkSet", "networksets", True, False),
    ("Tier", "tiers", False, False),
)
CRUD = ["get", "list", "watch", "create", "update", "patch", "delete"]
READ = ["get", "list", "watch"]


def _meta(name: str, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if namespaced:
        meta["namespace"] = NAMESPACE
    return meta


def _crd(kind: str, plural: str, namespaced: bool, status: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": _meta(f"{plural}.{GROUP}", namespaced=False),
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [version],
        },
    }


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _identity(name: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A service account with its cluster role and binding."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(name, namespaced=False),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(name, namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
        },
    ]


CALICO_PLURALS = [plural for _kind, plural, _ns, _status in RESOURCES]
IPAM = ["blockaffinities", "ipamblocks", "ipamhandles", "ipamconfigs", "ippools", "ipreservations"]

NODE_RULES = [
    _rule([""], ["pods", "nodes", "namespaces", "serviceaccounts", "endpoints", "services", "configmaps"], READ),
    _rule([""], ["nodes/status", "pods/status"], ["patch", "update"]),
    # calico-node mints the CNI plugin's token (the calico-cni-plugin service account).
    _rule([""], ["serviceaccounts/token"], ["create"]),
    _rule(["discovery.k8s.io"], ["endpointslices"], READ),
    _rule(["networking.k8s.io"], ["networkpolicies"], READ),
    _rule([GROUP], CALICO_PLURALS, CRUD),
]
CNI_RULES = [
    _rule([""], ["pods", "nodes", "namespaces"], ["get"]),
    _rule([""], ["pods/status"], ["patch"]),
    _rule([GROUP], [*IPAM, "clusterinformations"], CRUD),
]
CONTROLLER_RULES = [
    _rule([""], ["nodes", "pods", "namespaces", "serviceaccounts"], READ),
    _rule([""], ["nodes"], ["delete"]),
    _rule(["networking.k8s.io"], ["networkpolicies"], READ),
    _rule([GROUP], CALICO_PLURALS, CRUD),
]


def _cni_network_config() -> str:
    """The CNI configuration install-cni writes to each node (placeholders filled in on the node)."""
    return json.dumps(
        {
            "name": "k8s-pod-network",
            "cniVersion": "0.3.1",
            "plugins": [
                {
                    "type": "calico",
                    "log_level": "info",
                    "log_file_path": "/var/log/calico/cni/cni.log",
                    "datastore_type": "kubernetes",
                    "nodename": "__KUBERNETES_NODE_NAME__",
                    "mtu": "__CNI_MTU__",
                    "ipam": {"type": "calico-ipam"},
                    "policy": {"type": "k8s"},
                    "kubernetes": {"kubeconfig": "__KUBECONFIG_FILEPATH__"},
                },
                {"type": "portmap", "snat": True, "capabilities": {"portMappings": True}},
                {"type": "bandwidth", "capabilities": {"bandwidth": True}},
            ],
        },
        indent=2,
    ).replace('"__CNI_MTU__"', "__CNI_MTU__")


def _host(name: str, path: str, kind: str = "DirectoryOrCreate") -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path, "type": kind}}


def _mount(name: str, path: str, read_only: bool = False, propagation: str | None = None) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": name, "mountPath": path}
    if read_only:
        mount["readOnly"] = True
    if propagation:
        mount["mountPropagation"] = propagation
    return mount


def _config(key: str) -> dict[str, Any]:
    return {"valueFrom": {"configMapKeyRef": {"name": "calico-config", "key": key}}}


NODE_NAME: dict[str, Any] = {"valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
PRIVILEGED = {"privileged": True}


def _calico_node(pod_cidr: str) -> dict[str, Any]:
    image = f"{REGISTRY}/node:{VERSION}"
    cni_image = f"{REGISTRY}/cni:{VERSION}"
    env: dict[str, dict[str, Any]] = {
        "DATASTORE_TYPE": {"value": "kubernetes"},
        "WAIT_FOR_DATASTORE": {"value": "true"},
        "NODENAME": NODE_NAME,
        "CALICO_NETWORKING_BACKEND": _config("calico_backend"),
        "CLUSTER_TYPE": {"value": "k8s,bgp"},
        "IP": {"value": "autodetect"},
        # Encapsulated between nodes: the VPC routes node addresses only, and the security groups allow IP-in-IP.
        "CALICO_IPV4POOL_IPIP": {"value": "Always"},
        "CALICO_IPV4POOL_VXLAN": {"value": "Never"},
        "CALICO_IPV6POOL_VXLAN": {"value": "Never"},
        "CALICO_IPV4POOL_CIDR": {"value": pod_cidr},
        "FELIX_IPINIPMTU": _config("veth_mtu"),
        "FELIX_VXLANMTU": _config("veth_mtu"),
        "FELIX_WIREGUARDMTU": _config("veth_mtu"),
        "CALICO_DISABLE_FILE_LOGGING": {"value": "true"},
        "FELIX_DEFAULTENDPOINTTOHOSTACTION": {"value": "ACCEPT"},
        "FELIX_IPV6SUPPORT": {"value": "false"},
        "FELIX_HEALTHENABLED": {"value": "true"},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {**_meta("calico-node"), "labels": {**LABELS, "k8s-app": "calico-node"}},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "calico-node"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"k8s-app": "calico-node"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "hostNetwork": True,
                    # The network comes first: on every node, tainted, not ready or being drained.
                    "tolerations": [
                        {"effect": "NoSchedule", "operator": "Exists"},
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"effect": "NoExecute", "operator": "Exists"},
                    ],
                    "serviceAccountName": "calico-node",
                    "terminationGracePeriodSeconds": 0,
                    "priorityClassName": "system-node-critical",
                    "initContainers": [
                        {
                            "name": "upgrade-ipam",
                            "image": cni_image,
                            "command": ["/opt/cni/bin/calico-ipam", "-upgrade"],
                            "env": [
                                {"name": "KUBERNETES_NODE_NAME", **NODE_NAME},
                                {"name": "CALICO_NETWORKING_BACKEND", **_config("calico_backend")},
                            ],
                            "volumeMounts": [
                                _mount("host-local-net-dir", "/var/lib/cni/networks"),
                                _mount("cni-bin-dir", "/host/opt/cni/bin"),
                            ],
                            "securityContext": PRIVILEGED,
                        },
                        {
                            "name": "install-cni",
                            "image": cni_image,
                            "command": ["/opt/cni/bin/install"],
                            "env": [
                                {"name": "CNI_CONF_NAME", "value": "10-calico.conflist"},
                                {"name": "CNI_NETWORK_CONFIG", **_config("cni_network_config")},
                                {"name": "KUBERNETES_NODE_NAME", **NODE_NAME},
                                {"name": "CNI_MTU", **_config("veth_mtu")},
                                {"name": "SLEEP", "value": "false"},
                            ],
                            "volumeMounts": [
                                _mount("cni-bin-dir", "/host/opt/cni/bin"),
                                _mount("cni-net-dir", "/host/etc/cni/net.d"),
                            ],
                            "securityContext": PRIVILEGED,
                        },
                        {
                            "name": "mount-bpffs",
                            "image": image,
                            "command": ["calico-node", "-init", "-best-effort"],
                            "volumeMounts": [
                                _mount("sys-fs", "/sys/fs", propagation="Bidirectional"),
                                _mount("var-run-calico", "/var/run/calico", propagation="Bidirectional"),
                                _mount("nodeproc", "/nodeproc", read_only=True),
                            ],
                            "securityContext": PRIVILEGED,
                        },
                    ],
                    "containers": [
                        {
                            "name": "calico-node",
                            "image": image,
                            "env": [{"name": name, **value} for name, value in env.items()],
                            "securityContext": PRIVILEGED,
                            "resources": {"requests": {"cpu": "250m"}},
                            "lifecycle": {"preStop": {"exec": {"command": ["/bin/calico-node", "-shutdown"]}}},
                            "livenessProbe": {
                                "exec": {"command": ["/bin/calico-node", "-felix-live", "-bird-live"]},
                                "periodSeconds": 10,
                                "initialDelaySeconds": 10,
                                "failureThreshold": 6,
                                "timeoutSeconds": 10,
                            },
                            "readinessProbe": {
                                "exec": {"command": ["/bin/calico-node", "-felix-ready", "-bird-ready"]},
                                "periodSeconds": 10,
                                "timeoutSeconds": 10,
                            },
                            "volumeMounts": [
                                _mount("cni-net-dir", "/host/etc/cni/net.d"),
                                _mount("lib-modules", "/lib/modules", read_only=True),
                                _mount("xtables-lock", "/run/xtables.lock"),
                                _mount("var-run-calico", "/var/run/calico"),
                                _mount("var-lib-calico", "/var/lib/calico"),
                                _mount("policysync", "/var/run/nodeagent"),
                                _mount("bpffs", "/sys/fs/bpf"),
                                _mount("cni-log-dir", "/var/log/calico/cni", read_only=True),
                            ],
                        }
                    ],
                    "volumes": [
                        _host("lib-modules", "/lib/modules", "Directory"),
                        _host("var-run-calico", "/var/run/calico"),
                        _host("var-lib-calico", "/var/lib/calico"),
                        _host("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                        _host("sys-fs", "/sys/fs/"),
                        _host("bpffs", "/sys/fs/bpf", "Directory"),
                        _host("nodeproc", "/proc", "Directory"),
                        _host("cni-bin-dir", "/opt/cni/bin"),
                        _host("cni-net-dir", "/etc/cni/net.d"),
                        _host("cni-log-dir", "/var/log/calico/cni"),
                        _host("host-local-net-dir", "/var/lib/cni/networks"),
                        _host("policysync", "/var/run/nodeagent"),
                    ],
                },
            },
        },
    }


def _kube_controllers() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**_meta("calico-kube-controllers"), "labels": {**LABELS, "k8s-app": "calico-kube-controllers"}},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"k8s-app": "calico-kube-controllers"}},
            "template": {
                "metadata": {"labels": {"k8s-app": "calico-kube-controllers"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {"key": "CriticalAddonsOnly", "operator": "Exists"},
                        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                    ],
                    "serviceAccountName": "calico-kube-controllers",
                    "priorityClassName": "system-cluster-critical",
                    "containers": [
                        {
                            "name": "calico-kube-controllers",
                            "image": f"{REGISTRY}/kube-controllers:{VERSION}",
                            "env": [
                                {"name": "ENABLED_CONTROLLERS", "value": "node,loadbalancer"},
                                {"name": "DATASTORE_TYPE", "value": "kubernetes"},
                            ],
                            "livenessProbe": {
                                "exec": {"command": ["/usr/bin/check-status", "-l"]},
                                "periodSeconds": 10,
                            },
                            "readinessProbe": {
                                "exec": {"command": ["/usr/bin/check-status", "-r"]},
                                "periodSeconds": 10,
                            },
                        }
                    ],
                },
            },
        },
    }


def manifests(pod_cidr: str) -> list[dict[str, Any]]:
    """The objects of the addon, in apply order (resource types first: objects of those types may follow)."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta("calico-config"),
        "data": {
            "typha_service_name": "none",
            "calico_backend": "bird",
            # 0: Calico detects the MTU of the node's interface and takes the encapsulation's overhead off.
            "veth_mtu": "0",
            "cni_network_config": _cni_network_config(),
        },
    }
    return [
        *(_crd(*resource) for resource in RESOURCES),
        config,
        *_identity("calico-node", NODE_RULES),
        *_identity("calico-cni-plugin", CNI_RULES),
        *_identity("calico-kube-controllers", CONTROLLER_RULES),
        _calico_node(pod_cidr),
        _kube_controllers(),
    ]
