# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: what a pool node boots from - its image and its bootstrap document - for the ASG and Fleet tiers.

Bootstrap types:

* ``kubeadm`` - a worker joining a self-managed control plane (``_kubeadm``'s cloud-init, rendered from the
  cluster PKI);
* ``eks`` - a self-managed node joining an EKS cluster (CAPA's AWSMachinePool under an AWSManagedControlPlane):
  a ``#cloud-config`` that writes a nodeadm ``NodeConfig`` (cluster name, API endpoint, CA, service CIDR, read with
  one ``DescribeCluster``) and runs ``nodeadm init`` on it. The image defaults to the EKS-optimised Amazon Linux
  2023 AMI AWS publishes as a public SSM parameter, as CAPA's EKS AMI lookup does;
* ``raw`` - the user's own document; ``none`` - no bootstrap data.

The document goes through the same Secrets Manager/SSM path as every other machine's, so no launch template
version carries a certificate (the EKS CA included).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

try:
    import yaml
except ImportError:  # PyYAML ships with ansible-core; the sanity import test runs without it
    yaml = None  # type: ignore[assignment]

from ..aws.errors import error_code
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from . import ami as _ami
from .termination import DEFAULT_KUBECONFIG

try:
    from ..kubeadm.cloud_init import render_cloud_init
    from ..kubeadm.pki import load_cluster_pki
except ImportError:  # the kubeadm helper ships separately; raw, eks and none bootstrap work without it
    load_cluster_pki = render_cloud_init = None  # type: ignore[assignment]

KUBEADM, EKS, RAW, NONE = "kubeadm", "eks", "raw", "none"
BOOTSTRAP_TYPES = (KUBEADM, EKS, RAW, NONE)
EKS_PARAMETER = "/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/{arch}/standard/recommended/image_id"
EKS_VERSION = re.compile(r"^v?(\d+\.\d+)(\.\d+)?$")
NODEADM_CONFIG = "/etc/eks/nodeadm.d/clusterapi-aws.yaml"
KUBELET_KUBECONFIG = {KUBEADM: DEFAULT_KUBECONFIG, EKS: "/var/lib/kubelet/kubeconfig"}
# What check mode renders when the document's inputs (PKI, EKS cluster) do not exist yet.
PLANNED = b"planned"


# pure ------------------------------------------------------------------------------------------------------------
def eks_minor(kubernetes_version: str) -> str:
    """``1.31`` for ``1.31``, ``v1.31`` or ``v1.31.2`` (EKS publishes one image line per minor)."""
    found = EKS_VERSION.match(kubernetes_version or "")
    if not found:
        raise SpecError("kubernetes_version", f"'{kubernetes_version}' is not a Kubernetes version like 1.31")
    return found.group(1)


def eks_image_parameter(kubernetes_version: str, architecture: str) -> str:
    return EKS_PARAMETER.format(minor=eks_minor(kubernetes_version), arch=architecture)


def uses_eks_image(bootstrap_type: str, ami: Mapping[str, Any]) -> bool:
    """EKS nodes take the EKS-optimised image unless the user chose an image or CAPA's lookup fields."""
    return bootstrap_type == EKS and not any(ami.get(key) for key in ("id", "base_os", "owner", "name_format"))


def node_config(cluster: Mapping[str, Any], *, labels: Mapping[str, str]) -> dict[str, Any]:
    """nodeadm's ``NodeConfig`` for a node of ``cluster`` (an EKS ``DescribeCluster`` answer)."""
    network = cluster.get("kubernetesNetworkConfig") or {}
    spec: dict[str, Any] = {
        "cluster": {
            "name": cluster["name"],
            "apiServerEndpoint": cluster["endpoint"],
            "certificateAuthority": cluster["certificateAuthority"]["data"],
            "cidr": network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or "10.100.0.0/16",
        }
    }
    if labels:
        flags = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        spec["kubelet"] = {"flags": [f"--node-labels={flags}"]}
    return {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}


def nodeadm_cloud_config(cluster: Mapping[str, Any], *, labels: Mapping[str, str]) -> bytes:
    """The ``#cloud-config`` an EKS node boots from (deterministic: its hash says whether bootstrap data changed)."""
    config = yaml.safe_dump(node_config(cluster, labels=labels), sort_keys=True)
    document = {
        "write_files": [{"path": NODEADM_CONFIG, "owner": "root:root", "permissions": "0600", "content": config}],
        "runcmd": [f"nodeadm init --config-source file://{NODEADM_CONFIG}"],
    }
    return ("#cloud-config\n" + yaml.safe_dump(document, sort_keys=True)).encode()


def check_bootstrap(bootstrap: Mapping[str, Any], kubernetes_version: str | None) -> None:
    """Bootstrap options that cannot work, named before any AWS call."""
    kind = bootstrap["type"]
    if kind not in BOOTSTRAP_TYPES:
        raise SpecError("bootstrap.type", f"must be one of {', '.join(BOOTSTRAP_TYPES)}")
    if kind == KUBEADM:
        if not bootstrap.get("endpoint_host"):
            raise SpecError("bootstrap.endpoint_host", "is required for kubeadm bootstrap (the API endpoint)")
        if not kubernetes_version:
            raise SpecError("kubernetes_version", "is required for kubeadm bootstrap")
        if render_cloud_init is None:
            raise SpecError("bootstrap.type", "kubeadm bootstrap needs the collection's _kubeadm module_utils")
    if kind == EKS:
        if not kubernetes_version:
            raise SpecError("kubernetes_version", "is required for eks bootstrap (the EKS minor version)")
        eks_minor(kubernetes_version)
    if kind == RAW and not bootstrap.get("data"):
        raise SpecError("bootstrap.data", "is required for raw bootstrap")


