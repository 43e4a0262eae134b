# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the image of a machine - of a group, a pool or a fleet (CAPA pkg/cloud/services/ec2/ami.go).

:func:`resolve_image` is the one way a machine's image is chosen: the AMI given by id; for an EKS node without
lookup fields the EKS-optimised Amazon Linux 2023 image AWS publishes as a public SSM parameter (as CAPA's EKS AMI
lookup does); otherwise CAPA's lookup - the newest available HVM image of the instance type's architecture owned
by ``owner`` whose name matches the name format with the base OS and the Kubernetes version filled in. The bastion
looks up Canonical's Ubuntu 24.04 by description instead. One ``DescribeInstanceTypes`` and one ``DescribeImages``
per run (plus one ``GetParameters`` for the EKS image), whatever the size of the group; none of the first when the
caller already knows the architecture (a running machine of the same instance type shows it: :func:`seen_architecture`;
a pool's machines, among the cluster's instances an earlier step of the chain described: :func:`pool_architecture`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.ec2 import cluster_instances_if_read, tags_of
from ..aws.errors import error_code, missing_as_none
from ..aws.ssm import parameter_values
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from .machine_spec import VERSION, Image, MachineSpec, eks_minor

__all__ = ["VERSION", "Image", "resolve_image"]

CAPA_OWNER = "819546954734"
CANONICAL_OWNER = "099720109477"
DEFAULT_BASE_OS = "ubuntu-24.04"
DEFAULT_NAME_FORMAT = "capa-ami-{base_os}-?{k8s_version}-*"
# What users may have written in CAPA's Go template syntax (raw-escaped in Ansible) means the same.
GO_PLACEHOLDERS = {"{{.BaseOS}}": "{base_os}", "{{.K8sVersion}}": "{k8s_version}"}
BASTION_DESCRIPTION = "Canonical, Ubuntu, 24.04, {arch} noble image*"
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
EKS_PARAMETER = "/aws/service/eks/optimized-ami/{minor}/amazon-linux-2023/{arch}/standard/recommended/image_id"


# pure ------------------------------------------------------------------------------------------------------------
def name_patterns(name_format: str, base_os: str, kubernetes_version: str) -> list[str]:
    """The ``name`` filter values: the format filled in with the version without and with its leading ``v``.

    CAPA's default format has ``-?`` before the version so one pattern matches both; a user format without it
    still finds images named either way.
    """
    fmt = name_format or DEFAULT_NAME_FORMAT
    for go, ours in GO_PLACEHOLDERS.items():
        fmt = fmt.replace(go, ours)
    bare = kubernetes_version.lstrip("v")
    values = [fmt.replace("{base_os}", base_os).replace("{k8s_version}", v) for v in (bare, f"v{bare}")]
    return list(dict.fromkeys(values))


def eks_image_parameter(kubernetes_version: str, architecture: str) -> str:
    return EKS_PARAMETER.format(minor=eks_minor(kubernetes_version), arch=architecture)


def newest(images: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The image with the latest CreationDate (ISO 8601 strings sort by time); ties broken by id for stability."""
    return max(images, key=lambda i: (i.get("CreationDate", ""), i["ImageId"]), default=None)


# AWS -------------------------------------------------------------------------------------------------------------
def architecture_of(ctx: Context, instance_type: str) -> str:
    """``x86_64`` or ``arm64`` for an instance type (CAPA defaults to x86_64 when it may not ask)."""
    try:
        found = ctx.client("ec2").describe_instance_types(InstanceTypes=[instance_type]).get("InstanceTypes", [])
    except botocore.exceptions.ClientError as e:
        code = error_code(e)
        if code in ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException"):
            return "x86_64"
        if code.startswith("InvalidInstanceType"):
            raise ReconcileError(f"instance_type: '{instance_type}' is not an instance type of this region") from e
        raise
    if not found:
        raise ReconcileError(f"instance_type: '{instance_type}' is not an instance type of this region")
    supported = found[0].get("ProcessorInfo", {}).get("SupportedArchitectures", [])
    return "arm64" if "arm64" in supported and "x86_64" not in supported else "x86_64"


def seen_architecture(instances: Iterable[tuple[str | None, str | None]], instance_type: str | None) -> str | None:
    """The architecture the running machines of ``instance_type`` show (``(instance type, architecture)`` pairs, as
    ``DescribeInstances`` reports them), or None when none does or they disagree.

    An instance runs an image of its type's architecture, and no instance type runs both x86_64 and arm64, so what
    the group's own instances show is what :func:`architecture_of` would answer: a run over existing machines then
    needs no ``DescribeInstanceTypes`` (a no-op reads what the instances already told it). Other values
    (``i386``, ``x86_64_mac``) are left to :func:`architecture_of`.
    """
    seen = {arch for kind, arch in instances if kind == instance_type and arch in ARCHITECTURES}
    return seen.pop() if len(seen) == 1 else None


def pool_architecture(ctx: Context, tag_key: str, pool: str, instance_type: str | None) -> str | None:
    """The architecture a pool's instances (tagged ``tag_key=pool``) show, when an earlier step of the run's chain
    described the cluster's instances (a machine group does): answered from that read, never asked - a pool has no
    describe of instances of its own, so none is made for this. None otherwise (then the type is asked)."""
    instances = cluster_instances_if_read(ctx)
    if not instances:
        return None
    mine = [i for i in instances if tags_of(i).get(tag_key) == pool]
    return seen_architecture(((i.get("InstanceType"), i.get("Architecture")) for i in mine), instance_type)


def resolve_image(ctx: Context, machine: MachineSpec, architecture: str | None = None) -> Image:
    """The machine's image (given, EKS-optimised, or looked up), checked against its root volume size.

    ``architecture``: the instance type's, when the caller knows it (:func:`seen_architecture`); asked otherwise.
    """
    if machine.ami.id:
        image = by_id(ctx, machine.ami.id)  # a given image needs no architecture
    else:
        arch = architecture or architecture_of(ctx, machine.instance_type or "")
        image = _by_architecture(ctx, machine, arch)
    size = machine.root_volume.size
    if size is not None and image.root_size and size < image.root_size:
        raise ReconcileError(f"root_volume.size: {size} GiB is smaller than the AMI's {image.root_size} GiB")
    return image


def _by_architecture(ctx: Context, machine: MachineSpec, arch: str) -> Image:
    """The EKS-optimised image, or CAPA's (or the bastion's) lookup, of ``arch``."""
    if machine.uses_eks_image:
        return eks_optimized_image(ctx, arch, machine.kubernetes_version or "")
    return look_up_architecture(
        ctx,
        arch,
        kubernetes_version=machine.kubernetes_version,
        base_os=machine.ami.base_os or DEFAULT_BASE_OS,
        owner=machine.ami.owner or "",
        name_format=machine.ami.name_format or "",
        bastion=machine.bastion,
    )


def by_id(ctx: Context, ami_id: str) -> Image:
    missing = ReconcileError(f"ami.id: image {ami_id} does not exist or is not visible")
    try:
        answer = missing_as_none(ctx.client("ec2").describe_images, ImageIds=[ami_id])
    except botocore.exceptions.ClientError as e:
        # InvalidAMIID.Malformed / .Unavailable: no image this account can launch, as good as missing.
        if error_code(e).startswith("InvalidAMIID"):
            raise missing from e
        raise
    images = (answer or {}).get("Images", [])
    if not images:
        raise missing
    return Image.from_aws(images[0])


def eks_optimized_image(ctx: Context, architecture: str, kubernetes_version: str) -> Image:
    """The EKS-optimised AL2023 image of the architecture, from AWS's public SSM parameter."""
    name = eks_image_parameter(kubernetes_version, architecture)
    found = parameter_values(ctx, [name])
    if name not in found:
        raise ReconcileError(
            f"ami: no EKS-optimised image for Kubernetes {eks_minor(kubernetes_version)} in this region "
            f"(public SSM parameter {name} not found; set ami.id)"
        )
    return by_id(ctx, found[name])


def look_up_architecture(
    ctx: Context,
    arch: str,
    *,
    kubernetes_version: str | None,
    base_os: str,
    owner: str,
    name_format: str,
    bastion: bool = False,
) -> Image:
    """CAPA's lookup (or the bastion's Canonical image) for an architecture (``x86_64`` or ``arm64``); no image is
    an error raised before anything changes."""
    filters = [
        {"Name": "architecture", "Values": [arch]},
        {"Name": "state", "Values": ["available"]},
        {"Name": "virtualization-type", "Values": ["hvm"]},
    ]
    if bastion:
        owner = owner or CANONICAL_OWNER
        filters.append({"Name": "description", "Values": [BASTION_DESCRIPTION.format(arch=ARCHITECTURES[arch])]})
        what = f"Ubuntu 24.04 {arch} image of owner {owner}"
    else:
        owner = owner or CAPA_OWNER
        patterns = name_patterns(name_format, base_os, kubernetes_version or "")
        filters.append({"Name": "name", "Values": patterns})
        what = f"{arch} image of owner {owner} named {' or '.join(patterns)}"
    images = ctx.client("ec2").describe_images(Owners=[owner], Filters=filters).get("Images", [])
    found = newest(images)
    if found is None:
        raise ReconcileError(f"ami: no {what} (set ami.id, or ami.owner/ami.name_format for your own images)")
    return Image.from_aws(found)
