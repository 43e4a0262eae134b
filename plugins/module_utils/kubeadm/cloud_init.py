# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the kubeadm documents and the ``#cloud-config`` that bootstraps a machine, as CABPK renders them.

Pure functions of the cluster PKI (``pki.py``) and the machine's role: the ``InitConfiguration`` /
``ClusterConfiguration`` / ``JoinConfiguration`` for the Kubernetes version's kubeadm API, the PKI files a
control-plane node needs, the cloud-init document that writes them and runs ``kubeadm init`` / ``kubeadm join``
(:func:`render_cloud_init`), the stable hash machines are compared by (:func:`cloud_init_hash`), and the version
rules kubeadm upgrades follow (:func:`check_upgrade_step`). The document carries keys and a bootstrap token that
expires (``bootstrap_tokens.py``): it only ever travels through the secret backend.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from typing import Any, Iterable, Mapping

try:
    import yaml

    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ..kernel.errors import ReconcileError, SpecError
from ..kernel.validation import parse_kubernetes_version
from .bootstrap_tokens import NODE_GROUP, ttl_text
from .pki import CA_PAIRS, ClusterPki, PublicPki, ca_cert_hash

DEFAULT_API_PORT = 6443

ROLE_INIT = "init"
ROLE_JOIN_CONTROL_PLANE = "join-control-plane"
ROLE_JOIN_WORKER = "join-worker"
ROLES = (ROLE_INIT, ROLE_JOIN_CONTROL_PLANE, ROLE_JOIN_WORKER)


KUBEADM_CONFIG_PATH = "/run/kubeadm/kubeadm.yaml"
BOOTSTRAP_SUCCESS_PATH = "/run/cluster-api/bootstrap-success.complete"
# cloud-init renders the document with jinja first (this header), as CABPK's output does, so the node name can be
# the EC2 private DNS name the external cloud provider expects.
JINJA_HEADER = "## template: jinja"
NODE_NAME = "{{ ds.meta_data.local_hostname }}"
NODE_ADDRESS = "{{ ds.meta_data.local_ipv4 }}"
# A restore (etcd_restore.py in machines): the snapshot's URL is kept in a curl config file (not on a command line
# any process listing shows), the data directory kubeadm's local etcd uses is filled before kubeadm init runs, and
# init is told that a full /var/lib/etcd is expected.
SNAPSHOT_URL_PATH = "/run/cluster-api/etcd-snapshot.curl"
SNAPSHOT_PATH = "/var/lib/etcd-restore/snapshot.db"
ETCD_DATA_DIR = "/var/lib/etcd"
RESTORED_PATH = "/run/cluster-api/etcd-restored"
RESTORE_PREFLIGHT = "--ignore-preflight-errors=DirAvailable--var-lib-etcd"
KUBELET_EXTRA_ARGS = {"cloud-provider": "external"}
CONTROLLER_MANAGER_EXTRA_ARGS = {"cloud-provider": "external"}


parse_version = parse_kubernetes_version


def check_upgrade_step(running: Iterable[str], desired: str, field: str = "kubernetes_version") -> None:
    """kubeadm upgrades one minor version at a time and never downgrades one: refuse a target that skips a minor
    or goes back from any version a machine of the group runs (patch changes within a minor are fine)."""
    want = parse_version(desired, field)
    for version in sorted(set(running)):
        try:
            have = parse_version(version, field)
        except SpecError:
            continue  # a tag someone edited by hand says nothing reliable
        if want[:2] == have[:2] or (want[0] == have[0] and want[1] == have[1] + 1):
            continue
        step = f"v{have[0]}.{have[1] + 1}"
        reason = "kubeadm cannot downgrade a minor version" if want[:2] < have[:2] else f"upgrade to {step} first"
        raise SpecError(
            field,
            f"'{desired}': machines run {normalise_version(version)}; kubeadm upgrades one minor version at a time "
            f"({reason})",
        )


