# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: CAPA's ownership tags, role values and Name formats, decided in one place.

A resource is *owned* by a cluster when it carries ``sigs.k8s.io/cluster-api-provider-aws/cluster/<cluster>``
with the value ``owned``. Only owned resources are ever modified or deleted; anything else given to a module
(bring your own) is validated and used as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .operations import is_placeholder

if TYPE_CHECKING:
    from .context import Context

CAPA_TAG_PREFIX = "sigs.k8s.io/cluster-api-provider-aws/"
ROLE_TAG = CAPA_TAG_PREFIX + "role"
# The keys of ``additional_tags`` written on a resource, so a key removed from the spec can be removed from the
# resource and nothing else (CAPA keeps the same record in its "last-applied-tags" annotation on the object).
# Tag keys cannot hold commas, so a comma-joined list is unambiguous; a tag value holds 256 characters at most.
APPLIED_TAGS_TAG = CAPA_TAG_PREFIX + "last-applied-tags"
APPLIED_TAGS_LIMIT = 256
OWNED = "owned"
SHARED = "shared"

# Role tag values CAPA writes (api/v1beta2/tags.go).
ROLE_COMMON = "common"
ROLE_PUBLIC = "public"
ROLE_PRIVATE = "private"
ROLE_APISERVER = "apiserver"
ROLE_BASTION = "bastion"
ROLE_CONTROL_PLANE = "control-plane"
ROLE_NODE = "node"

ELB_ROLE_TAG = "kubernetes.io/role/elb"
INTERNAL_ELB_ROLE_TAG = "kubernetes.io/role/internal-elb"


def cluster_tag_key(cluster: str) -> str:
    return f"{CAPA_TAG_PREFIX}cluster/{cluster}"


def cloud_provider_tag_key(cluster: str) -> str:
    """The tag the Kubernetes cloud provider (CCM, load balancer controller) discovers resources by."""
    return f"kubernetes.io/cluster/{cluster}"


def either_tag_filter(cluster: str) -> list[dict[str, Any]]:
    """A describe filter for what carries CAPA's owner tag or the cloud provider's tag, as one wildcard value.

    AWS ORs the values of a filter, but moto requires a resource to carry all of several tag-key values (or only
    them), so a resource with just one of the two keys would be missed there. Both keys end in
    ``/cluster/<cluster>`` (cluster names hold no wildcard characters); a reader tells them apart by the tags.
    """
    return [{"Name": "tag-key", "Values": [f"*/cluster/{cluster}"]}]


def carries_either_tag(tags: Mapping[str, str], cluster: str) -> bool:
    """What :func:`either_tag_filter` asks AWS for, told from a resource's tags (a key ending in
    ``/cluster/<cluster>``): for a read that asked a wider question."""
    return any(key.endswith(f"/cluster/{cluster}") for key in tags)


def is_owned(tags: Mapping[str, str] | None, cluster: str) -> bool:
    return (tags or {}).get(cluster_tag_key(cluster)) == OWNED


