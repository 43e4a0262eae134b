# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (service wrappers): thin EC2 reads shared by the tiers (describe, describe by id, delete when free).

Describe-style functions return ``[]`` when AWS says the resource does not exist (:func:`.errors.is_not_found`),
paginate, and decide nothing else. Tag repair is :func:`..kernel.tags.repair_tags` with the ``ec2`` tagger.
"""

from __future__ import annotations

import fnmatch
from typing import Any, Callable, Mapping, Sequence

try:
    import botocore.exceptions
except ImportError:
    pass

from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import is_placeholder
from ..kernel.resources import BY_NAME, Ec2Kind
from ..kernel.shared_reads import NotShared
from ..kernel.tags import tags_to_dict
from ..kernel.waiting import Backoff, wait_until
from .errors import error_code, error_message, is_not_found, missing_as_none


def describe(ctx: Context, method: str, key: str, **request: Any) -> list[dict[str, Any]]:
    """One logical describe (all pages) returning the list under ``key``.

    Tag filters are checked again on what comes back: what a describe returns is what a tier may change or delete,
    and a server that ignored a tag filter (moto does for NAT gateways) must not make another cluster's resource
    look like ours.
    """
    found = ctx.client("ec2").paginate(method, **request).get(key, [])
    wanted = tag_filters(request.get("Filters", request.get("Filter", [])))
    if not wanted:
        return found
    if key == "Reservations":
        return [
            dict(r, Instances=[i for i in r.get("Instances", []) if matches_tags(i, wanted)])
            for r in found
            if any(matches_tags(i, wanted) for i in r.get("Instances", []))
        ]
    return [item for item in found if matches_tags(item, wanted)]


# Instance states in which a machine still exists (shutting-down: leaving, still to be accounted for).
LIVE_INSTANCE_STATES = ("pending", "running", "stopping", "stopped", "shutting-down")


def cluster_instances_request(ctx: Context) -> dict[str, Any]:
    """The one DescribeInstances of a cluster's machines, all groups together: every machine group of a run and the
    status read-back ask this identical question, so a run that changes nothing has it answered once
    (kernel/shared_reads.py); each group picks its own machines by tag. The largest page AWS allows: a no-op costs
    the same for 2 machines and for 200."""
    states = list(LIVE_INSTANCE_STATES)
    return {"Filters": ctx.owner_filters() + [{"Name": "instance-state-name", "Values": states}], "MaxResults": 1000}


def cluster_instances_if_read(ctx: Context) -> list[dict[str, Any]] | None:
    """The cluster's instances as an earlier step of the chain described them (:func:`cluster_instances_request`),
    without a request: None when none did, or the run is not part of a chain (``kernel/shared_reads.py``,
    ``SharedReads.only_served``). For what a run would not ask AWS for on its own."""
    shared = ctx.session.shared
    if shared is None:
        return None
    request = cluster_instances_request(ctx)
    try:
        with shared.only_served():
            reservations = describe_kind(ctx, "instance", request["Filters"], MaxResults=request["MaxResults"])
    except NotShared:
        return None
    return [instance for reservation in reservations for instance in reservation.get("Instances", [])]


def wait_for_leaving_instances(ctx: Context, filters: list[dict[str, Any]], what: str) -> None:
    """Wait until the cluster's own instances under ``filters`` that are ``shutting-down`` are terminated.

    AWS refuses to delete a security group or subnet that such an instance still uses (``DependencyViolation``) until
    it is terminated. Reading at the poll's pace sees it go sooner than retrying the refused delete at
    :data:`DEPENDANTS`' slower one, and a read instead of a refused write. Instances that are not the cluster's or
    are not leaving are not waited for: :func:`delete_when_free` names them if they block.
    """
    leaving = [{"Name": "instance-state-name", "Values": ["shutting-down"]}]
    request = {"Filters": ctx.owner_filters() + filters + leaving, "MaxResults": 1000}

    def read() -> list[str]:
        return [
            i["InstanceId"]
            for r in describe(ctx, "describe_instances", "Reservations", **request)
            for i in r["Instances"]
        ]

    wait_until(read, lambda ids: not ids, ctx, what, state=lambda ids: f"{len(ids)} shutting down")


def wait_for_states(
    ctx: Context,
    method: str,
    key: str,
    id_filter: str,
    ids: Sequence[str],
    wanted: Sequence[str],
    what: str,
    failed: Sequence[str] = ("failed",),
) -> list[dict[str, Any]]:
    """Poll ``method`` (one request for all ``ids``, by the ``id_filter`` filter) until every one is in a ``wanted``
    state (``State``) or, when ``deleted`` is wanted, gone; one in a ``failed`` state fails the wait at once."""

    def read() -> list[dict[str, Any]]:
        return describe(ctx, method, key, Filters=[{"Name": id_filter, "Values": list(ids)}])

    def settled(items: list[dict[str, Any]]) -> bool:
        states = {item.get("State") for item in items}
        present = len(items) == len(set(ids))
        return (present or "deleted" in wanted) and states <= set(wanted)

    def broken(items: list[dict[str, Any]]) -> str | None:
        id_field = "".join(part.capitalize() for part in id_filter.split("-"))  # nat-gateway-id -> NatGatewayId
        bad = [f"{i.get(id_field)} is {i.get('State')}" for i in items if i.get("State") in failed]
        return "; ".join(bad) or None

    return wait_until(read, settled, ctx, what, failed=broken)


def kind(name: str) -> Ec2Kind:
    """The EC2 resource kind ``name`` of the one table (:data:`..kernel.resources.EC2_KINDS`)."""
    return BY_NAME[name]


def describe_kind(ctx: Context, name: str, filters: Sequence[Mapping[str, Any]], **params: Any) -> list[dict[str, Any]]:
    """:func:`describe` of the kind ``name`` of the table, with ``filters`` under the parameter name it spells."""
    spec = kind(name)
    return describe(ctx, spec.describe, spec.list_key, **{spec.filter_param: list(filters)}, **params)


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


def _real_ids(ids: Sequence[str | None]) -> list[str]:
    return [i for i in ids if i and not is_placeholder(i)]


def describe_by_ids(
    ctx: Context, method: str, key: str, id_param: str, ids: Sequence[str | None]
) -> list[dict[str, Any]]:
    """Describe given ids; ``[]`` when AWS answers that one of them does not exist (it fails the whole request)."""
    real = _real_ids(ids)
    if not real:
        return []
    return missing_as_none(describe, ctx, method, key, **{id_param: real}) or []


def require_by_ids(
    ctx: Context, method: str, key: str, id_param: str, ids: Sequence[str | None]
) -> list[dict[str, Any]]:
    """Describe ids the spec names: one that does not exist is a :class:`ReconcileError` in AWS's words."""
    real = _real_ids(ids)
    if not real:
        return []
    try:
        return describe(ctx, method, key, **{id_param: real})
    except botocore.exceptions.ClientError as e:
        if is_not_found(e):
            raise ReconcileError(f"{', '.join(real)}: {error_message(e) or 'not found'}") from e
        raise