def check_image_inputs(bootstrap_type: str, ami: Mapping[str, Any], kubernetes_version: str | None) -> None:
    """An image can be found: an id, or a version in the form the lookup needs."""
    if ami.get("id"):
        return
    if not kubernetes_version:
        raise SpecError("kubernetes_version", "is required to look up the AMI (or give ami.id)")
    if uses_eks_image(bootstrap_type, ami):
        eks_minor(kubernetes_version)
    elif not _ami.VERSION.match(kubernetes_version):
        raise SpecError("kubernetes_version", f"'{kubernetes_version}' is not a version like v1.31.2")


# AWS -------------------------------------------------------------------------------------------------------------
def resolve_image(
    ctx: Context,
    *,
    ami: Mapping[str, Any],
    instance_type: str,
    kubernetes_version: str | None,
    root_volume: Mapping[str, Any],
    bootstrap_type: str,
) -> _ami.Image:
    """The pool's image (given, EKS-optimised, or CAPA's lookup), checked against the root volume size."""
    if ami.get("id"):
        image = _ami.by_id(ctx, ami["id"])
    elif uses_eks_image(bootstrap_type, ami):
        image = eks_optimized_image(ctx, instance_type, kubernetes_version or "")
    else:
        image = _ami.look_up(
            ctx,
            instance_type,
            kubernetes_version=kubernetes_version,
            base_os=ami.get("base_os") or _ami.DEFAULT_BASE_OS,
            owner=ami.get("owner") or "",
            name_format=ami.get("name_format") or "",
            bastion=False,
        )
    size = root_volume.get("size")
    if size is not None and image.root_size and size < image.root_size:
        raise ReconcileError(f"root_volume.size: {size} GiB is smaller than the AMI's {image.root_size} GiB")
    return image


def eks_optimized_image(ctx: Context, instance_type: str, kubernetes_version: str) -> _ami.Image:
    """The EKS-optimised AL2023 image of the instance type's architecture, from AWS's public SSM parameter."""
    name = eks_image_parameter(kubernetes_version, _ami.architecture_of(ctx, instance_type))
    # GetParameters, not GetParameter: a missing name is an answer, not an error, and capa_ami_info reads the same.
    found = ctx.client("ssm").get_parameters(Names=[name]).get("Parameters", [])
    if not found:
        raise ReconcileError(
            f"ami: no EKS-optimised image for Kubernetes {eks_minor(kubernetes_version)} in this region "
            f"(public SSM parameter {name} not found; set ami.id)"
        )
    image_id = found[0]["Value"]
    return _ami.by_id(ctx, image_id)


def describe_eks_cluster(ctx: Context, name: str) -> Mapping[str, Any] | None:
    try:
        return ctx.client("eks").describe_cluster(name=name)["cluster"]
    except botocore.exceptions.ClientError as e:
        if error_code(e) == "ResourceNotFoundException":
            return None
        raise


def document(ctx: Context, bootstrap: Mapping[str, Any], *, name: str, kubernetes_version: str | None) -> bytes | None:
    """The raw bootstrap document of a pool (before the termination watcher is merged in), or None."""
    kind = bootstrap["type"]
    if kind == NONE:
        return None
    if kind == RAW:
        return bootstrap["data"].encode()
    if kind == EKS:
        return _eks_document(ctx, bootstrap, name)
    pki = load_cluster_pki(ctx, ctx.cluster, missing_ok=ctx.check_mode)
    if pki is None:  # check mode before capa_kubeadm ran: plan the entries without content
        return PLANNED
    return render_cloud_init(
        pki,
        "join-worker",
        cluster=ctx.cluster,
        endpoint_host=bootstrap["endpoint_host"],
        endpoint_port=bootstrap["endpoint_port"],
        kubernetes_version=kubernetes_version,
        machine_name=name,
    )


def _eks_document(ctx: Context, bootstrap: Mapping[str, Any], pool: str) -> bytes:
    eks_name = bootstrap.get("eks_cluster_name") or ctx.cluster
    cluster = describe_eks_cluster(ctx, eks_name)
    ready = cluster is not None and cluster.get("endpoint") and (cluster.get("certificateAuthority") or {}).get("data")
    if ready:
        return nodeadm_cloud_config(cluster, labels={"clusterapi.aws/machine-pool": pool})
    if ctx.check_mode:  # the EKS cluster is created (or becomes active) earlier in the same run
        return PLANNED
    state = "does not exist" if cluster is None else f"is {cluster.get('status', 'not ready')} (no endpoint yet)"
    raise ReconcileError(f"bootstrap.eks_cluster_name: EKS cluster {eks_name} {state}; reconcile it first")


def watcher_kubeconfig(bootstrap_type: str) -> str:
    """Where the node's kubelet keeps the credentials the termination watcher drains with."""
    return KUBELET_KUBECONFIG.get(bootstrap_type, KUBELET_KUBECONFIG[KUBEADM])
