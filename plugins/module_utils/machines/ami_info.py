# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: CAPA's ``clusterawsadm ami list`` - the newest image per region, base OS, Kubernetes version and
architecture, named ``capa-ami-<os>-<version>-*`` or ``capa-ami-<os>-v<version>-*``.

One ``DescribeImages`` per region answers every base OS, version and architecture at once (all names in one
``name`` filter); the images are then grouped here. With ``eks_optimized`` the EKS-optimised Amazon Linux 2023
image of each version and architecture is read from AWS's public SSM parameters (one ``GetParameters`` per ten
names and region, then one ``DescribeImages`` by id per region for the image details).

The same name patterns and "newest" rule as the machine tiers' lookup (:mod:`._ami`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..aws.ssm import parameter_values
from ..kernel.context import Context
from ..kernel.errors import SpecError
from ..kernel.tier import Outcome
from .ami import EKS_PARAMETER, VERSION, name_patterns, newest

BASE_OSES = ("centos-7", "ubuntu-24.04", "ubuntu-22.04", "amazon-2", "flatcar-stable", "rhel-8")
LIST_NAME_FORMAT = "capa-ami-{base_os}-{k8s_version}-*"
EKS_BASE_OS = "eks-al2023"


# pure ------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AmiQuery:
    """capa_ami_info's options as plain values."""

    kubernetes_versions: tuple[str, ...]
    base_oses: tuple[str, ...]
    regions: tuple[str, ...] | None  # unset: the run's own region
    architectures: tuple[str, ...]
    owner: str
    eks_optimized: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> AmiQuery:
        regions = params["regions"]
        return cls(
            tuple(params["kubernetes_versions"]),
            tuple(params["base_oses"]),
            None if regions is None else tuple(regions),
            tuple(params["architectures"]),
            str(params["owner"]),
            params["eks_optimized"],
        )


def validate(query: AmiQuery) -> None:
    if not query.kubernetes_versions:
        raise SpecError("kubernetes_versions", "needs at least one version")
    for index, version in enumerate(query.kubernetes_versions):
        if not VERSION.match(version):
            raise SpecError(f"kubernetes_versions[{index}]", f"'{version}' is not a version like v1.31.2")
    for key in ("base_oses", "regions", "architectures"):
        if getattr(query, key) is not None and not getattr(query, key):
            raise SpecError(key, "must not be empty (leave it out for the default)")
    for index, base_os in enumerate(query.base_oses):
        if not base_os or "*" in base_os or "?" in base_os:
            raise SpecError(f"base_oses[{index}]", f"'{base_os}' is not a base OS name")
    if not query.owner.isdigit() and query.owner not in ("self", "amazon", "aws-marketplace"):
        raise SpecError("owner", f"'{query.owner}' is not an account id")


def bare(version: str) -> str:
    return version.lstrip("v")


def name_filter(base_oses: Iterable[str], versions: Iterable[str]) -> list[str]:
    """Every name pattern of every (base OS, version), with and without the ``v``."""
    values: list[str] = []
    for base_os in base_oses:
        for version in versions:
            values.extend(name_patterns(LIST_NAME_FORMAT, base_os, bare(version)))
    return list(dict.fromkeys(values))


def classify(name: str, base_oses: Iterable[str], versions: Iterable[str]) -> tuple[str, str] | None:
    """The (base OS, version) an image name was built for; the longest OS wins (``ubuntu-24.04`` vs ``ubuntu``)."""
    for base_os in sorted(base_oses, key=len, reverse=True):
        for version in versions:
            for prefix in (f"capa-ami-{base_os}-{bare(version)}-", f"capa-ami-{base_os}-v{bare(version)}-"):
                if name.startswith(prefix):
                    return base_os, version
    return None


def newest_per_group(
    region: str, images: Iterable[Mapping[str, Any]], base_oses: list[str], versions: list[str]
) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for image in images:
        key = classify(image.get("Name", ""), base_oses, versions)
        if key:
            groups.setdefault((*key, image.get("Architecture", "x86_64")), []).append(image)
    found = []
    for (base_os, version, arch), members in groups.items():
        chosen = newest(members)
        if chosen is not None:
            found.append(image_entry(region, base_os, version, arch, chosen))
    return found


