# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the machine image of a group (CAPA pkg/cloud/services/ec2/ami.go).

Either the AMI given by id, or CAPA's lookup: the newest available HVM image of the instance type's architecture
owned by ``owner`` whose name matches the name format with the base OS and the Kubernetes version filled in. The
bastion looks up Canonical's Ubuntu 24.04 by description instead. One ``DescribeInstanceTypes`` and one
``DescribeImages`` per run, whatever the size of the group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.errors import error_code
from ..kernel.context import Context
from ..kernel.errors import ReconcileError

CAPA_OWNER = "819546954734"
CANONICAL_OWNER = "099720109477"
DEFAULT_BASE_OS = "ubuntu-24.04"
DEFAULT_NAME_FORMAT = "capa-ami-{base_os}-?{k8s_version}-*"
# What users may have written in CAPA's Go template syntax (raw-escaped in Ansible) means the same.
GO_PLACEHOLDERS = {"{{.BaseOS}}": "{base_os}", "{{.K8sVersion}}": "{k8s_version}"}
BASTION_DESCRIPTION = "Canonical, Ubuntu, 24.04, {arch} noble image*"
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64"}
VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")


@dataclass(frozen=True)
class Image:
    id: str
    name: str
    root_device_name: str
    root_size: int | None
    architecture: str

    @classmethod
    def from_aws(cls, image: Mapping[str, Any]) -> Image:
        root = image.get("RootDeviceName") or "/dev/sda1"
        size = None
        for mapping in image.get("BlockDeviceMappings") or []:
            if mapping.get("DeviceName") == root and "Ebs" in mapping:
                size = mapping["Ebs"].get("VolumeSize")
        return cls(image["ImageId"], image.get("Name", ""), root, size, image.get("Architecture", "x86_64"))


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


def by_id(ctx: Context, ami_id: str) -> Image:
    try:
        images = ctx.client("ec2").describe_images(ImageIds=[ami_id]).get("Images", [])
    except botocore.exceptions.ClientError as e:
        if error_code(e).startswith("InvalidAMIID"):
            raise ReconcileError(f"ami.id: image {ami_id} does not exist or is not visible") from e
        raise
    if not images:
        raise ReconcileError(f"ami.id: image {ami_id} does not exist or is not visible")
    return Image.from_aws(images[0])


def look_up(
    ctx: Context,
    instance_type: str,
    *,
    kubernetes_version: str | None,
    base_os: str,
    owner: str,
    name_format: str,
    bastion: bool,
) -> Image:
    """CAPA's lookup (or the bastion's Canonical image); no image is an error raised before anything changes."""
    return look_up_architecture(
        ctx,
        architecture_of(ctx, instance_type),
        kubernetes_version=kubernetes_version,
        base_os=base_os,
        owner=owner,
        name_format=name_format,
        bastion=bastion,
    )


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
    """:func:`look_up` for a known architecture (``x86_64`` or ``arm64``), e.g. from the ``capa_ami`` lookup."""
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
