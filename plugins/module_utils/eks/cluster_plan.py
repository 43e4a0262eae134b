# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: pure decisions of the EKS control-plane tier (no AWS call here, so all of it is unit-tested).

Input checks, the CreateCluster request, version steps, the UpdateClusterConfig payloads for endpoint access,
logging and access config, the encryption rule, the addon plan, aws-auth mappings and access entries - each one
function from the spec (:class:`.eks_cluster_spec.EksClusterSpec`) and what DescribeCluster / DescribeAddon
answered to what should be sent.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..kernel.conditions import condition
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.operations import is_placeholder, placeholder
from .eks_cluster_spec import EksClusterSpec

EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
VERSION = re.compile(r"^v?(\d+)\.(\d+)$")
ARN = re.compile(r"^arn:aws[a-z-]*:")
THUMBPRINT = re.compile(r"^[0-9a-fA-F]{40}$")

# Option name -> EKS log type.
LOG_TYPES = {
    "api_server": "api",
    "audit": "audit",
    "authenticator": "authenticator",
    "controller_manager": "controllerManager",
    "scheduler": "scheduler",
}
# Authentication modes can only move towards API (AWS refuses the way back).
AUTH_MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP", "API")
CONFLICT_RESOLUTION = {"overwrite": "OVERWRITE", "none": "NONE", "preserve": "PRESERVE"}
NODE_USERNAME = "system:node:{{EC2PrivateDNSName}}"
NODE_GROUPS = ["system:bootstrappers", "system:nodes"]
ANYWHERE = "0.0.0.0/0"
# A cluster that serves requests (an update in progress does not stop it).
READY_STATUSES = ("ACTIVE", "UPDATING")
# The placeholders CAPA's trust-policy template leaves for the service account.
IRSA_SUBJECT = "system:serviceaccount:${SERVICE_ACCOUNT_NAMESPACE}:${SERVICE_ACCOUNT_NAME}"


# input -------------------------------------------------------------------------------------------------------
def parse_version(value: str, field_name: str = "version") -> tuple[int, int]:
    match = VERSION.match(str(value or ""))
    if not match:
        raise SpecError(field_name, f"'{value}' is not a Kubernetes version major.minor (for example 1.31)")
    return int(match.group(1)), int(match.group(2))