def normalise_version(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


def cluster_configuration_version(text: str) -> str:
    """The ``kubernetesVersion`` of a ClusterConfiguration document (kubeadm-config's ``ClusterConfiguration``)."""
    return str((yaml.safe_load(text or "") or {}).get("kubernetesVersion") or "")


def with_kubernetes_version(text: str, version: str) -> str:
    """The ClusterConfiguration document naming ``version``, everything else as it was."""
    configuration = yaml.safe_load(text or "") or {}
    configuration["kubernetesVersion"] = normalise_version(version)
    return str(yaml.safe_dump(configuration, sort_keys=True))


def kubeadm_api_version(kubernetes_version: str) -> str:
    """kubeadm.k8s.io/v1beta4 from Kubernetes 1.31 (where it became the default), v1beta3 before."""
    major, minor = parse_version(kubernetes_version)[:2]
    return "kubeadm.k8s.io/v1beta4" if (major, minor) >= (1, 31) else "kubeadm.k8s.io/v1beta3"


def _extra_args(api_version: str, args: Mapping[str, str]) -> Any:
    # v1beta4 turned every extraArgs map into a list of {name, value} (so a flag can repeat).
    if api_version.endswith("v1beta4"):
        return [{"name": k, "value": v} for k, v in args.items()]
    return dict(args)


def _node_registration(api_version: str) -> dict[str, Any]:
    return {"name": NODE_NAME, "kubeletExtraArgs": _extra_args(api_version, KUBELET_EXTRA_ARGS)}


def endpoint_address(host: str, port: int) -> str:
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]:{port}"
    except ValueError:
        pass
    return f"{host}:{port}"


def kubeadm_documents(
    pki: ClusterPki | PublicPki,
    role: str,
    *,
    cluster: str,
    endpoint_host: str,
    endpoint_port: int,
    kubernetes_version: str,
    token: str,
    token_ttl: int,
) -> list[dict[str, Any]]:
    """``token`` is the machine's own: for ``kubeadm init`` the token it creates (expiring after ``token_ttl``
    seconds, as every token of this collection does), for a join the one minted for the machine in the cluster."""
    api_version = kubeadm_api_version(kubernetes_version)
    endpoint = endpoint_address(endpoint_host, endpoint_port)
    if role != ROLE_JOIN_WORKER and not isinstance(pki, ClusterPki):
        raise ReconcileError(f"a {role} document needs the cluster PKI, not its public facts (a bug)")
    if role == ROLE_INIT:
        init = {
            "apiVersion": api_version,
            "kind": "InitConfiguration",
            # The first machine's own token: kubeadm creates it, and it lapses after its TTL (later machines join
            # with tokens minted for each of them through the API; kubeadm's own default would live 24 hours).
            "bootstrapTokens": [
                {
                    "token": token,
                    "ttl": ttl_text(token_ttl),
                    "groups": [NODE_GROUP],
                    "usages": ["signing", "authentication"],
                    "description": f"clusterapi.aws init token of cluster {cluster}",
                }
            ],
            "nodeRegistration": _node_registration(api_version),
        }
        cluster_config = {
            "apiVersion": api_version,
            "kind": "ClusterConfiguration",
            "clusterName": cluster,
            "kubernetesVersion": normalise_version(kubernetes_version),
            "controlPlaneEndpoint": endpoint,
            "networking": {"podSubnet": pki.pod_cidr, "serviceSubnet": pki.service_cidr},
            "apiServer": {"certSANs": [endpoint_host]},
            "controllerManager": {"extraArgs": _extra_args(api_version, CONTROLLER_MANAGER_EXTRA_ARGS)},
        }
        return [init, cluster_config]
    join: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "JoinConfiguration",
        "discovery": {
            "bootstrapToken": {
                "apiServerEndpoint": endpoint,
                "token": token,
                "caCertHashes": [pki.ca_cert_hash],
            }
        },
        "nodeRegistration": _node_registration(api_version),
    }
    if role == ROLE_JOIN_CONTROL_PLANE:
        join["controlPlane"] = {}
    return [join]


