# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: what to do with a write whose answer was lost (the connection dropped after the request was sent).

The request may or may not have been applied. Resending it blindly is right only when AWS deduplicates it:

* a create carrying an idempotency token (``ClientToken``, ``ClientRequestToken``, ``clientRequestToken``) is
  resent unchanged - AWS answers with what the first attempt made;
* an EC2 create without a token carries its ownership tags (TagSpecifications): the resource is looked for by
  exactly those tags and adopted when it landed; it is resent only when nothing carries them;
* anything else is resent, and an answer that says "already done" (the resource the delete wanted gone is gone,
  the rule the authorize adds exists, the group the create names exists ...) counts as success of the lost
  attempt.

Used by ``Operations.call``, so every tier gets the same behaviour. Modules do not import this file.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable, Mapping

from .resources import BY_TAG_TYPE, GONE_STATES
from .session import RetryingClient, is_lost_response

try:
    import botocore.exceptions
except ImportError:
    pass  # AnsibleAWSModule reports the missing SDK before any of this runs.

TOKEN_PARAMS = ("ClientToken", "ClientRequestToken", "clientRequestToken", "IdempotencyToken")

# How often a write is sent in all when its answers keep getting lost, and the pause before a resend (doubling, at
# most 5 s): a lost answer is a network or endpoint hiccup, not throttling. Ten sends: even with a third of all
# answers lost (the tests' worst case) a write fails this way once in 60,000, where six sends failed one run in 20.
LOST_RESPONSE_ATTEMPTS = 10
LOST_RESPONSE_PAUSE = 0.2

# The EC2 creates that carry no idempotency token but their tags: what a lost one made is found by those tags
# (kernel.resources says how each kind is described). Creates with a token (instances, NAT gateways, launch
# templates, fleets) are simply resent.
FOUND_BY_TAGS = ("vpc", "subnet", "internet-gateway", "route-table", "security-group", "elastic-ip")
# Several resources may carry the same tags (the NAT gateways' EIPs all have one Name): a candidate for "what
# the lost create made" is one this run has not already been given by another create, and not in use.
_IN_USE_KEYS = ("AssociationId",)
# Nor one on its way out (GONE_STATES): what a lost create made is alive; a resource being deleted (or kept for a
# while as deleted, as NAT gateways and instances are) is a predecessor that happens to carry the same tags.

_UNDO_PREFIXES = ("Delete", "Terminate", "Deregister", "Release", "Disassociate", "Detach", "Revoke", "Remove")
_DO_PREFIXES = ("Create", "Attach", "Associate", "Authorize", "Allocate", "Put", "Register", "Add")
_GONE_CODES = frozenset(
    {
        "NoSuchEntity",
        "ResourceNotFoundException",
        "NotFoundException",
        "Gateway.NotAttached",
        "InvalidPermission.NotFound",
        "LoadBalancerNotFound",
        "TargetGroupNotFound",
        "ListenerNotFound",
        "ValidationError",  # auto scaling answers ValidationError for a group that no longer exists
    }
)
_EXISTS_CODES = frozenset(
    {
        "InvalidPermission.Duplicate",
        "Resource.AlreadyAssociated",
        "RouteAlreadyExists",
        "AlreadyExists",
        "AlreadyExistsFault",
        "EntityAlreadyExists",
        "ResourceExistsException",
        "ResourceInUseException",
        "DuplicateLoadBalancerName",
        "DuplicateTargetGroupName",
        "DuplicateListener",
        "InvalidLaunchTemplateName.AlreadyExistsException",
        "InvalidKeyPair.Duplicate",
    }
)


def carries_token(params: Mapping[str, Any]) -> bool:
    """True when AWS deduplicates this request by an idempotency token it carries."""
    return any(params.get(name) for name in TOKEN_PARAMS)


def done_already(operation: str, code: str) -> bool:
    """True when ``code``, answering a resend after a lost answer, means the lost attempt did the work."""
    if operation.startswith(_UNDO_PREFIXES):
        return code.endswith(".NotFound") or code.endswith("NotFound") or code in _GONE_CODES
    if operation.startswith(_DO_PREFIXES):
        return code in _EXISTS_CODES
    return False