def owned_tags(
    cluster: str,
    role: str,
    name: str | None,
    additional_tags: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The full tag set CAPA puts on a resource it creates.

    ``Name`` goes first so that a user's own ``Name`` in ``additional_tags`` wins, as in CAPA; the ownership
    and role keys go last so nothing can override them. The keys of ``additional_tags`` are recorded in
    :data:`APPLIED_TAGS_TAG`, so a later run knows which keys it may remove.
    """
    tags: dict[str, str] = {}
    if name:
        tags["Name"] = name
    tags.update(additional_tags or {})
    tags.update(extra or {})
    tags[cluster_tag_key(cluster)] = OWNED
    tags[ROLE_TAG] = role
    if additional_tags:
        tags[APPLIED_TAGS_TAG] = applied_tags_value(additional_tags)
    return tags


def applied_tags_value(additional_tags: Iterable[str]) -> str:
    return ",".join(sorted(additional_tags))


def applied_tag_keys(tags: Mapping[str, str] | None) -> set[str]:
    """The ``additional_tags`` keys a run of this collection wrote on a resource (see :data:`APPLIED_TAGS_TAG`)."""
    value = (tags or {}).get(APPLIED_TAGS_TAG, "")
    return {key for key in value.split(",") if key}


def stale_tag_keys(current: Mapping[str, str], desired: Mapping[str, str], frozen: Iterable[str] = ()) -> list[str]:
    """Keys to remove: ones this collection applied that the spec no longer asks for, and the record itself once
    the spec has no additional tags. Tags someone else wrote, ``aws:`` keys and ``frozen`` keys are never stale."""
    keep = set(desired) | set(frozen)
    applied = applied_tag_keys(current)
    if APPLIED_TAGS_TAG in current:
        applied.add(APPLIED_TAGS_TAG)
    return sorted(k for k in applied if k in current and k not in keep and not k.lower().startswith("aws:"))


def tags_to_dict(tag_list: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in tag_list or ()}


def dict_to_tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def tag_specifications(resource_type: str, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": dict_to_tags(tags)}]


def missing_tags(current: Mapping[str, str], desired: Mapping[str, str]) -> dict[str, str]:
    """Tags to (re)write (what :func:`stale_tag_keys` removes is decided apart)."""
    return {k: v for k, v in desired.items() if current.get(k) != v and not k.startswith("aws:")}


# Name formats (api/v1beta2 and pkg/cloud/services/*: see the reference tables).
def vpc_name(cluster: str) -> str:
    return f"{cluster}-vpc"


def igw_name(cluster: str) -> str:
    return f"{cluster}-igw"


def subnet_name(cluster: str, is_public: bool, az: str) -> str:
    return f"{cluster}-subnet-{'public' if is_public else 'private'}-{az}"


def route_table_name(cluster: str, is_public: bool, az: str) -> str:
    return f"{cluster}-rt-{'public' if is_public else 'private'}-{az}"


def nat_gateway_name(cluster: str) -> str:
    return f"{cluster}-nat"


def eip_name(cluster: str, role: str = ROLE_COMMON) -> str:
    return f"{cluster}-eip-{role}"


def security_group_name(cluster: str, role: str) -> str:
    # A group name may not start with "sg-"; CAPA prefixes such cluster names with "@".
    base = f"{cluster}-{role}"
    return f"@{base}" if cluster.startswith("sg-") else base


def security_group_description(cluster: str, role: str) -> str:
    return f"Kubernetes cluster {cluster}: {role}"


def role_of(tags: Mapping[str, str]) -> str | None:
    return tags.get(ROLE_TAG)


# Tag repair ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tagger:
    """How one AWS API tags a resource: the client, the tagging method and its request for (resource, tags), and
    the untagging method and its request for (resource, keys)."""

    service: str
    method: str
    request: Callable[[str, Mapping[str, str]], dict[str, Any]]
    untag_method: str
    untag_request: Callable[[str, list[str]], dict[str, Any]]


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return dict_to_tags(tags)


def _key_list(keys: list[str]) -> list[dict[str, str]]:
    return [{"Key": k} for k in keys]


def _pool_tag(resource: str, key: str, value: str | None = None) -> dict[str, Any]:
    tag: dict[str, Any] = {"ResourceId": resource, "ResourceType": "auto-scaling-group", "Key": key}
    if value is not None:
        tag.update(Value=value, PropagateAtLaunch=False)
    return tag


def _keyed(service: str, tag: str, untag: str, id_key: str, many: bool = False) -> Tagger:
    """The common shape: the resource under ``id_key`` (a list of one when ``many``), tags as a Key/Value list,
    keys to remove as ``TagKeys``."""

    def ident(resource: str) -> dict[str, Any]:
        return {id_key: [resource] if many else resource}

    return Tagger(
        service,
        tag,
        lambda r, t: {**ident(r), "Tags": _tag_list(t)},
        untag,
        lambda r, k: {**ident(r), "TagKeys": k},
    )


TAGGERS: dict[str, Tagger] = {
    "ec2": Tagger(
        "ec2",
        "create_tags",
        lambda r, t: {"Resources": [r], "Tags": _tag_list(t)},
        "delete_tags",
        lambda r, k: {"Resources": [r], "Tags": _key_list(k)},
    ),
    "elb": Tagger(
        "elb",
        "add_tags",
        lambda r, t: {"LoadBalancerNames": [r], "Tags": _tag_list(t)},
        "remove_tags",
        lambda r, k: {"LoadBalancerNames": [r], "Tags": _key_list(k)},
    ),
    "elbv2": _keyed("elbv2", "add_tags", "remove_tags", "ResourceArns", many=True),
    # Pool tags are the group's only: instances get theirs from the launch template.
    "autoscaling": Tagger(
        "autoscaling",
        "create_or_update_tags",
        lambda r, t: {"Tags": [_pool_tag(r, k, v) for k, v in t.items()]},
        "delete_tags",
        lambda r, k: {"Tags": [_pool_tag(r, key) for key in k]},
    ),
    "eks": Tagger(
        "eks",
        "tag_resource",
        lambda r, t: {"resourceArn": r, "tags": dict(t)},
        "untag_resource",
        lambda r, k: {"resourceArn": r, "tagKeys": k},
    ),
    "iam-role": _keyed("iam", "tag_role", "untag_role", "RoleName"),
    "iam-policy": _keyed("iam", "tag_policy", "untag_policy", "PolicyArn"),
    "iam-oidc-provider": _keyed(
        "iam", "tag_open_id_connect_provider", "untag_open_id_connect_provider", "OpenIDConnectProviderArn"
    ),
    "secretsmanager": _keyed("secretsmanager", "tag_resource", "untag_resource", "SecretId"),
}


def repair_tags(
    ctx: Context,
    kind: str,
    resource_id: str,
    label: str,
    current: Mapping[str, str] | None,
    desired: Mapping[str, str],
    frozen: Iterable[str] = (),
) -> dict[str, str]:
    """Bring an owned resource's tags to ``desired``: at most one untagging and one tagging call.

    Removed are only the ``additional_tags`` keys an earlier run applied (:func:`stale_tag_keys`), as amazon.aws's
    ``purge_tags`` but never a tag someone else wrote; they go first, so a failure in between leaves the record
    that names them. Written are the desired tags the resource lacks or holds with another value. ``aws:`` keys
    are AWS's, and the ``frozen`` keys describe how the resource was made (a machine's template hash), so a later
    run never rewrites them. ``kind`` names the tagging API (:data:`TAGGERS`). Returns the tags afterwards.
    """
    current = dict(current or {})
    stale = stale_tag_keys(current, desired, frozen)
    todo = {k: v for k, v in missing_tags(current, desired).items() if k not in set(frozen)}
    if is_placeholder(resource_id):
        return {**current, **todo}
    tagger = TAGGERS[kind]
    client = ctx.client(tagger.service)
    if stale:
        reason = f"tags no longer in additional_tags: {', '.join(stale)}"
        ctx.ops.call(
            client, tagger.untag_method, resource=label, reason=reason, **tagger.untag_request(resource_id, stale)
        )
    if todo:
        reason = f"tags differ: {', '.join(sorted(todo))}"
        ctx.ops.call(client, tagger.method, resource=label, reason=reason, **tagger.request(resource_id, todo))
    return {**{k: v for k, v in current.items() if k not in stale}, **todo}