def pki_files(pki: ClusterPki | PublicPki, role: str) -> list[tuple[str, str, str]]:
    """(path, permissions, content) of the PKI files a role's node needs.

    Control-plane nodes get the CAs with their keys and the service-account pair: kubeadm signs each node's own
    certificates from them. Workers get nothing: ``kubeadm join`` fetches the CA through token discovery (checked
    against the CA hash) and its preflight refuses to run if ``/etc/kubernetes/pki/ca.crt`` already exists.
    """
    if role == ROLE_JOIN_WORKER:
        return []
    if not isinstance(pki, ClusterPki):
        raise ReconcileError(f"a {role} node needs the cluster PKI, not its public facts (a bug)")
    base = "/etc/kubernetes/pki"
    return [
        (f"{base}/ca.crt", "0640", pki.cluster_ca_cert),
        (f"{base}/ca.key", "0600", pki.cluster_ca_key),
        (f"{base}/etcd/ca.crt", "0640", pki.etcd_ca_cert),
        (f"{base}/etcd/ca.key", "0600", pki.etcd_ca_key),
        (f"{base}/front-proxy-ca.crt", "0640", pki.front_proxy_ca_cert),
        (f"{base}/front-proxy-ca.key", "0600", pki.front_proxy_ca_key),
        (f"{base}/sa.pub", "0640", pki.service_account_public_key),
        (f"{base}/sa.key", "0600", pki.service_account_private_key),
    ]


if HAS_YAML:

    class _BlockDumper(yaml.SafeDumper):
        """Multi-line strings (PEMs, the kubeadm config) as literal blocks, so the document reads like CABPK's."""

    def _str_representer(dumper: Any, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _BlockDumper.add_representer(str, _str_representer)


def _dump(data: Any, sort_keys: bool = False) -> str:
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=sort_keys, default_flow_style=False, width=1 << 16)


def restore_commands(kubernetes_version: str) -> str:
    """The shell line that restores etcd from the snapshot before ``kubeadm init`` (kubeadm's documented way of
    bringing a control plane back: a data directory restored with ``etcdutl snapshot restore`` as this node's only
    member, then init with ``DirAvailable--var-lib-etcd`` ignored). ``etcdutl`` runs from the etcd image kubeadm
    uses for this version (on the node's containerd, pulled if it is not there), so the host needs no etcd tools;
    the snapshot's own sha256 is checked by the restore. The downloaded file is removed afterwards."""
    peer = f"https://{NODE_ADDRESS}:2380"
    image = f"$(kubeadm config images list --kubernetes-version {normalise_version(kubernetes_version)} | grep /etcd:)"
    return " && ".join(
        [
            "mkdir -p /var/lib/etcd-restore",
            f"curl -fsS --retry 5 -K {SNAPSHOT_URL_PATH} -o {SNAPSHOT_PATH}",
            f'ETCD_IMAGE="{image}"',
            '{ ctr -n k8s.io images ls -q | grep -qx "$ETCD_IMAGE" || ctr -n k8s.io images pull "$ETCD_IMAGE"; }',
            "ctr -n k8s.io run --rm --mount type=bind,src=/var/lib,dst=/var/lib,options=rbind:rw "
            f'"$ETCD_IMAGE" etcd-restore etcdutl snapshot restore {SNAPSHOT_PATH} --name {NODE_NAME} '
            f"--initial-cluster {NODE_NAME}={peer} --initial-advertise-peer-urls {peer} --data-dir {ETCD_DATA_DIR}",
            f"rm -f {SNAPSHOT_PATH}",
            f": > {RESTORED_PATH}",
        ]
    )


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise SpecError("role", f"'{role}' is not one of {', '.join(ROLES)}")