def image_entry(region: str, base_os: str, version: str, arch: str, image: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "region": region,
        "base_os": base_os,
        "kubernetes_version": version,
        "architecture": arch,
        "image_id": image["ImageId"],
        "name": image.get("Name"),
        "creation_date": image.get("CreationDate"),
        "owner": image.get("OwnerId"),
    }


def newest_first(images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(images, key=lambda i: (i.get("creation_date") or "", i["image_id"]), reverse=True)


def eks_parameters(versions: Iterable[str], architectures: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``{parameter name: (version, architecture)}`` of the EKS-optimised AL2023 images."""
    names = {}
    for version in versions:
        minor = ".".join(bare(version).split(".")[:2])
        for arch in architectures:
            names[EKS_PARAMETER.format(minor=minor, arch=arch)] = (version, arch)
    return names


# AWS -------------------------------------------------------------------------------------------------------------
class AmiInfoTier:
    def parse(self, params: Mapping[str, Any]) -> AmiQuery:
        return AmiQuery.from_params(params)

    def validate(self, query: AmiQuery, region: str | None) -> None:
        validate(query)

    def reconcile(self, ctx: Context, query: AmiQuery) -> Outcome:
        regions = list(query.regions or [ctx.region or ""])  # unset: the run's own region
        base_oses, versions = list(query.base_oses), list(query.kubernetes_versions)
        architectures = list(query.architectures)
        images: list[dict[str, Any]] = []
        for region in regions:
            images.extend(capa_images(ctx, region, query.owner, base_oses, versions, architectures))
            if query.eks_optimized:
                images.extend(eks_images(ctx, region, versions, architectures))
        images = newest_first(images)
        result: dict[str, Any] = {"images": images}
        if not images:
            searched = (
                f"owner {query.owner}, regions {', '.join(regions)}, base OS {', '.join(base_oses)}, "
                f"Kubernetes {', '.join(versions)}, architectures {', '.join(architectures)}"
                + (", EKS-optimised AL2023" if query.eks_optimized else "")
            )
            result["msg"] = f"no image found ({searched})"
            ctx.warn(result["msg"])
        return Outcome(None, result)


def capa_images(
    ctx: Context, region: str, owner: str, base_oses: list[str], versions: list[str], architectures: list[str]
) -> list[dict[str, Any]]:
    filters = [
        {"Name": "name", "Values": name_filter(base_oses, versions)},
        {"Name": "architecture", "Values": list(architectures)},
        {"Name": "state", "Values": ["available"]},
        {"Name": "virtualization-type", "Values": ["hvm"]},
    ]
    answer = ctx.client("ec2", region).describe_images(Owners=[owner], Filters=filters)
    return newest_per_group(region, answer.get("Images", []), base_oses, versions)


def eks_images(ctx: Context, region: str, versions: list[str], architectures: list[str]) -> list[dict[str, Any]]:
    wanted = eks_parameters(versions, architectures)
    ids = {image_id: wanted[name] for name, image_id in parameter_values(ctx, list(wanted), region).items()}
    if not ids:
        return []
    described = ctx.client("ec2", region).describe_images(ImageIds=sorted(ids)).get("Images", [])
    by_id = {image["ImageId"]: image for image in described}
    found = []
    for image_id, (version, arch) in ids.items():
        image = by_id.get(image_id, {"ImageId": image_id})
        found.append(image_entry(region, EKS_BASE_OS, version, arch, image))
    return found


def module_argument_spec() -> dict[str, Any]:
    """capa_ami_info's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        kubernetes_versions=dict(type="list", elements="str", required=True),
        base_oses=dict(
            type="list",
            elements="str",
            default=["centos-7", "ubuntu-24.04", "ubuntu-22.04", "amazon-2", "flatcar-stable", "rhel-8"],
        ),
        owner=dict(type="str", default="819546954734"),
        regions=dict(type="list", elements="str"),
        architectures=dict(type="list", elements="str", choices=["x86_64", "arm64"], default=["x86_64"]),
        eks_optimized=dict(type="bool", default=False),
    )
