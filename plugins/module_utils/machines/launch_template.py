# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the launch template of a fleet pool (CAPA pkg/cloud/services/ec2/launchtemplate.go).

One template per pool, named after the pool and tagged as owned. A new version is made when the pool's template
hash (everything that defines its machines) differs from the latest version's; CAPA's pruning keeps at most three
versions (never the default or the latest one). Unlike CAPA, bootstrap data never sits in the template in clear
text: each version's cloud-config is stored through :mod:`._bootstrap_data` and the version's user data only holds
the boot hook, which leaves the entries in place (every instance of the version boots from them). Which entries a
version uses, and its hash, are instance tags in the version's own data, so they can be found and deleted with it.

Observing is one ``DescribeLaunchTemplates`` (by name) and one ``DescribeLaunchTemplateVersions``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Tuple

try:
    import botocore.exceptions
except ImportError:
    pass

from ..aws.ec2 import launch_template
from ..aws.errors import missing_as_none
from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.idempotency import new_client_token
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import is_owned, tag_specifications, tags_to_dict
from . import bootstrap_data as _bootstrap_data
from .asg_plan import TOKEN_ID_TAG
from .bootstrap_data import BOOTSTRAP_TAG, BootstrapRef
from .machine_spec import SECRETS_MANAGER

# What a version's data is made of: its instance tags and the boot hook's user data (MachineSpec's renderer).
Render = Callable[[Mapping[str, str], Optional[str]], dict[str, Any]]
# The join token of a new version: (token, its id), or None for a pool without kubeadm data (pool_token.py).
JoinToken = Callable[[], Optional[Tuple[str, str]]]

HASH_TAG = "clusterapi.aws/template-hash"
MAX_VERSIONS = 3  # CAPA prunes before creating a version once this many exist
PLANNED_VERSION = 0  # the version number check mode reports for a version it would create


@dataclass
class Template:
    id: str
    name: str
    default_version: int
    latest_version: int
    tags: dict[str, str]
    versions: list[dict[str, Any]] = field(default_factory=list)  # oldest first

    def latest(self) -> dict[str, Any] | None:
        return next((v for v in self.versions if v["VersionNumber"] == self.latest_version), None)


@dataclass
class Ensured:
    """The template and version a pool should use after :func:`ensure`."""

    id: str
    name: str
    version: int
    template_hash: str
    created: bool = False  # a new template or version was made this run


# pure ------------------------------------------------------------------------------------------------------------
def version_tags(version: Mapping[str, Any] | None) -> dict[str, str]:
    """The instance tags a version gives its instances."""
    for spec in (version or {}).get("LaunchTemplateData", {}).get("TagSpecifications") or []:
        if spec.get("ResourceType") == "instance":
            return tags_to_dict(spec.get("Tags"))
    return {}


def version_hash(version: Mapping[str, Any] | None) -> str:
    return version_tags(version).get(HASH_TAG, "")


def version_token_id(version: Mapping[str, Any] | None) -> str | None:
    return version_tags(version).get(TOKEN_ID_TAG)


def version_ref(version: Mapping[str, Any] | None) -> BootstrapRef | None:
    return BootstrapRef.from_tag(version_tags(version).get(BOOTSTRAP_TAG))


def versions_to_prune(template: Template) -> list[dict[str, Any]]:
    """CAPA: before a new version, drop old ones so at most MAX_VERSIONS - 1 stay (never default or latest)."""
    keep = {template.default_version, template.latest_version}
    candidates = [v for v in template.versions if v["VersionNumber"] not in keep]
    excess = len(template.versions) - (MAX_VERSIONS - 1)
    return candidates[: max(0, excess)]


# AWS -------------------------------------------------------------------------------------------------------------
def observe(ctx: Context, name: str) -> Template | None:
    """The pool's template by name; one that exists without the owned tag is an error (never touched)."""
    lt = launch_template(ctx, name)
    if lt is None:
        return None
    tags = tags_to_dict(lt.get("Tags"))
    if not is_owned(tags, ctx.cluster):
        raise ReconcileError(f"launch template {name} exists but is not owned by cluster {ctx.cluster}")
    versions = (
        ctx.client("ec2")
        .paginate("describe_launch_template_versions", LaunchTemplateId=lt["LaunchTemplateId"])
        .get("LaunchTemplateVersions", [])
    )
    return Template(
        id=lt["LaunchTemplateId"],
        name=name,
        default_version=lt.get("DefaultVersionNumber", 1),
        latest_version=lt.get("LatestVersionNumber", 1),
        tags=tags,
        versions=sorted(versions, key=lambda v: v["VersionNumber"]),
    )