def format_version(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def check_eks_name(name: str, field_name: str = "name") -> None:
    if not EKS_NAME.match(name or ""):
        raise SpecError(
            field_name, f"'{name}' must be 1-100 letters, digits, '-' or '_', starting with a letter or digit"
        )


def subnet_ids(subnets: Sequence[Any], restrict_private: bool) -> list[str]:
    """Ids from capa_subnet's list (dicts, extra keys ignored) or plain ids; only private ones if restricted."""
    ids = []
    for subnet in subnets:
        if isinstance(subnet, Mapping):
            if restrict_private and subnet.get("is_public"):
                continue
            ids.append(str(subnet.get("id") or ""))
        else:
            ids.append(str(subnet))
    return ids


def check_subnets(subnets: Sequence[Any], restrict_private: bool) -> None:
    for index, subnet in enumerate(subnets):
        value = subnet.get("id") if isinstance(subnet, Mapping) else subnet
        if not value or not (is_placeholder(value) or str(value).startswith("subnet-")):
            raise SpecError(f"subnets[{index}]", f"'{value}' is not a subnet id")
    chosen = [s for s in subnets if not (restrict_private and isinstance(s, Mapping) and s.get("is_public"))]
    if len(chosen) < 2:
        which = "private subnets" if restrict_private else "subnets"
        raise SpecError("subnets", f"EKS needs at least two {which} in two availability zones; got {len(chosen)}")
    zones = [s.get("availability_zone") for s in chosen if isinstance(s, Mapping)]
    if len(zones) == len(chosen) and all(zones) and len(set(zones)) < 2:
        raise SpecError("subnets", f"EKS needs subnets in at least two availability zones; all are in {zones[0]}")


def check_arn(value: str | None, field_name: str, kind: str = "") -> None:
    if value and not is_placeholder(value) and not ARN.match(value):
        raise SpecError(field_name, f"'{value}' is not an ARN{' of ' + kind if kind else ''}")


def normalise_cidrs(cidrs: Iterable[str], field_name: str = "endpoint_access.public_cidrs") -> list[str]:
    out = set()
    for index, cidr in enumerate(cidrs):
        try:
            out.add(str(ipaddress.ip_network(cidr, strict=False)))
        except ValueError as e:
            raise SpecError(f"{field_name}[{index}]", f"'{cidr}' is not a CIDR block ({e})") from None
    return sorted(out)


def check_addons(addons: Sequence[Mapping[str, Any]]) -> None:
    seen = set()
    for index, addon in enumerate(addons):
        name = addon["name"]
        if name in seen:
            raise SpecError(f"addons[{index}].name", f"'{name}' is listed twice")
        seen.add(name)
        if addon.get("configuration"):
            try:
                json.loads(addon["configuration"])
            except ValueError as e:
                raise SpecError(f"addons[{index}].configuration", f"is not valid JSON ({e})") from None
        check_arn(addon.get("service_account_role_arn"), f"addons[{index}].service_account_role_arn", "an IAM role")


def check_mappings(mappings: Sequence[Mapping[str, Any]], key: str, field_name: str) -> None:
    for index, mapping in enumerate(mappings):
        check_arn(mapping.get(key), f"{field_name}[{index}].{key}")
        if not mapping.get(key):
            raise SpecError(f"{field_name}[{index}].{key}", "is required")
        check_arn(mapping.get("policy_arn"), f"{field_name}[{index}].policy_arn", "an EKS access policy")


def validate_spec(spec: EksClusterSpec) -> None:
    """Every input check of ``capa_eks_cluster``, before any AWS request (a deleted cluster needs only its name)."""
    check_eks_name(spec.name)
    if not spec.output_dir:
        raise SpecError("output_dir", "must not be empty")
    if spec.state == "absent":
        return
    if spec.version:
        parse_version(spec.version)
    check_arn(spec.role_arn, "role_arn", "an IAM role")
    check_subnets(spec.subnets, spec.restrict_private_subnets)
    for index, group in enumerate(spec.security_group_ids):
        if not (is_placeholder(group) or str(group).startswith("sg-")):
            raise SpecError(f"security_group_ids[{index}]", f"'{group}' is not a security group id")
    desired_endpoint(spec.endpoint_access)
    check_encryption(spec.encryption_config or {})
    check_addons(spec.addons or [])
    check_mappings(spec.map_roles, "rolearn", "iam_authenticator.map_roles")
    check_mappings(spec.map_users, "userarn", "iam_authenticator.map_users")
    for index, arn in enumerate(spec.node_role_arns):
        check_arn(arn, f"node_role_arns[{index}]", "an IAM role")
    if spec.oidc_thumbprint and not THUMBPRINT.match(spec.oidc_thumbprint):
        raise SpecError("oidc_thumbprint", "must be the 40 hex digits of a SHA-1 fingerprint")


def check_encryption(encryption: Mapping[str, Any]) -> None:
    if encryption.get("resources") and not encryption.get("provider"):
        raise SpecError("encryption_config.provider", "is required (a KMS key ARN or alias)")
    if encryption.get("provider") and not str(encryption["provider"]).startswith(("arn:", "alias/")):
        raise SpecError("encryption_config.provider", f"'{encryption['provider']}' is not a KMS key ARN or alias")


# version -----------------------------------------------------------------------------------------------------
def version_steps(current: str, desired: str | None) -> list[str]:
    """The UpdateClusterVersion targets from ``current`` to ``desired``, one minor at a time (CAPA's rule).

    A downgrade is refused: EKS cannot go back, and CAPA's webhook rejects it.
    """
    if not desired:
        return []
    have, want = parse_version(current, "cluster version"), parse_version(desired)
    if want < have:
        raise SpecError(
            "version", f"{desired} is older than the cluster's {format_version(have)}; EKS cannot be downgraded"
        )
    if want[0] != have[0]:
        raise SpecError("version", f"cannot upgrade across major versions ({format_version(have)} -> {desired})")
    return [format_version((have[0], minor)) for minor in range(have[1] + 1, want[1] + 1)]


# the control plane -------------------------------------------------------------------------------------------
def create_request(spec: EksClusterSpec, role_arn: str, tags: Mapping[str, str], token: str) -> dict[str, Any]:
    """The ``CreateCluster`` request (CAPA's createCluster)."""
    request: dict[str, Any] = {
        "name": spec.name,
        "roleArn": role_arn,
        "resourcesVpcConfig": {
            "subnetIds": subnet_ids(spec.subnets, spec.restrict_private_subnets),
            "securityGroupIds": list(spec.security_group_ids),
            **desired_endpoint(spec.endpoint_access),
        },
        "logging": logging_config(desired_log_types(spec.logging)),
        "accessConfig": {
            "authenticationMode": spec.authentication_mode,
            "bootstrapClusterCreatorAdminPermissions": spec.bootstrap_cluster_creator_admin_permissions,
        },
        "tags": dict(tags),
        "clientRequestToken": token,
    }
    if spec.version:
        request["version"] = spec.version
    encryption = desired_encryption(spec.encryption_config)
    if encryption:
        request["encryptionConfig"] = encryption
    return request


def predicted_cluster(request: Mapping[str, Any]) -> dict[str, Any]:
    """What check mode assumes CreateCluster answers (no endpoint, CA or issuer until EKS has made it)."""
    return {
        "name": request["name"],
        "arn": placeholder("eks", request["name"]),
        "status": "CREATING",
        "version": request.get("version"),
        "roleArn": request["roleArn"],
        "resourcesVpcConfig": request["resourcesVpcConfig"],
        "logging": request["logging"],
        "encryptionConfig": request.get("encryptionConfig", []),
        "accessConfig": {"authenticationMode": request["accessConfig"]["authenticationMode"]},
        "tags": request["tags"],
    }


def is_planned(cluster: Mapping[str, Any] | None) -> bool:
    """True while the cluster only exists in this check run's plan (nothing of it can be read from AWS)."""
    return cluster is None or is_placeholder(cluster.get("arn"))


def issuer_of(cluster: Mapping[str, Any] | None) -> str | None:
    return (((cluster or {}).get("identity") or {}).get("oidc") or {}).get("issuer")


# What one update of a live cluster changes; control_plane sends each with its API call.
VERSION_UPDATE, CONFIG_UPDATE, ENCRYPTION_UPDATE = "version", "config", "encryption"


@dataclass(frozen=True)
class ClusterUpdate:
    """One update of a live cluster: EKS runs one at a time, each awaited before the next."""

    kind: str  # VERSION_UPDATE | CONFIG_UPDATE | ENCRYPTION_UPDATE
    request: dict[str, Any]
    reason: str


def cluster_updates(spec: EksClusterSpec, cluster: Mapping[str, Any]) -> list[ClusterUpdate]:
    """Version steps first (one minor each), then endpoint access, logging, access config and encryption."""
    name = spec.name
    updates = [
        ClusterUpdate(VERSION_UPDATE, {"name": name, "version": step}, f"version {step}")
        for step in version_steps(cluster["version"], spec.version)
    ]
    endpoint = endpoint_update(cluster.get("resourcesVpcConfig") or {}, spec.endpoint_access)
    if endpoint:
        updates.append(
            ClusterUpdate(CONFIG_UPDATE, {"name": name, "resourcesVpcConfig": endpoint}, "endpoint access differs")
        )
    logging = logging_update(cluster.get("logging"), spec.logging)
    if logging:
        updates.append(ClusterUpdate(CONFIG_UPDATE, {"name": name, "logging": logging}, "logging differs"))
    access = access_config_update(cluster, spec.authentication_mode)
    if access:
        updates.append(
            ClusterUpdate(CONFIG_UPDATE, {"name": name, "accessConfig": access}, "authentication mode differs")
        )
    encryption = encryption_to_associate(cluster.get("encryptionConfig"), spec.encryption_config)
    if encryption:
        updates.append(
            ClusterUpdate(ENCRYPTION_UPDATE, {"clusterName": name, "encryptionConfig": encryption}, "encryption added")
        )
    return updates


def predicted_after_updates(cluster: Mapping[str, Any], updates: Sequence[ClusterUpdate]) -> dict[str, Any]:
    """The cluster as check mode assumes it after ``updates``."""
    predicted = dict(cluster)
    for update in updates:
        request = update.request
        if update.kind == VERSION_UPDATE:
            predicted["version"] = request["version"]
        elif "resourcesVpcConfig" in request:
            predicted["resourcesVpcConfig"] = {
                **(cluster.get("resourcesVpcConfig") or {}),
                **request["resourcesVpcConfig"],
            }
        elif "logging" in request:
            predicted["logging"] = request["logging"]
        elif "accessConfig" in request:
            predicted["accessConfig"] = request["accessConfig"]
        elif "encryptionConfig" in request:
            predicted["encryptionConfig"] = request["encryptionConfig"]
    return predicted


def deleting_condition() -> dict[str, Any]:
    """``EKSControlPlaneReady`` of a cluster whose deletion was asked and not waited for."""
    return condition(False, "Deleting", "status DELETING")


def ready_condition(cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    """CAPA's ``EKSControlPlaneReady``."""
    status = (cluster or {}).get("status")
    if status in READY_STATUSES:
        return condition(True, "", f"status {status}")
    reason = "EKSControlPlaneCreating" if status in ("CREATING", None) else "EKSControlPlaneReconciliationFailed"
    return condition(False, reason, f"status {status or 'not created'}")


# endpoint access, logging, access config -------------------------------------------------------------------------
def desired_endpoint(endpoint: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "endpointPublicAccess": bool(endpoint["public"]),
        "endpointPrivateAccess": bool(endpoint["private"]),
        "publicAccessCidrs": normalise_cidrs(endpoint["public_cidrs"] or [ANYWHERE]),
    }


def observed_endpoint(vpc_config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "endpointPublicAccess": bool(vpc_config.get("endpointPublicAccess", True)),
        "endpointPrivateAccess": bool(vpc_config.get("endpointPrivateAccess", False)),
        "publicAccessCidrs": normalise_cidrs(vpc_config.get("publicAccessCidrs") or [ANYWHERE], "observed"),
    }


def endpoint_update(vpc_config: Mapping[str, Any], endpoint: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``resourcesVpcConfig`` for UpdateClusterConfig, or ``None`` when endpoint access matches."""
    want = desired_endpoint(endpoint)
    have = observed_endpoint(vpc_config)
    if not want["endpointPublicAccess"]:
        # AWS keeps (and ignores) the CIDR list of a private-only endpoint; it is no drift.
        have["publicAccessCidrs"] = want["publicAccessCidrs"]
    if want == have:
        return None
    return want


def desired_log_types(logging: Mapping[str, Any]) -> set[str]:
    return {LOG_TYPES[key] for key, on in (logging or {}).items() if on and key in LOG_TYPES}


def observed_log_types(cluster_logging: Mapping[str, Any] | None) -> set[str]:
    enabled: set[str] = set()
    for entry in (cluster_logging or {}).get("clusterLogging", []):
        if entry.get("enabled"):
            enabled.update(entry.get("types", []))
    return enabled


def logging_config(enabled: set[str]) -> dict[str, Any]:
    disabled = sorted(set(LOG_TYPES.values()) - enabled)
    entries = []
    if enabled:
        entries.append({"types": sorted(enabled), "enabled": True})
    if disabled:
        entries.append({"types": disabled, "enabled": False})
    return {"clusterLogging": entries}


def logging_update(cluster_logging: Mapping[str, Any] | None, logging: Mapping[str, Any]) -> dict[str, Any] | None:
    want = desired_log_types(logging)
    return None if observed_log_types(cluster_logging) == want else logging_config(want)


def observed_auth_mode(cluster: Mapping[str, Any]) -> str:
    # Clusters made before access entries existed answer without accessConfig: they are CONFIG_MAP.
    return (cluster.get("accessConfig") or {}).get("authenticationMode") or "CONFIG_MAP"


def access_config_update(cluster: Mapping[str, Any], wanted_mode: str) -> dict[str, Any] | None:
    have = observed_auth_mode(cluster)
    if have == wanted_mode:
        return None
    if AUTH_MODES.index(wanted_mode) < AUTH_MODES.index(have):
        raise SpecError(
            "access_config.authentication_mode",
            f"the cluster uses {have}; EKS can only move towards API ({' -> '.join(AUTH_MODES)}), not to {wanted_mode}",
        )
    return {"authenticationMode": wanted_mode}


# encryption --------------------------------------------------------------------------------------------------
def desired_encryption(encryption: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    if not encryption or not encryption.get("provider"):
        return []
    return [
        {
            "resources": sorted(encryption.get("resources") or ["secrets"]),
            "provider": {"keyArn": encryption["provider"]},
        }
    ]


def encryption_to_associate(
    observed: Sequence[Mapping[str, Any]] | None, encryption: Mapping[str, Any] | None
) -> list[dict[str, Any]] | None:
    """The config for AssociateEncryptionConfig, ``None`` when nothing is to do.

    EKS encryption can be added to a cluster but never changed or removed (CAPA refuses the same).
    """
    want = desired_encryption(encryption)
    have: list[dict[str, Any]] = [
        {"resources": sorted(e.get("resources", [])), "provider": {"keyArn": (e.get("provider") or {}).get("keyArn")}}
        for e in observed or []
    ]
    if not have:
        return want or None
    if not want:
        raise ReconcileError(
            f"the cluster encrypts {', '.join(have[0]['resources'])} with {have[0]['provider']['keyArn']}; "
            "EKS encryption cannot be removed (set encryption_config to that provider)"
        )
    if want != have:
        raise ReconcileError(
            f"the cluster encrypts {', '.join(have[0]['resources'])} with {have[0]['provider']['keyArn']}; "
            f"EKS encryption cannot be changed to {want[0]['provider']['keyArn']}"
        )
    return None


# addons ------------------------------------------------------------------------------------------------------
@dataclass
class AddonAction:
    action: str  # create | update | delete
    name: str
    reason: str
    request: dict[str, Any] = field(default_factory=dict)


def _same_configuration(have: str | None, want: str | None) -> bool:
    if not want:
        return True
    try:
        return json.loads(have or "{}") == json.loads(want)
    except ValueError:
        return (have or "") == want


def plan_addons(
    wanted: Sequence[Mapping[str, Any]], observed: Mapping[str, Mapping[str, Any]], owned: set[str]
) -> tuple[list[AddonAction], list[str]]:
    """Addon actions, and the names of addons we did not install that the spec also names (left alone).

    ``observed`` is DescribeAddon's answer per installed addon; ``owned`` the installed names carrying our tag.
    Installed addons we own and the spec dropped are deleted; addons we did not install never are.
    """
    actions: list[AddonAction] = []
    foreign: list[str] = []
    for spec in wanted:
        name = spec["name"]
        request = {
            "addonName": name,
            "resolveConflicts": CONFLICT_RESOLUTION[spec.get("conflict_resolution") or "overwrite"],
        }
        if spec.get("version"):
            request["addonVersion"] = spec["version"]
        if spec.get("configuration"):
            request["configurationValues"] = spec["configuration"]
        if spec.get("service_account_role_arn"):
            request["serviceAccountRoleArn"] = spec["service_account_role_arn"]
        have = observed.get(name)
        if have is None:
            actions.append(AddonAction("create", name, "missing", request))
            continue
        if name not in owned:
            foreign.append(name)
            continue
        differs = []
        if spec.get("version") and have.get("addonVersion") != spec["version"]:
            differs.append(f"version {have.get('addonVersion')} -> {spec['version']}")
        if not _same_configuration(have.get("configurationValues"), spec.get("configuration")):
            differs.append("configuration")
        role = spec.get("service_account_role_arn")
        if role and have.get("serviceAccountRoleArn") != role:
            differs.append("service account role")
        if differs:
            actions.append(AddonAction("update", name, ", ".join(differs), request))
    names = {spec["name"] for spec in wanted}
    for name in sorted(owned - names):
        actions.append(AddonAction("delete", name, "installed by us, no longer in the spec", {"addonName": name}))
    return actions, foreign


# aws-auth and access entries -----------------------------------------------------------------------------------
def aws_auth_mappings(
    map_roles: Sequence[Mapping[str, Any]], map_users: Sequence[Mapping[str, Any]], node_role_arns: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """mapRoles (node roles first, as CAPA appends them, then the user's; a user mapping of the same role wins).

    A role's ARN is written without its IAM path (:func:`aws_auth_role_arn`)."""
    roles: dict[str, dict[str, Any]] = {}
    for arn in map(aws_auth_role_arn, node_role_arns):
        roles[arn] = {"rolearn": arn, "username": NODE_USERNAME, "groups": list(NODE_GROUPS)}
    for mapping in map_roles:
        arn = aws_auth_role_arn(mapping["rolearn"])
        roles[arn] = {**_mapping(mapping, "rolearn"), "rolearn": arn}
    users = [_mapping(m, "userarn") for m in map_users]
    return list(roles.values()), users


def aws_auth_role_arn(arn: str) -> str:
    """A role's ARN as aws-auth matches it: without the role's IAM path
    (``arn:aws:iam::123456789012:role/teams/ops/nodes`` -> ``...:role/nodes``). The authenticator compares the
    ARN of the role a node's session assumed, which carries no path, so a mapping with one never matches and its
    nodes never join (kubernetes-sigs/aws-iam-authenticator#153; EKS's aws-auth guide says the same). CAPA writes
    the ARN as given."""
    prefix, sep, rest = arn.partition(":role/")
    return f"{prefix}{sep}{rest.rsplit('/', 1)[-1]}" if sep else arn


def _mapping(mapping: Mapping[str, Any], key: str) -> dict[str, Any]:
    out: dict[str, Any] = {key: mapping[key]}
    if mapping.get("username"):
        out["username"] = mapping["username"]
    out["groups"] = list(mapping.get("groups") or [])
    return out


def aws_auth_manifest(
    roles: list[dict[str, Any]], users: list[dict[str, Any]], dump: Callable[[Any], str]
) -> dict[str, Any]:
    """The ``kube-system/aws-auth`` ConfigMap; ``dump`` is a YAML dumper (mapRoles/mapUsers are YAML strings)."""
    data: dict[str, str] = {}
    if roles:
        data["mapRoles"] = dump(roles)
    if users:
        data["mapUsers"] = dump(users)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "aws-auth", "namespace": "kube-system"},
        "data": data,
    }


def render_aws_auth(roles: list[dict[str, Any]], users: list[dict[str, Any]], dump: Callable[[Any], str]) -> str:
    return dump(aws_auth_manifest(roles, users, dump))


def merged_mappings(
    current: Sequence[Mapping[str, Any]], wanted: Sequence[Mapping[str, Any]], key: str
) -> list[dict[str, Any]]:
    """aws-auth mappings as CAPA keeps them: what the cluster has stays (EKS maps its managed node groups' roles
    there itself), ours are added, and ours win for the same ARN."""
    merged = {m[key]: dict(m) for m in current if isinstance(m, Mapping) and m.get(key)}
    for mapping in wanted:
        merged[mapping[key]] = dict(mapping)
    return list(merged.values())


def access_entries_allowed(mode: str) -> bool:
    return mode in ("API", "API_AND_CONFIG_MAP")


def desired_access_entries(
    node_role_arns: Sequence[str], map_roles: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """CreateAccessEntry requests: node roles as EC2_LINUX, mapped roles as STANDARD.

    EKS refuses ``system:`` groups on access entries (those come from the entry type or an access policy), so
    they are left out of ``kubernetesGroups``.
    """
    entries: dict[str, dict[str, Any]] = {}
    for arn in node_role_arns:
        entries[arn] = {"principalArn": arn, "type": "EC2_LINUX"}
    for mapping in map_roles:
        entry: dict[str, Any] = {"principalArn": mapping["rolearn"], "type": "STANDARD"}
        if mapping.get("username"):
            entry["username"] = mapping["username"]
        groups = [g for g in mapping.get("groups") or [] if not g.startswith("system:")]
        if groups:
            entry["kubernetesGroups"] = groups
        if mapping.get("policy_arn"):
            entry["policyArn"] = mapping["policy_arn"]
        entries[mapping["rolearn"]] = entry
    return list(entries.values())


# OIDC ----------------------------------------------------------------------------------------------------------
def issuer_host_path(issuer: str) -> str:
    return issuer.split("://", 1)[-1].rstrip("/")


def provider_matches_issuer(provider_arn: str, issuer: str) -> bool:
    return provider_arn.endswith(f":oidc-provider/{issuer_host_path(issuer)}")


def irsa_trust_policy_template(provider_arn: str, issuer: str) -> dict[str, Any]:
    """CAPA's trust-policy template for IRSA roles; fill in the service account's namespace and name."""
    host_path = issuer_host_path(issuer)
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": provider_arn},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{host_path}:sub": IRSA_SUBJECT,
                        f"{host_path}:aud": "sts.amazonaws.com",
                    }
                },
            }
        ],
    }
