# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the pure decisions of EKS managed node groups and Fargate profiles (no AWS calls).

CAPA's AWSManagedMachinePool and AWSFargateProfile (pkg/cloud/services/eks/{nodegroup,fargate}.go) as plain
functions: the options resolved to API requests, which field changes are made in place (``UpdateNodegroupConfig``,
``UpdateNodegroupVersion``) and which need a new node group, the label/taint/scaling deltas, one-minor version
steps, and the names of node groups, profiles and their IAM roles.

Fields AWS cannot change on a live node group (or profile) are folded into a *template hash* stored in a tag at
creation. A node group whose hash tag differs from the spec's is replaced by a new one (surge: create, wait
ACTIVE, delete the old one). Deciding by the tag rather than by reading the fields back keeps the decision
independent of the defaults AWS (or moto) fills in - an unset ``remoteAccess`` or ``diskSize`` with a launch
template - and those fields cannot drift, since AWS does not let anyone change them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..kernel.compare import Field, differences
from ..kernel.errors import SpecError
from ..kernel.hashing import template_hash
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.options import Option, given
from ..kernel.validation import at, check_tags
from ..workload.access import KubernetesApiSettings

NODE_GROUP_TAG = "clusterapi.aws/node-group"
FARGATE_PROFILE_TAG = "clusterapi.aws/fargate-profile"
HASH_TAG = "clusterapi.aws/template-hash"

DEFAULT_AMI_TYPE = "AL2023_x86_64_STANDARD"  # AL2 AMIs are deprecated (no releases after Kubernetes 1.32)
CUSTOM_AMI_TYPE = "CUSTOM"
DEFAULT_INSTANCE_TYPES = ("t3.large",)
DEFAULT_DISK_SIZE = 20

# The fields of a node group EKS cannot change in place (a new node group replaces it), declared once: the plan's
# comparison reads them, and the cluster spec's node groups take them (with the cluster's defaults).
INSTANCE_TYPES = Option(
    "instance_types", "Instance types.", type="list", elements="str", comparison="set", immutable=True
)
CAPACITY_TYPE = Option(
    "capacity_type", "Capacity type.", choices=("ON_DEMAND", "SPOT"), default="ON_DEMAND", immutable=True
)
AMI_TYPE = Option("ami_type", "AMI type.", immutable=True)
DISK_SIZE = Option("disk_size", "Root disk GiB.", type="int", immutable=True)
NODE_ROLE_ARN = Option("node_role_arn", "An existing node role; unset means one is created and owned.", immutable=True)
IMMUTABLE_FIELDS = (
    Field.of(INSTANCE_TYPES),
    Field.of(CAPACITY_TYPE),
    Field.of(AMI_TYPE),
    Field.of(DISK_SIZE),
    Field("subnets", comparison="set", immutable=True),
    Field("remote_access", immutable=True),
    Field("launch_template", immutable=True),
)
CAPACITY_TYPES = ("ON_DEMAND", "SPOT")
TAINT_EFFECTS = ("NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE")
# AWS's updateConfig when none was given (moto drops it on create, so an absent one reads as AWS's default).
AWS_DEFAULT_UPDATE_CONFIG = {"maxUnavailable": 1}

WORKER_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryReadOnly")
FARGATE_POLICIES = ("AmazonEKSFargatePodExecutionRolePolicy",)
NODE_TRUST = "ec2.amazonaws.com"
FARGATE_TRUST = "eks-fargate-pods.amazonaws.com"

# Node group and Fargate profile names: 1-63 (node group) / 1-100 (profile) letters, digits, '-' and '_',
# starting with a letter or digit. A pool name leaves room for '-' + 8 hash characters.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
NODEGROUP_NAME_MAX = 63
FARGATE_NAME_MAX = 100
SUFFIX_ROOM = 9
ROLE_NAME_MAX = 64
VERSION = re.compile(r"^v?(\d+)\.(\d+)$")