def ensure(
    ctx: Context,
    observed: Template | None,
    *,
    name: str,
    render: Render,
    template_hash: str,
    tags: Mapping[str, str],
    instance_tags: Mapping[str, str],
    document: Callable[[Optional[str]], Optional[bytes]],
    backend: str = SECRETS_MANAGER,
    rotate: str | None = None,
    join_token: JoinToken = lambda: None,
) -> Ensured:
    """The template whose latest version has ``template_hash``: created, given a new version, or left alone.

    ``document`` renders the bootstrap document (with the join token) only when a version is made; ``render``
    makes the version's data from its instance tags and user data. ``tags`` go on the template, ``instance_tags``
    (plus the hash, bootstrap and token tags) on the instances and volumes it launches. ``rotate`` (why the join
    token is due) makes a version with the same hash; ``join_token`` is asked before any change, so a pool that
    cannot get a token is refused with nothing changed.
    """
    same = observed is not None and version_hash(observed.latest()) == template_hash
    if same and not rotate:
        return Ensured(observed.id, name, observed.latest_version, template_hash)  # type: ignore[union-attr]
    joining = join_token()
    if observed is not None:
        for version in versions_to_prune(observed):
            _delete_version(ctx, observed, version)

    instance = {**instance_tags, HASH_TAG: template_hash}
    if joining is not None:
        instance[TOKEN_ID_TAG] = joining[1]
    content = document(joining[0] if joining else None)
    ref = None
    user_data = None
    if content is not None:
        ref = _bootstrap_data.store(ctx, backend, f"{name}@{template_hash}", content, instance_tags)
        instance[BOOTSTRAP_TAG] = ref.tag_value()
        script = _bootstrap_data.boot_script(ctx.region or "", ref, delete_after_fetch=False)
        user_data = _bootstrap_data.user_data(script)
    version_data = render(instance, user_data)
    token = new_client_token()
    try:
        if observed is None:
            answer = ctx.ops.call(
                ctx.client("ec2"),
                "create_launch_template",
                resource=name,
                reason="machine pool template",
                predicted={"LaunchTemplate": {"LaunchTemplateId": placeholder("launch-template", name)}},
                LaunchTemplateName=name,
                LaunchTemplateData=version_data,
                VersionDescription=f"template-hash {template_hash}",
                TagSpecifications=tag_specifications("launch-template", tags),
                ClientToken=token,
            )["LaunchTemplate"]
            return Ensured(answer["LaunchTemplateId"], name, answer.get("LatestVersionNumber", 1), template_hash, True)
        answer = ctx.ops.call(
            ctx.client("ec2"),
            "create_launch_template_version",
            resource=name,
            reason=_version_reason(observed, template_hash, rotate if same else None),
            predicted={"LaunchTemplateVersion": {"VersionNumber": PLANNED_VERSION}},
            LaunchTemplateId=observed.id,
            LaunchTemplateData=version_data,
            VersionDescription=f"template-hash {template_hash}",
            ClientToken=token,
        )["LaunchTemplateVersion"]
    except botocore.exceptions.ClientError:
        if ref is not None:  # nothing would ever fetch or delete these entries
            _bootstrap_data.delete(ctx, ref, name)
        raise
    return Ensured(observed.id, name, answer["VersionNumber"], template_hash, True)


def _version_reason(observed: Template, template_hash: str, rotation: str | None) -> str:
    if rotation:
        return f"join token rotation: {rotation}"
    return f"template hash {version_hash(observed.latest()) or 'none'} -> {template_hash}"


def _delete_version(ctx: Context, template: Template, version: Mapping[str, Any]) -> None:
    number = version["VersionNumber"]
    ctx.ops.call(
        ctx.client("ec2"),
        "delete_launch_template_versions",
        resource=f"{template.name}:{number}",
        reason=f"keep at most {MAX_VERSIONS} versions",
        LaunchTemplateId=template.id,
        Versions=[str(number)],
    )
    ref = version_ref(version)
    if ref is not None:
        _bootstrap_data.delete(ctx, ref, f"{template.name}:{number}")


def delete(ctx: Context, template: Template | None) -> None:
    """The template and every version's bootstrap entries (instances using it must be gone already)."""
    if template is None or is_placeholder(template.id):
        return
    missing_as_none(  # gone already (a delete whose answer was lost, or someone else's)
        ctx.ops.call,
        ctx.client("ec2"),
        "delete_launch_template",
        resource=template.name,
        reason="machine pool deleted",
        LaunchTemplateId=template.id,
    )
    for version in template.versions:
        ref = version_ref(version)
        if ref is not None:
            _bootstrap_data.delete(ctx, ref, f"{template.name}:{version['VersionNumber']}")


def as_dict(ensured: Ensured | None) -> dict[str, Any] | None:
    if ensured is None:
        return None
    return {"id": ensured.id, "name": ensured.name, "version": ensured.version, "template_hash": ensured.template_hash}