def tags_of(resource: Mapping[str, Any]) -> dict[str, str]:
    return tags_to_dict(resource.get("Tags"))


def is_dependency_error(code: str, message: str) -> bool:
    """AWS's several ways of saying 'something still uses it' (EC2, ELB, ELBv2)."""
    text = message.lower()
    return (
        code in ("DependencyViolation", "ResourceInUse", "ResourceInUseException", "InvalidGroup.InUse")
        or "has dependencies" in text
        or "dependent object" in text
        or "currently in use" in text
    )


# ENIs of NAT gateways, load balancers and terminated instances take minutes to be released: no hurry to ask again.
DEPENDANTS = Backoff(first=2.0, cap=15.0, factor=1.7)


def delete_when_free(
    ctx: Context, attempt: Callable[[], Any], what: str, blockers: Callable[[], str] | None = None
) -> None:
    """Run a delete that AWS refuses while dependants are still going away; gone already is done.

    ENIs of NAT gateways, load balancers and terminated instances take minutes to be released, so a delete is
    retried within the run's wait budget; if it is still refused then, the error names what blocks it and whose
    it is (``network.blockers.finder``).
    """
    waiting = ctx.wait_for(f"{what} to be free to delete", backoff=DEPENDANTS)
    while True:
        try:
            attempt()
            return
        except botocore.exceptions.ClientError as e:
            if is_not_found(e):
                return
            code = error_code(e)
            message = e.response["Error"].get("Message", code)
            dependency = is_dependency_error(code, message)
            if not dependency or not waiting.budget_left() or not ctx.wait:
                detail = f"; blocked by: {blockers()}" if blockers and dependency else ""
                raise ReconcileError(f"cannot delete {what}: {message}{detail}") from e
        waiting.pause()


def launch_template(ctx: Context, name: str) -> dict[str, Any] | None:
    """The launch template named ``name``, or None.

    Looked for among the cluster's own first: the tag-filtered read ``capa_cluster_info`` makes too, so on a run that
    changes nothing one answer serves both (``kernel/shared_reads.py``). Only when it is not among them, by name (a
    filter, not ``LaunchTemplateNames``: a missing name is an empty answer, not an error), so that a template of that
    name the cluster does not own is still found - and refused by the caller.
    """
    for owned in describe_kind(ctx, "launch_template", ctx.owner_filters()):
        if owned.get("LaunchTemplateName") == name:
            return owned
    found = (
        ctx.client("ec2")
        .paginate("describe_launch_templates", Filters=[{"Name": "launch-template-name", "Values": [name]}])
        .get("LaunchTemplates", [])
    )
    return found[0] if found else None
