# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: thin EC2 helpers shared by the network tiers (describe, tag, delete)."""

from __future__ import annotations

import fnmatch
import time
from typing import Any, Callable, Mapping

try:
    import botocore.exceptions
except ImportError:
    pass

from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import is_placeholder
from ..kernel.tags import dict_to_tags, missing_tags, tags_to_dict
from .errors import error_code

NOT_FOUND_SUFFIX = ".NotFound"


def describe(ctx: Context, method: str, key: str, **params: Any) -> list[dict[str, Any]]:
    """One logical describe (all pages) returning the list under ``key``.

    Tag filters are checked again on what comes back: what a describe returns is what a tier may change or delete,
    and a server that ignored a tag filter (moto does for NAT gateways) must not make another cluster's resource
    look like ours.
    """
    found = ctx.client("ec2").paginate(method, **params).get(key, [])
    wanted = tag_filters(params.get("Filters") or params.get("Filter") or [])
    if not wanted:
        return found
    if key == "Reservations":
        return [
            dict(r, Instances=[i for i in r.get("Instances", []) if matches_tags(i, wanted)])
            for r in found
            if any(matches_tags(i, wanted) for i in r.get("Instances", []))
        ]
    return [item for item in found if matches_tags(item, wanted)]


def tag_filters(filters: list[Mapping[str, Any]]) -> list[tuple[str | None, list[str]]]:
    """``(key, values)`` per ``tag:<key>`` filter and ``(None, keys)`` per ``tag-key`` filter."""
    wanted: list[tuple[str | None, list[str]]] = []
    for entry in filters:
        name = entry.get("Name", "")
        if name.startswith("tag:"):
            wanted.append((name[4:], list(entry.get("Values", []))))
        elif name == "tag-key":
            wanted.append((None, list(entry.get("Values", []))))
    return wanted


def matches_tags(resource: Mapping[str, Any], wanted: list[tuple[str | None, list[str]]]) -> bool:
    """AWS's semantics: every filter must match, any of a filter's values may (``*``/``?`` wildcards)."""
    tags = tags_of(resource)
    for key, values in wanted:
        if key is None:
            if not any(fnmatch.fnmatchcase(k, pattern) for k in tags for pattern in values):
                return False
        elif key not in tags or not any(fnmatch.fnmatchcase(tags[key], pattern) for pattern in values):
            return False
    return True


def describe_by_ids(ctx: Context, method: str, key: str, id_param: str, ids: list[str]) -> list[dict[str, Any]]:
    """Describe given ids; unknown ids raise NotFound in AWS, which we turn into a clear message."""
    ids = [i for i in ids if i and not is_placeholder(i)]
    if not ids:
        return []
    try:
        return describe(ctx, method, key, **{id_param: ids})
    except botocore.exceptions.ClientError as e:
        if error_code(e).endswith(NOT_FOUND_SUFFIX):
            raise ReconcileError(f"{', '.join(ids)}: {e.response['Error'].get('Message', 'not found')}") from e
        raise


def tags_of(resource: Mapping[str, Any]) -> dict[str, str]:
    return tags_to_dict(resource.get("Tags"))


def ensure_tags(
    ctx: Context, resource_id: str, label: str, current: Mapping[str, str], desired: Mapping[str, str]
) -> None:
    """Add or update tags on an owned resource (CAPA never removes stale keys on network resources)."""
    todo = missing_tags(current, desired)
    if todo and not is_placeholder(resource_id):
        ctx.ops.call(
            ctx.client("ec2"),
            "create_tags",
            resource=label,
            reason=f"tags differ: {', '.join(sorted(todo))}",
            Resources=[resource_id],
            Tags=dict_to_tags(todo),
        )


def is_dependency_error(code: str, message: str) -> bool:
    """AWS's several ways of saying 'something still uses it' (EC2, ELB, ELBv2)."""
    text = message.lower()
    return (
        code in ("DependencyViolation", "ResourceInUse", "ResourceInUseException", "InvalidGroup.InUse")
        or "has dependencies" in text
        or "dependent object" in text
        or "currently in use" in text
    )


def delete_when_free(
    ctx: Context, attempt: Callable[[], Any], what: str, blockers: Callable[[], str] | None = None
) -> None:
    """Run a delete that AWS refuses while dependants are still going away.

    ENIs of NAT gateways, load balancers and terminated instances take minutes to be released, so a delete is
    retried within the run's wait budget; if it is still refused then, the error names what blocks it and whose
    it is (``_blockers.finder``).
    """
    delay = 2.0
    while True:
        try:
            attempt()
            return
        except botocore.exceptions.ClientError as e:
            code = error_code(e)
            if code.endswith(NOT_FOUND_SUFFIX):
                return
            message = e.response["Error"].get("Message", code)
            dependency = is_dependency_error(code, message)
            if not dependency or ctx.remaining() <= 0 or not ctx.wait:
                detail = f"; blocked by: {blockers()}" if blockers and dependency else ""
                raise ReconcileError(f"cannot delete {what}: {message}{detail}") from e
        time.sleep(min(delay, max(ctx.remaining(), 0.1)))
        delay = min(delay * 1.7, 15.0)


def launch_template(ctx: Context, name: str) -> dict[str, Any] | None:
    """The launch template named ``name``, or None (a filter, not ``LaunchTemplateNames``: then a missing name is
    an empty answer, not an error)."""
    found = (
        ctx.client("ec2")
        .paginate("describe_launch_templates", Filters=[{"Name": "launch-template-name", "Values": [name]}])
        .get("LaunchTemplates", [])
    )
    return found[0] if found else None
