# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the status of an EKS cluster's AWS side, for ``capa_cluster_info`` - read, then judged with CAPA's names.

EKS has no tag-filtered describe: a cluster is read by name (``DescribeCluster``), and each of its node groups,
Fargate profiles and addons has a List call and then a Describe per item - the fewest requests the EKS API allows
(CAPA's AWSManagedControlPlane and AWSManagedMachinePool controllers read them the same way). The IAM side is one
``GetRole`` for the control-plane role the cluster owns and one ``ListOpenIDConnectProviders`` (plus a Get of the
cluster's provider) when the spec associates one.

Conditions carry CAPA's names - ``EKSControlPlaneReady``, ``IAMControlPlaneRolesReady``, ``EKSAddonsConfigured``,
``EKSNodegroupReady``, ``EKSFargateProfileReady`` - plus two of ours for what CAPA keeps in status fields without a
condition: ``OIDCProviderReady`` (``status.oidcProvider``) and ``EKSAccessEntriesReady`` (the access entries the spec
maps). ``IAMAuthenticatorConfigured`` lives in the cluster (the ``aws-auth`` ConfigMap): it is reported as not read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..aws import eks as eks_api
from ..aws.iam import get_role
from ..eks.eks_cluster_spec import default_role_name
from ..eks.oidc_provider import observe as observe_oidc_providers
from ..kernel.conditions import condition
from ..kernel.context import Context

# EKS's states that serve (UPDATING: the API answers while a version or a setting changes).
SERVING = ("ACTIVE", "UPDATING")
CONFIG_MAP_MODES = ("CONFIG_MAP", "API_AND_CONFIG_MAP")
ACCESS_ENTRY_MODES = ("API", "API_AND_CONFIG_MAP")


@dataclass(frozen=True)
class EksWant:
    """What the cluster spec says of the EKS side (``eks`` of the normalised spec)."""

    name: str
    role_name: str | None  # the control-plane role the cluster owns; None when the spec brings role_arn
    addons: tuple[str, ...] | None  # None: the spec leaves addons alone
    node_groups: tuple[str, ...] = ()
    fargate_profiles: tuple[str, ...] = ()
    oidc_provider: bool = False
    authentication_mode: str = "API_AND_CONFIG_MAP"
    mapped_principals: tuple[str, ...] = ()  # role and user ARNs of iam_authenticator

    @classmethod
    def from_spec(cls, cluster: str, eks: Mapping[str, Any]) -> EksWant:
        name = eks.get("name") or cluster
        addons = eks.get("addons")
        authenticator = eks.get("iam_authenticator") or {}
        principals = [m.get("rolearn") for m in authenticator.get("map_roles") or []]
        principals += [m.get("userarn") for m in authenticator.get("map_users") or []]
        return cls(
            name=name,
            role_name=None if eks.get("role_arn") else (eks.get("role_name") or default_role_name(name)),
            addons=None if addons is None else tuple(a["name"] for a in addons),
            node_groups=tuple(g["name"] for g in eks.get("node_groups") or []),
            fargate_profiles=tuple(p["name"] for p in eks.get("fargate_profiles") or []),
            oidc_provider=bool(eks.get("associate_oidc_provider")),
            authentication_mode=(eks.get("access_config") or {}).get("authentication_mode") or "API_AND_CONFIG_MAP",
            mapped_principals=tuple(p for p in principals if p),
        )


@dataclass
class EksObserved:
    """AWS's answers about one EKS cluster (None: not found)."""

    cluster: dict[str, Any] | None
    role: dict[str, Any] | None = None
    node_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    fargate_profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    addons: dict[str, dict[str, Any]] = field(default_factory=dict)
    access_entries: list[str] = field(default_factory=list)
    oidc_providers: list[str] = field(default_factory=list)


def observe_eks(ctx: Context, want: EksWant) -> EksObserved:
    """Every EKS resource of the cluster: the cluster, then what hangs off it (nothing more when it is gone)."""
    role = get_role(ctx, want.role_name) if want.role_name else None
    cluster = eks_api.describe_cluster(ctx, want.name)
    if cluster is None:
        return EksObserved(None, role=role)
    name = want.name
    observed = EksObserved(cluster, role=role)
    observed.node_groups = _described(eks_api.list_nodegroups(ctx, name), eks_api.describe_nodegroup, ctx, name)
    observed.fargate_profiles = _described(
        eks_api.list_fargate_profiles(ctx, name), eks_api.describe_fargate_profile, ctx, name
    )
    # Read only what the spec manages, as the reconcile does: addons when it lists them, access entries when it maps
    # principals (an unmanaged side is not the cluster's to judge).
    if want.addons is not None:
        observed.addons = _described(eks_api.list_addons(ctx, name), eks_api.describe_addon, ctx, name)
    if want.mapped_principals and _authentication_mode(cluster, want) in ACCESS_ENTRY_MODES:
        observed.access_entries = eks_api.list_access_entries(ctx, name)
    issuer = ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")
    if want.oidc_provider and issuer:
        observed.oidc_providers = [p.arn for p in observe_oidc_providers(ctx, issuer)]
    return observed


def _authentication_mode(cluster: Mapping[str, Any], want: EksWant) -> str:
    return (cluster.get("accessConfig") or {}).get("authenticationMode") or want.authentication_mode


def _described(
    names: list[str], describe: Callable[[Context, str, str], dict[str, Any] | None], ctx: Context, cluster: str
) -> dict[str, dict[str, Any]]:
    found = {}
    for name in names:
        item = describe(ctx, cluster, name)
        if item is not None:  # deleted between the List and the Describe
            found[name] = item
    return found


# ----------------------------------------------------------------------------------------------------------------
# Decide (pure)
# ----------------------------------------------------------------------------------------------------------------
def control_plane_condition(cluster: Mapping[str, Any] | None, name: str) -> dict[str, Any]:
    if cluster is None:
        return condition(False, "EKSControlPlaneNotFound", f"no EKS cluster {name}")
    status = cluster.get("status")
    version = f"Kubernetes {cluster.get('version')}"
    if status == "ACTIVE":
        return condition(True, "Available", f"{name}: {version}")
    if status == "UPDATING":
        return condition(True, "EKSControlPlaneUpdating", f"{name}: {version}, an update is in progress")
    if status in ("CREATING", "PENDING"):
        return condition(False, "EKSControlPlaneCreating", f"{name} is {status}")
    if status == "DELETING":
        return condition(False, "Deleting", f"{name} is being deleted")
    return condition(False, "EKSControlPlaneReconciliationFailed", f"{name} is {status}")


def role_condition(want: EksWant, role: Mapping[str, Any] | None) -> dict[str, Any]:
    if want.role_name is None:
        return condition(True, "Unmanaged", "the spec brings role_arn; never changed")
    if role is None:
        return condition(False, "IAMControlPlaneRolesReconciliationFailed", f"no IAM role {want.role_name}")
    return condition(True, "Available", want.role_name)


def _by_state(items: Mapping[str, Mapping[str, Any]], wanted: tuple[str, ...]) -> dict[str, list[str]]:
    """Names of the wanted items per state (``missing`` when EKS does not have it)."""
    states: dict[str, list[str]] = {}
    for name in wanted:
        states.setdefault(str((items.get(name) or {}).get("status") or "missing"), []).append(name)
    return states


def _states_message(states: Mapping[str, list[str]]) -> str:
    return "; ".join(f"{state}: {', '.join(names)}" for state, names in sorted(states.items()))


def group_condition(
    items: Mapping[str, Mapping[str, Any]], wanted: tuple[str, ...], what: str, creating: str, failed: str
) -> dict[str, Any]:
    """Ready when every wanted node group (Fargate profile, addon) is ACTIVE; else the first reason that applies."""
    states = _by_state(items, wanted)
    if set(states) <= {"ACTIVE"}:
        return condition(True, "Available", f"{len(wanted)} {what} ACTIVE")
    if "missing" in states:
        return condition(False, f"{failed}", f"not found: {', '.join(states['missing'])}")
    if set(states) & {"CREATING", "UPDATING"}:
        return condition(False, creating, _states_message(states))
    if "DELETING" in states:
        return condition(False, "Deleting", _states_message(states))
    return condition(False, failed, _states_message(states))


def oidc_condition(cluster: Mapping[str, Any], providers: list[str]) -> dict[str, Any]:
    if providers:
        return condition(True, "Available", providers[0])
    issuer = ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")
    return condition(False, "OIDCProviderNotFound", f"no IAM OIDC provider for {issuer or 'the cluster (no issuer)'}")


def access_entries_condition(want: EksWant, entries: list[str]) -> dict[str, Any]:
    missing = [p for p in want.mapped_principals if p not in entries]
    if missing:
        return condition(False, "AccessEntriesMissing", f"no access entry for {', '.join(missing)}")
    return condition(True, "Available", f"{len(entries)} access entries")


def eks_summary(want: EksWant, seen: EksObserved) -> tuple[dict[str, dict[str, Any]], dict[str, Any], list[str]]:
    """CAPA's conditions of the EKS side, the EKS resources as a status reports them, and what was not read."""
    conditions = {
        "EKSControlPlaneReady": control_plane_condition(seen.cluster, want.name),
        "IAMControlPlaneRolesReady": role_condition(want, seen.role),
    }
    unread: list[str] = []
    cluster = seen.cluster
    if cluster is not None:
        if want.addons is not None:
            conditions["EKSAddonsConfigured"] = group_condition(
                seen.addons, want.addons, "addons", "EKSAddonsCreating", "EKSAddonsConfiguredFailed"
            )
        if want.node_groups:
            conditions["EKSNodegroupReady"] = group_condition(
                seen.node_groups, want.node_groups, "node groups", "EKSNodegroupCreating", "EKSNodegroupNotFound"
            )
        if want.fargate_profiles:
            conditions["EKSFargateProfileReady"] = group_condition(
                seen.fargate_profiles,
                want.fargate_profiles,
                "Fargate profiles",
                "EKSFargateCreating",
                "EKSFargateReconciliationFailed",
            )
        if want.oidc_provider:
            conditions["OIDCProviderReady"] = oidc_condition(cluster, seen.oidc_providers)
        mode = _authentication_mode(cluster, want)
        if mode in ACCESS_ENTRY_MODES and want.mapped_principals:
            conditions["EKSAccessEntriesReady"] = access_entries_condition(want, seen.access_entries)
        if mode in CONFIG_MAP_MODES and want.mapped_principals:
            unread.append(
                "IAMAuthenticatorConfigured: the aws-auth ConfigMap lives in the cluster and is not read here"
            )
    else:
        unread.append("EKS node groups, Fargate profiles and addons: the EKS cluster does not exist")
    return conditions, eks_resources(seen), unread


def eks_resources(seen: EksObserved) -> dict[str, Any]:
    """The EKS side as ``status.json`` keeps it: names, states, sizes and versions (no certificate data)."""
    cluster = seen.cluster
    return {
        "cluster": None
        if cluster is None
        else {
            "name": cluster.get("name"),
            "arn": cluster.get("arn"),
            "status": cluster.get("status"),
            "version": cluster.get("version"),
            "platform_version": cluster.get("platformVersion"),
            "endpoint": cluster.get("endpoint"),
            "created_at": iso_time(cluster.get("createdAt")),
        },
        "role": None if seen.role is None else {"name": seen.role.get("RoleName"), "arn": seen.role.get("Arn")},
        "node_groups": {
            name: {
                "status": group.get("status"),
                "version": group.get("version"),
                "release_version": group.get("releaseVersion"),
                "capacity_type": group.get("capacityType"),
                "instance_types": group.get("instanceTypes") or [],
                "desired": (group.get("scalingConfig") or {}).get("desiredSize"),
                "min": (group.get("scalingConfig") or {}).get("minSize"),
                "max": (group.get("scalingConfig") or {}).get("maxSize"),
                "health_issues": [i.get("code") for i in (group.get("health") or {}).get("issues") or []],
                "created_at": iso_time(group.get("createdAt")),
            }
            for name, group in sorted(seen.node_groups.items())
        },
        "fargate_profiles": {
            name: {
                "status": profile.get("status"),
                "namespaces": [s.get("namespace") for s in profile.get("selectors") or []],
                "created_at": iso_time(profile.get("createdAt")),
            }
            for name, profile in sorted(seen.fargate_profiles.items())
        },
        "addons": {
            name: {"status": addon.get("status"), "version": addon.get("addonVersion")}
            for name, addon in sorted(seen.addons.items())
        },
        "oidc_provider": seen.oidc_providers[0] if seen.oidc_providers else None,
        "access_entries": sorted(seen.access_entries),
    }


def iso_time(value: Any) -> str | None:
    """boto3 answers datetimes; a status file holds text."""
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