# Node group states (DescribeNodegroup status).
ACTIVE = "ACTIVE"
BUSY_STATES = ("CREATING", "UPDATING")
GONE_STATES = ("DELETING",)
FAILED_STATES = ("CREATE_FAILED", "DELETE_FAILED", "DEGRADED")

# How each option of a node group is reconciled (the unit tests walk this table).
REPLACE, CONFIG, VERSION_UPDATE, TAGS = "replace", "config", "version", "tags"
NODEGROUP_FIELDS = {
    "instance_types": REPLACE,
    "capacity_type": REPLACE,
    "ami_type": REPLACE,
    "disk_size": REPLACE,
    "remote_access": REPLACE,
    "node_role": REPLACE,
    "subnets": REPLACE,
    "launch_template": REPLACE,  # id or name; its version is updated in place
    "scaling": CONFIG,
    "labels": CONFIG,
    "taints": CONFIG,
    "update_config": CONFIG,
    "version": VERSION_UPDATE,
    "release_version": VERSION_UPDATE,
    "launch_template_version": VERSION_UPDATE,
    "tags": TAGS,
}


# names ---------------------------------------------------------------------------------------------------------------
def _short_hash(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:8]


def role_name(cluster: str, owner: str, kind: str) -> str:
    """``<cluster>-<owner>-<kind>-iam-service-role`` (CAPA's ``..._nodegroup-iam-service-role`` style), at most 64
    characters: a long prefix is cut and made unique again with a hash of the full one."""
    suffix = f"-{kind}-iam-service-role"
    prefix = f"{cluster}-{owner}"
    if len(prefix) + len(suffix) > ROLE_NAME_MAX:
        prefix = f"{prefix[: ROLE_NAME_MAX - len(suffix) - 9]}-{_short_hash(cluster, owner)}"
    return prefix + suffix


def member_name(base: str, digest: str, taken: Sequence[str], first: bool) -> str:
    """The first node group (profile) of a pool is named after the pool; a replacement ``<pool>-<4 hash chars>``
    (8 when those are taken by a different template, which a 4-character hash can collide into)."""
    if first and base not in taken:
        return base
    for length in (4, 8):
        candidate = f"{base}-{digest[:length]}"
        if candidate not in taken:
            return candidate
    raise SpecError("name", f"cannot find a free name for '{base}' (both hash-suffixed names are taken)")


def may_be_member(base: str, name: str) -> bool:
    """Whether ``name`` can be one of ``base``'s node groups (so only those are described)."""
    if name == base:
        return True
    rest = name[len(base) + 1 :] if name.startswith(base + "-") else ""
    return len(rest) in (4, 8) and all(c in "0123456789abcdef" for c in rest)


# versions ------------------------------------------------------------------------------------------------------------
def parse_version(value: str | None, field_name: str = "version") -> tuple[int, int] | None:
    if not value:
        return None
    match = VERSION.match(str(value).strip())
    if not match:
        raise SpecError(field_name, f"'{value}' is not a Kubernetes major.minor version such as 1.31")
    return int(match.group(1)), int(match.group(2))