def tag_lookup(
    service: str, request: Mapping[str, Any]
) -> tuple[str, str, str | None, str, list[dict[str, Any]]] | None:
    """(describe method, list key, answer key, id key, filters) finding what an EC2 create (its ``request``) made,
    by its tags."""
    if service != "ec2":
        return None
    specs = request.get("TagSpecifications", [])
    if not specs or specs[0].get("ResourceType") not in FOUND_BY_TAGS or not specs[0].get("Tags"):
        return None
    kind = BY_TAG_TYPE[specs[0]["ResourceType"]]
    filters = [{"Name": f"tag:{t['Key']}", "Values": [t["Value"]]} for t in specs[0]["Tags"]]
    return kind.describe, kind.list_key, kind.answer_key, kind.id_key, filters


def answer_from(found: Mapping[str, Any], answer_key: str | None) -> dict[str, Any]:
    """The create's answer rebuilt from the described resource."""
    return {answer_key: dict(found)} if answer_key else dict(found)


def pick_landed(found: list[Mapping[str, Any]], id_key: str, claimed: set[str]) -> Mapping[str, Any] | None:
    """The described resource that a lost create made: not one the run already holds, not in use, not going."""
    for item in found:
        state = item.get("State") or item.get("state")
        state = state.get("Name") if isinstance(state, Mapping) else state
        if item.get(id_key) in claimed or any(item.get(k) for k in _IN_USE_KEYS) or state in GONE_STATES:
            continue
        return item
    return None


def _claim(answer: Any, lookup: tuple | None, claimed: set[str]) -> None:
    if lookup is None or not isinstance(answer, Mapping):
        return
    body = answer.get(lookup[2]) if lookup[2] else answer
    if isinstance(body, Mapping) and body.get(lookup[3]):
        claimed.add(body[lookup[3]])


def _find_landed(client: Any, operation: str, lookup: tuple | None, claimed: set[str]) -> dict[str, Any] | None:
    if lookup is None or not operation.startswith(("Create", "Allocate")):
        return None
    method, list_key, answer_key, id_key, filters = lookup
    found = pick_landed(client.paginate(method, Filters=filters).get(list_key, []), id_key, claimed)
    return answer_from(found, answer_key) if found is not None else None


def send(
    client: Any,
    method: str,
    params: Mapping[str, Any],
    lost: Callable[[str], None] | None = None,
    claimed: set[str] | None = None,
) -> Any:
    """``client.method(**params)``, resolving lost answers as the module docstring says.

    ``lost`` is told the operation each time an answer was lost (for the run's figures); ``claimed`` holds the
    ids the run's creates have answered with so far (one set per run, kept by ``Operations``).
    """
    operation = client.api_name(method)
    claimed = set() if claimed is None else claimed
    lookup = tag_lookup(client.meta.service_model.service_name, params)
    resent = False
    for attempt in range(LOST_RESPONSE_ATTEMPTS):
        # A resend of an undo whose answer was lost must hear NotFound ("already done") at once, not retry it.
        once_more = resent and operation.startswith(_UNDO_PREFIXES) and isinstance(client, RetryingClient)
        try:
            answer = (client.without_consistency_retry(method) if once_more else getattr(client, method))(**params)
        except botocore.exceptions.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if resent and done_already(operation, code):
                return {}
            raise
        except Exception as exc:  # botocore's connection errors share no base class with a code
            if not is_lost_response(exc) or attempt == LOST_RESPONSE_ATTEMPTS - 1:
                raise
            if lost is not None:
                lost(operation)
            time.sleep(min(LOST_RESPONSE_PAUSE * 2**attempt, 5.0))
            if not carries_token(params):
                landed = _find_landed(client, operation, lookup, claimed)
                if landed is not None:
                    _claim(landed, lookup, claimed)
                    return landed
            resent = True
            continue
        _claim(answer, lookup, claimed)
        return answer
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def new_client_token() -> str:
    """An idempotency token (ClientToken / ClientRequestToken), new for each create intent.

    AWS answers a repeat of a token it knows (same parameters) with the FIRST resource, even one deleted since: a
    token derived from names would hand a resource re-created after a delete its dead predecessor. The token only
    has to survive the resends of one create within the run (``send``); a create lost in a killed run is found by
    its tags on the next run. 37 ASCII characters: within every AWS limit (EC2 64, Secrets Manager 32-64).
    """
    return "capa-" + uuid.uuid4().hex