def render_cloud_init(
    pki: ClusterPki | PublicPki,
    role: str,
    *,
    cluster: str,
    endpoint_host: str,
    endpoint_port: int,
    kubernetes_version: str,
    machine_name: str,
    token: str,
    token_ttl: int,
    etcd_snapshot_url: str | None = None,
) -> bytes:
    """The ``#cloud-config`` document that bootstraps one machine, deterministic for the same inputs.

    ``machine_name`` does not appear in the document (the node is named after its EC2 private DNS name through
    cloud-init's jinja rendering, as CAPA templates do), so every machine of a group shares one document and one
    :func:`cloud_init_hash`; it is accepted so callers pass the machine explicitly and future needs stay compatible.
    The document carries keys and the machine's bootstrap token: it must only travel through the secret backend.

    ``etcd_snapshot_url`` (``init`` only): a presigned URL of the snapshot the node restores etcd from before
    ``kubeadm init`` (:func:`restore_commands`); init runs only once the restore succeeded.
    """
    _check_role(role)
    if etcd_snapshot_url is not None and role != ROLE_INIT:
        raise SpecError("etcd_restore", "only the machine that runs kubeadm init restores etcd")
    del machine_name
    documents = kubeadm_documents(
        pki,
        role,
        cluster=cluster,
        endpoint_host=endpoint_host,
        endpoint_port=endpoint_port,
        kubernetes_version=kubernetes_version,
        token=token,
        token_ttl=token_ttl,
    )
    kubeadm_yaml = "---\n".join(_dump(d) for d in documents)
    write_files = [
        {"path": path, "owner": "root:root", "permissions": mode, "content": content}
        for path, mode, content in pki_files(pki, role)
    ]
    write_files.append(
        {"path": KUBEADM_CONFIG_PATH, "owner": "root:root", "permissions": "0600", "content": kubeadm_yaml}
    )
    command = "init" if role == ROLE_INIT else "join"
    kubeadm = f"kubeadm {command} --config {KUBEADM_CONFIG_PATH} && echo success > {BOOTSTRAP_SUCCESS_PATH}"
    runcmd = ["mkdir -p /run/cluster-api"]
    if etcd_snapshot_url is not None:
        write_files.append(
            {
                "path": SNAPSHOT_URL_PATH,
                "owner": "root:root",
                "permissions": "0600",
                "content": f'url = "{etcd_snapshot_url}"\n',
            }
        )
        runcmd.append(restore_commands(kubernetes_version))
        kubeadm = (
            f"test -f {RESTORED_PATH} && kubeadm init --config {KUBEADM_CONFIG_PATH} {RESTORE_PREFLIGHT} "
            f"&& echo success > {BOOTSTRAP_SUCCESS_PATH}"
        )
    runcmd.append(kubeadm)
    config = {"write_files": write_files, "runcmd": runcmd}
    return f"{JINJA_HEADER}\n#cloud-config\n{_dump(config)}".encode()


def cloud_init_hash(
    pki: ClusterPki,
    role: str,
    *,
    cluster: str,
    endpoint_host: str,
    endpoint_port: int,
    kubernetes_version: str,
    machine_name: str | None = None,
) -> str:
    """A stable sha256 of what defines a group's bootstrap config, for comparing machines with their template.

    Built from public facts only (role, cluster, endpoint, version, networking, the CAs' public-key hashes). The
    machine name and its bootstrap token are left out on purpose: every machine has a token of its own, and a token
    renewed or rotated is no reason to replace a machine.
    """
    _check_role(role)
    del machine_name
    inputs = {
        "renderer": 2,
        "role": role,
        "cluster": cluster,
        "endpoint": endpoint_address(endpoint_host, endpoint_port),
        "kubernetes_version": normalise_version(kubernetes_version),
        "service_cidr": pki.service_cidr,
        "pod_cidr": pki.pod_cidr,
        "cas": [ca_cert_hash(getattr(pki, pair[1])) for pair in CA_PAIRS],
        "service_account": hashlib.sha256(pki.service_account_public_key.strip().encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