def format_version(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def target_version(spec_version: str | None, cluster_version: str | None) -> tuple[str | None, str | None]:
    """The version node groups should reach: the spec's, never beyond the cluster's. Returns (version, warning)."""
    wanted = parse_version(spec_version)
    cluster = parse_version(cluster_version, "cluster version")
    if wanted is None:
        return (format_version(cluster) if cluster else None), None
    if cluster is not None and wanted > cluster:
        return format_version(cluster), (
            f"version {format_version(wanted)} is newer than the cluster's {format_version(cluster)}; "
            f"node groups stop at {format_version(cluster)}"
        )
    return format_version(wanted), None


def next_version(current: str | None, target: str | None) -> str | None:
    """One minor step from ``current`` towards ``target`` (None when there or when ``target`` is older)."""
    now, goal = parse_version(current, "node group version"), parse_version(target)
    if now is None or goal is None or now >= goal:
        return None
    if now[0] != goal[0]:
        return format_version(goal)
    return format_version((now[0], now[1] + 1))


# the node group spec -------------------------------------------------------------------------------------------------
@dataclass
class NodegroupSpec:
    """The module's options as plain values, defaults resolved."""

    state: str
    pool: str
    eks_cluster: str
    version: str | None
    release_version: str | None
    min_size: int
    max_size: int
    desired_size: int
    external_replicas: bool
    instance_types: list[str] | None
    capacity_type: str
    ami_type: str | None
    disk_size: int | None
    labels: dict[str, str]
    taints: list[dict[str, str]]
    update_config: dict[str, int]
    launch_template: dict[str, str] | None
    remote_access: dict[str, Any] | None
    node_role_arn: str | None
    subnets: list[dict[str, Any]]
    tags: dict[str, str] = field(default_factory=dict)
    # How the controller reaches the cluster's API, for the wait on the node group's Nodes.
    kubernetes_api: KubernetesApiSettings = KubernetesApiSettings()
    # Wait for the Nodes even when this run changes nothing: an earlier run created or changed the group without
    # waiting (the eks_node_groups role creates every node group first, then the Fargate profiles, then waits).
    await_nodes: bool = False

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> NodegroupSpec:
        """capa_eks_nodegroup's parameters as its argument spec validated them. What is unset depends on the launch
        template: without one, EKS's AMI type, instance types and disk size default here (CAPA's); with one, the
        template decides."""
        scaling = params["scaling"]
        template = params["launch_template"]
        template = {k: v for k, v in template.items() if v is not None} if template else None
        access = params["remote_access"]
        access = {k: v for k, v in access.items() if v} if access else None
        update = params["update_config"]
        if update["max_unavailable_percentage"] is not None:
            update_config = {"maxUnavailablePercentage": update["max_unavailable_percentage"]}
        else:
            update_config = {"maxUnavailable": update["max_unavailable"] or 1}
        ami_type, instance_types, disk_size = params["ami_type"], params["instance_types"], params["disk_size"]
        if not template:
            ami_type = ami_type or DEFAULT_AMI_TYPE
            instance_types = instance_types or list(DEFAULT_INSTANCE_TYPES)
            disk_size = disk_size or DEFAULT_DISK_SIZE
        return cls(
            state=params["state"],
            pool=params["name"],
            eks_cluster=given(params["eks_cluster_name"]) or params["cluster_name"],  # unset: the cluster's own name
            version=given(params["version"]),
            release_version=given(params["release_version"]),
            min_size=scaling["min_size"],
            max_size=scaling["max_size"],
            desired_size=scaling["desired_size"],
            external_replicas=params["externally_managed_replicas"],
            instance_types=list(instance_types) if instance_types else None,
            capacity_type=params["capacity_type"],
            ami_type=ami_type,
            disk_size=disk_size,
            labels={str(k): str(v) for k, v in params["labels"].items()},
            taints=[{"key": t["key"], "value": t["value"] or "", "effect": t["effect"]} for t in params["taints"]],
            update_config=update_config,
            launch_template=template or None,
            remote_access=access or None,
            node_role_arn=given(params["node_role_arn"]),
            subnets=[dict(s) for s in params["subnets"]],
            tags=dict(params["tags"]),
            kubernetes_api=KubernetesApiSettings.from_params(params["kubernetes_api"]),
            await_nodes=params["await_nodes"],
        )


def check_scaling(min_size: int, max_size: int, desired_size: int, where: str = "") -> None:
    """An EKS node group's scaling config, once (capa_eks_nodegroup and the cluster spec's node groups)."""
    field = at(where, "scaling")
    if min_size < 0 or max_size < 1 or min_size > max_size:
        raise SpecError(field, "needs 0 <= min_size <= max_size and max_size >= 1")
    if not min_size <= desired_size <= max_size:
        raise SpecError(f"{field}.desired_size", f"{desired_size} is outside {min_size}..{max_size}")


def validate_nodegroup(spec: NodegroupSpec) -> None:
    check_member_base(spec.pool, NODEGROUP_NAME_MAX)
    check_tags(spec.tags, "tags")
    version = parse_version(spec.version)
    if spec.release_version and version and not spec.release_version.startswith(f"{format_version(version)}."):
        raise SpecError("release_version", f"'{spec.release_version}' is not a release of version {spec.version}")
    check_scaling(spec.min_size, spec.max_size, spec.desired_size)
    if spec.launch_template:
        if bool(spec.launch_template.get("id")) == bool(spec.launch_template.get("name")):
            raise SpecError("launch_template", "needs exactly one of id and name")
        if spec.remote_access:
            raise SpecError("remote_access", "cannot be used with a launch template (put the key in the template)")
        if spec.disk_size:
            raise SpecError("disk_size", "cannot be used with a launch template (set the volume in the template)")
    if spec.remote_access and not spec.remote_access.get("ec2_ssh_key"):
        raise SpecError("remote_access.ec2_ssh_key", "is required when remote_access is given")
    if spec.ami_type == CUSTOM_AMI_TYPE and not spec.launch_template:
        raise SpecError("ami_type", "CUSTOM needs a launch template that names the AMI")
    for index, taint in enumerate(spec.taints):
        if not taint["key"]:
            raise SpecError(f"taints[{index}].key", "is required")
    seen = set()
    for index, taint in enumerate(spec.taints):
        identity = (taint["key"], taint["effect"])
        if identity in seen:
            raise SpecError(f"taints[{index}]", f"taint {taint['key']}:{taint['effect']} is given twice")
        seen.add(identity)
    if "maxUnavailablePercentage" in spec.update_config:
        if not 1 <= spec.update_config["maxUnavailablePercentage"] <= 100:
            raise SpecError("update_config.max_unavailable_percentage", "must be between 1 and 100")
    elif not 1 <= spec.update_config["maxUnavailable"] <= 100:
        raise SpecError("update_config.max_unavailable", "must be between 1 and 100")
    if spec.node_role_arn and not spec.node_role_arn.startswith("arn:"):
        raise SpecError("node_role_arn", f"'{spec.node_role_arn}' is not a role ARN")
    check_subnets(spec.subnets)


def check_member_base(name: str, limit: int) -> None:
    if not NAME.match(name or "") or len(name) > limit - SUFFIX_ROOM:
        raise SpecError(
            "name",
            f"'{name}' must be letters, digits, '-' and '_', starting with a letter or digit, at most "
            f"{limit - SUFFIX_ROOM} characters (replacements append '-' and a hash)",
        )


def check_subnets(subnets: Sequence[Mapping[str, Any]]) -> None:
    for index, subnet in enumerate(subnets):
        value = subnet.get("id")
        if not value or not (is_placeholder(value) or re.match(r"^subnet-[0-9a-f]{8,17}$", value)):
            raise SpecError(f"subnets[{index}].id", f"'{value}' is not a subnet id (as capa_subnet returns them)")


def private_subnet_ids(subnets: Sequence[Mapping[str, Any]]) -> list[str]:
    """The private subnets of a capa_subnet list (entries without ``is_public`` count as private)."""
    return [s["id"] for s in subnets if not s.get("is_public")]


def node_role_token(spec: NodegroupSpec, cluster: str) -> str:
    """What identifies the node role in the template hash: the given ARN, or the name of the role we create (an ARN
    we only learn after creating it would make check mode hash differently from the run that creates it)."""
    return spec.node_role_arn or f"owned:{role_name(cluster, spec.pool, 'nodegroup')}"


def immutable_definition(spec: NodegroupSpec, subnet_ids: Sequence[str], role_token: str) -> dict[str, Any]:
    """Everything AWS cannot change on a live node group, as the template hash sees it."""
    template = spec.launch_template or {}
    return {
        "instance_types": list(spec.instance_types or []),
        "capacity_type": spec.capacity_type,
        "ami_type": spec.ami_type,
        "disk_size": spec.disk_size,
        "remote_access": {
            "ec2_ssh_key": (spec.remote_access or {}).get("ec2_ssh_key"),
            "source_security_group_ids": frozenset((spec.remote_access or {}).get("source_security_group_ids") or []),
        }
        if spec.remote_access
        else None,
        "node_role": role_token,
        "subnets": frozenset(subnet_ids),
        "launch_template": {"id": template.get("id"), "name": template.get("name")} if template else None,
    }


def definition_hash(definition: Mapping[str, Any]) -> str:
    return template_hash(definition)


def create_request(
    spec: NodegroupSpec,
    name: str,
    subnet_ids: Sequence[str],
    role_arn: str,
    version: str | None,
    tags: Mapping[str, str],
    token: str,
) -> dict[str, Any]:
    """The ``CreateNodegroup`` request (CAPA's createNodegroup)."""
    request: dict[str, Any] = {
        "clusterName": spec.eks_cluster,
        "nodegroupName": name,
        "scalingConfig": {"minSize": spec.min_size, "maxSize": spec.max_size, "desiredSize": spec.desired_size},
        "subnets": list(subnet_ids),
        "nodeRole": role_arn,
        "capacityType": spec.capacity_type,
        "labels": dict(spec.labels),
        "taints": [dict(t) for t in spec.taints],
        "updateConfig": dict(spec.update_config),
        "tags": dict(tags),
        "clientRequestToken": token,
    }
    if spec.instance_types:
        request["instanceTypes"] = list(spec.instance_types)
    if spec.ami_type and spec.ami_type != CUSTOM_AMI_TYPE:
        request["amiType"] = spec.ami_type
    if spec.disk_size:
        request["diskSize"] = spec.disk_size
    if version:
        request["version"] = version
        if spec.release_version and spec.release_version.startswith(version + "."):
            request["releaseVersion"] = spec.release_version
    if spec.launch_template:
        request["launchTemplate"] = dict(spec.launch_template)
    if spec.remote_access:
        access: dict[str, Any] = {"ec2SshKey": spec.remote_access["ec2_ssh_key"]}
        if spec.remote_access.get("source_security_group_ids"):
            access["sourceSecurityGroups"] = list(spec.remote_access["source_security_group_ids"])
        request["remoteAccess"] = access
    return request


def predicted_nodegroup(request: Mapping[str, Any]) -> dict[str, Any]:
    """What check mode assumes CreateNodegroup answers (ACTIVE, so the rest of the plan runs as it would)."""
    name = request["nodegroupName"]
    return {
        "nodegroupName": name,
        "nodegroupArn": placeholder("nodegroup", name),
        "status": ACTIVE,
        "version": request.get("version"),
        "releaseVersion": request.get("releaseVersion"),
        "scalingConfig": dict(request["scalingConfig"]),
        "instanceTypes": list(request.get("instanceTypes") or []),
        "capacityType": request.get("capacityType"),
        "amiType": request.get("amiType"),
        "labels": dict(request.get("labels") or {}),
        "taints": list(request.get("taints") or []),
        "nodeRole": request.get("nodeRole"),
        "subnets": list(request.get("subnets") or []),
        "diskSize": request.get("diskSize"),
        "remoteAccess": request.get("remoteAccess"),
        "launchTemplate": request.get("launchTemplate"),
        "updateConfig": request.get("updateConfig"),
        "tags": dict(request.get("tags") or {}),
    }


def immutable_differences(definition: Mapping[str, Any], observed: Mapping[str, Any]) -> list[str]:
    """The immutable fields whose AWS value visibly differs from the spec (for the reason of a replacement).

    Only a reading aid: the decision is the hash tag's. Fields the spec leaves unset are not compared, since AWS
    fills in its own defaults for them; each compares as :data:`IMMUTABLE_FIELDS` declares it.
    """
    access = observed.get("remoteAccess") or {}
    template = observed.get("launchTemplate") or {}
    wanted_template = definition.get("launch_template") or {}
    seen = {
        "instance_types": observed.get("instanceTypes"),
        "capacity_type": observed.get("capacityType"),
        "ami_type": observed.get("amiType"),
        "disk_size": observed.get("diskSize"),
        "subnets": observed.get("subnets") or [],
        "remote_access": {
            "ec2_ssh_key": access.get("ec2SshKey"),
            "source_security_group_ids": frozenset(access.get("sourceSecurityGroups") or []),
        },
        "launch_template": {k: template.get(k) if wanted_template.get(k) else None for k in ("id", "name")},
    }
    wanted = {**definition, "subnets": definition.get("subnets")}
    changed = list(differences(IMMUTABLE_FIELDS, wanted, seen).immutable)
    role = definition.get("node_role")
    if role is not None and not _same_role(str(role), str(observed.get("nodeRole") or "")):
        changed.append("node_role")
    return [name for name in definition if name in changed]


def _same_role(wanted: str, current: str) -> bool:
    """``owned:<name>`` is the role the module made for the group, found by its name in AWS's ARN."""
    if wanted.startswith("owned:"):
        return current.endswith(f"/{wanted.split(':', 1)[1]}")
    return wanted == current


# in-place updates ----------------------------------------------------------------------------------------------------
def label_changes(current: Mapping[str, str] | None, desired: Mapping[str, str]) -> dict[str, Any] | None:
    current = current or {}
    add = {k: v for k, v in desired.items() if current.get(k) != v}
    remove = sorted(k for k in current if k not in desired)
    change: dict[str, Any] = {}
    if add:
        change["addOrUpdateLabels"] = add
    if remove:
        change["removeLabels"] = remove
    return change or None


def _taint_key(taint: Mapping[str, Any]) -> tuple[str, str]:
    # Kubernetes identifies a taint by key and effect; the value is what addOrUpdate changes.
    return taint["key"], taint["effect"]


def taint_changes(current: Sequence[Mapping[str, Any]] | None, desired: Sequence[Mapping[str, Any]]) -> dict | None:
    now = {_taint_key(t): t.get("value") or "" for t in current or []}
    wanted = {_taint_key(t): t.get("value") or "" for t in desired}
    add = [{"key": k, "value": v, "effect": e} for (k, e), v in wanted.items() if now.get((k, e)) != v]
    remove = [{"key": k, "value": v, "effect": e} for (k, e), v in now.items() if (k, e) not in wanted]
    for taint in add + remove:
        if not taint["value"]:
            del taint["value"]
    change: dict[str, Any] = {}
    if add:
        change["addOrUpdateTaints"] = add
    if remove:
        change["removeTaints"] = remove
    return change or None


def scaling_change(current: Mapping[str, int] | None, spec: NodegroupSpec) -> dict[str, int] | None:
    """The scaling config to send, or None. With externally managed replicas the desired size is the
    autoscaler's: it is never sent after creation (CAPA omits it)."""
    current = current or {}
    wanted = {"minSize": spec.min_size, "maxSize": spec.max_size}
    if not spec.external_replicas:
        wanted["desiredSize"] = spec.desired_size
    if all(current.get(k) == v for k, v in wanted.items()):
        return None
    return wanted


def update_config_change(current: Mapping[str, int] | None, desired: Mapping[str, int]) -> dict[str, int] | None:
    current = {k: v for k, v in (current or AWS_DEFAULT_UPDATE_CONFIG).items() if v is not None}
    return None if current == dict(desired) else dict(desired)


def config_update(observed: Mapping[str, Any], spec: NodegroupSpec) -> tuple[dict[str, Any], list[str]]:
    """The ``UpdateNodegroupConfig`` fields to send (empty when nothing differs) and the reasons."""
    request: dict[str, Any] = {}
    labels = label_changes(observed.get("labels"), spec.labels)
    if labels:
        request["labels"] = labels
    taints = taint_changes(observed.get("taints"), spec.taints)
    if taints:
        request["taints"] = taints
    scaling = scaling_change(observed.get("scalingConfig"), spec)
    if scaling:
        request["scalingConfig"] = scaling
    update = update_config_change(observed.get("updateConfig"), spec.update_config)
    if update:
        request["updateConfig"] = update
    names = {"labels": "labels", "taints": "taints", "scalingConfig": "scaling", "updateConfig": "update_config"}
    return request, [names[k] for k in request]


def version_update(observed: Mapping[str, Any], spec: NodegroupSpec, target: str | None) -> tuple[dict, str] | None:
    """The next ``UpdateNodegroupVersion`` (CAPA's order: launch template version, else one minor version step,
    else the AMI release version) and its reason; None when the node group is where the spec wants it."""
    template = observed.get("launchTemplate") or {}
    wanted_template = spec.launch_template or {}
    if wanted_template.get("version") and str(template.get("version")) != str(wanted_template["version"]):
        reference = {k: v for k, v in template.items() if k in ("id", "name") and v} or {
            k: v for k, v in wanted_template.items() if k in ("id", "name")
        }
        return (
            {"launchTemplate": {**reference, "version": str(wanted_template["version"])}},
            f"launch template version {template.get('version')} -> {wanted_template['version']}",
        )
    step = next_version(observed.get("version"), target)
    if step:
        request: dict[str, Any] = {"version": step}
        if step == target and spec.release_version and spec.release_version.startswith(step + "."):
            request["releaseVersion"] = spec.release_version
        return request, f"version {observed.get('version')} -> {step}"
    current = observed.get("version")
    if spec.release_version and observed.get("releaseVersion") != spec.release_version:
        if current and spec.release_version.startswith(f"{current}."):
            return (
                {"version": current, "releaseVersion": spec.release_version},
                f"release version {observed.get('releaseVersion')} -> {spec.release_version}",
            )
    return None


def after_version_update(observed: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """What check mode assumes a node group looks like once an update is through."""
    after = dict(observed)
    if "version" in request:
        after["version"] = request["version"]
    if "releaseVersion" in request:
        after["releaseVersion"] = request["releaseVersion"]
    if "launchTemplate" in request:
        after["launchTemplate"] = {**(observed.get("launchTemplate") or {}), **request["launchTemplate"]}
    return after


def after_config_update(observed: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    after = dict(observed)
    labels = dict(observed.get("labels") or {})
    change = request.get("labels") or {}
    labels.update(change.get("addOrUpdateLabels") or {})
    for key in change.get("removeLabels") or []:
        labels.pop(key, None)
    after["labels"] = labels
    taints = {_taint_key(t): t for t in observed.get("taints") or []}
    change = request.get("taints") or {}
    for taint in change.get("removeTaints") or []:
        taints.pop(_taint_key(taint), None)
    for taint in change.get("addOrUpdateTaints") or []:
        taints[_taint_key(taint)] = taint
    after["taints"] = list(taints.values())
    if "scalingConfig" in request:
        after["scalingConfig"] = {**(observed.get("scalingConfig") or {}), **request["scalingConfig"]}
    if "updateConfig" in request:
        after["updateConfig"] = dict(request["updateConfig"])
    return after


def summary(observed: Mapping[str, Any] | None, replaced_from: Sequence[str] = ()) -> dict[str, Any] | None:
    """The ``nodegroup`` result: AWS's current values (scaling included, so an autoscaler's desired size shows)."""
    if not observed:
        return None
    scaling = observed.get("scalingConfig") or {}
    return {
        "name": observed.get("nodegroupName"),
        "arn": observed.get("nodegroupArn"),
        "status": observed.get("status"),
        "version": observed.get("version"),
        "release_version": observed.get("releaseVersion"),
        "scaling": {
            "min_size": scaling.get("minSize"),
            "max_size": scaling.get("maxSize"),
            "desired_size": scaling.get("desiredSize"),
        },
        "instance_types": list(observed.get("instanceTypes") or []),
        "capacity_type": observed.get("capacityType"),
        "ami_type": observed.get("amiType"),
        "labels": dict(observed.get("labels") or {}),
        "taints": [dict(t) for t in observed.get("taints") or []],
        "node_role_arn": observed.get("nodeRole"),
        "subnets": list(observed.get("subnets") or []),
        "replaced_from": list(replaced_from),
    }


# Fargate profiles ----------------------------------------------------------------------------------------------------
@dataclass
class FargateSpec:
    state: str
    base: str
    eks_cluster: str
    role_arn: str | None
    subnets: list[dict[str, Any]]
    selectors: list[dict[str, Any]]
    tags: dict[str, str]

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> FargateSpec:
        selectors = []
        for selector in params["selectors"]:
            entry: dict[str, Any] = {"namespace": selector["namespace"]}
            if selector.get("labels"):
                entry["labels"] = {str(k): str(v) for k, v in selector["labels"].items()}
            selectors.append(entry)
        return cls(
            state=params["state"],
            base=params["name"],
            eks_cluster=given(params["eks_cluster_name"]) or params["cluster_name"],  # unset: the cluster's own name
            role_arn=given(params["pod_execution_role_arn"]),
            subnets=[dict(s) for s in params["subnets"]],
            selectors=selectors,
            tags=dict(params["tags"]),
        )


def validate_fargate(spec: FargateSpec) -> None:
    check_member_base(spec.base, FARGATE_NAME_MAX)
    check_tags(spec.tags, "tags")
    if spec.state == "present" and not spec.selectors:
        raise SpecError("selectors", "a Fargate profile needs at least one selector")
    if len(spec.selectors) > 5:
        raise SpecError("selectors", "AWS allows at most 5 selectors per profile")
    for index, selector in enumerate(spec.selectors):
        if not selector["namespace"]:
            raise SpecError(f"selectors[{index}].namespace", "is required")
        if len(selector.get("labels") or {}) > 5:
            raise SpecError(f"selectors[{index}].labels", "AWS allows at most 5 labels per selector")
    if spec.role_arn and not spec.role_arn.startswith("arn:"):
        raise SpecError("pod_execution_role_arn", f"'{spec.role_arn}' is not a role ARN")
    for index, subnet in enumerate(spec.subnets):
        if subnet.get("is_public"):
            raise SpecError(f"subnets[{index}]", "Fargate profiles take private subnets only")
    check_subnets(spec.subnets)


def fargate_role_token(spec: FargateSpec, cluster: str) -> str:
    return spec.role_arn or f"owned:{role_name(cluster, spec.base, 'fargate')}"


def fargate_definition(spec: FargateSpec, subnet_ids: Sequence[str], role_token: str) -> dict[str, Any]:
    """Every field of a profile is immutable: all of them make the hash."""
    return {
        "pod_execution_role": role_token,
        "subnets": frozenset(subnet_ids),
        "selectors": sorted(
            (
                {"namespace": s["namespace"], "labels": dict(sorted((s.get("labels") or {}).items()))}
                for s in spec.selectors
            ),
            key=lambda s: (s["namespace"], sorted(s["labels"].items())),
        ),
    }


def fargate_summary(observed: Mapping[str, Any] | None, replaced_from: Sequence[str] = ()) -> dict[str, Any] | None:
    if not observed:
        return None
    return {
        "name": observed.get("fargateProfileName"),
        "arn": observed.get("fargateProfileArn"),
        "status": observed.get("status"),
        "selectors": [dict(s) for s in observed.get("selectors") or []],
        "subnets": list(observed.get("subnets") or []),
        "pod_execution_role_arn": observed.get("podExecutionRoleArn"),
        "replaced_from": list(replaced_from),
    }
