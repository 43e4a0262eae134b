# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (kernel): reads one tier hands to the next, so a run reads each thing once while nothing changes.

A cluster is reconciled by a chain of tiers (preflight, VPC, subnets, security groups, load balancer, machines,
the status read-back), and each observes what it manages before it plans. On a run that changes nothing they ask
AWS the same questions again and again: the VPC, its subnets, the cluster's instances, the machines' image and
instance type. Cluster API's controllers do not pay for that: they read through a shared informer cache. This is
the same idea at the boundary a playbook has, between two module runs:

* a run that was given ``shared_reads`` answers a describe it makes from them when an earlier run of the chain
  made **the identical request** (same service, operation, region, endpoint and parameters, page token included),
  no more than :data:`MAX_AGE` seconds ago - the answer AWS gave then, without a request;
* a read that asks only for ids (:data:`BY_ID`: the VPC by id after the VPC by its owner tag) is answered from the
  items an earlier run's reads of the same call returned, when every id is among them;
* a load balancer's tags (:data:`TAGS_FROM_TAGGING`) are answered from the tagging API's answers, when every load
  balancer asked is listed there: ``GetResources`` lists a resource with all its tags, and the preflight's
  request finds every load balancer the cluster owns;
* each read is served at most once per run: the same request again inside one run is a poll, and goes to AWS;
* once a run makes (or, in check mode, plans) any mutating call, it serves nothing more and hands nothing
  forward but :data:`STATIC` reads (images, instance types, zones: nothing a reconcile does changes them): what it
  changed may be in any of the others. So a run that creates something starts the next one cold, and a no-op run
  hands on everything (what it was given and what it read) - exactly where the reads repeat;
* only descriptions of infrastructure are shared (:func:`shareable`): never a secret's value, a launch template's
  user data or an instance attribute, so the handed-forward data can sit in a host fact and a task's result;
* a read may be asked of the given reads alone (:meth:`SharedReads.only_served`): answered when an earlier run of
  the chain made it, :class:`NotShared` raised - and nothing sent - otherwise. A run uses it for what it would not
  ask AWS for (a pool's architecture from the cluster's instances, which a machine group already described);
* a Kubernetes API server a run could not reach is handed on as that fact (:meth:`SharedReads.unreachable`): while
  nothing is written, the steps after it fail every request to it at once, in the same words, instead of each
  reading the cluster PKI, minting a certificate and waiting out a connect timeout.

It works below every tier, on botocore's ``before-call`` / ``after-call`` events, so the tiers read as they
always do (and a run given no ``shared_reads`` behaves exactly as before). ``clusterapi.aws.capa_step`` carries
the reads from one step of the roles to the next in the host fact ``capa_shared_reads``.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import datetime
import json
import time
import zlib
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10; only the type checker reads it

try:
    from botocore.awsrequest import AWSResponse
except ImportError:
    pass

MAX_AGE = 120.0  # seconds a handed-forward read stays usable (a whole no-op of a large cluster fits in it)

# Reads that describe infrastructure only. A service's reads outside these stay private to the run that made them.
SHAREABLE_PREFIXES: Mapping[str, tuple[str, ...]] = {
    "ec2": ("Describe",),
    "elb": ("Describe",),
    "elbv2": ("Describe",),
    "autoscaling": ("Describe",),
    "eks": ("Describe", "List"),
    "resourcegroupstaggingapi": ("GetResources",),
    "secretsmanager": ("ListSecrets",),  # names, tags and dates; never GetSecretValue
}
# Reads of those services that can carry what must not travel in a fact: user data, attributes that hold it.
NEVER_SHARED = frozenset({"DescribeLaunchTemplateVersions", "DescribeInstanceAttribute", "DescribeImageAttribute"})

# Reads no write of a reconcile can change: they survive a run's changes (and a loop's items).
STATIC = frozenset({"ec2:DescribeImages", "ec2:DescribeInstanceTypes", "ec2:DescribeAvailabilityZones"})

# Reads by id that answer with the resources themselves: the id parameter, the answer's list, an item's id field.
# Asked only for ids an earlier read of the chain returned whole (capa_vpc finds the VPC by its owner tag, capa_subnet
# then asks for it by id), such a read is answered from those items: the same resources as AWS described them then.
BY_ID: Mapping[str, tuple[str, str, str]] = {
    "ec2:DescribeVpcs": ("VpcIds", "Vpcs", "VpcId"),
    "ec2:DescribeSubnets": ("SubnetIds", "Subnets", "SubnetId"),
    "ec2:DescribeSecurityGroups": ("GroupIds", "SecurityGroups", "GroupId"),
    "ec2:DescribeInternetGateways": ("InternetGatewayIds", "InternetGateways", "InternetGatewayId"),
    "ec2:DescribeRouteTables": ("RouteTableIds", "RouteTables", "RouteTableId"),
    "ec2:DescribeNatGateways": ("NatGatewayIds", "NatGateways", "NatGatewayId"),
    "ec2:DescribeImages": ("ImageIds", "Images", "ImageId"),
    "ec2:DescribeInstanceTypes": ("InstanceTypes", "InstanceTypes", "InstanceType"),
    "elb:DescribeLoadBalancers": ("LoadBalancerNames", "LoadBalancerDescriptions", "LoadBalancerName"),
    "elbv2:DescribeLoadBalancers": ("Names", "LoadBalancers", "LoadBalancerName"),
}

# Tag reads the tagging API's answers hold: ``GetResources`` lists each resource it finds with ALL its tags, so the
# tags of a load balancer the preflight's request found (by the cluster's owner tag) need no second request. The
# request's id parameter, the answer's id field, and the id an ARN stands for (None: not this kind of resource).
TAGGING_CALL = "resourcegroupstaggingapi:GetResources"


def _classic_lb_name(arn: str) -> str | None:
    # arn:aws:elasticloadbalancing:<region>:<account>:loadbalancer/<name> (v2 ones: loadbalancer/<type>/<name>/<id>)
    parts = arn.split(":", 5)
    if len(parts) < 6 or parts[2] != "elasticloadbalancing" or not parts[5].startswith("loadbalancer/"):
        return None
    name = parts[5][len("loadbalancer/") :]
    return name if name and "/" not in name else None


def _elbv2_arn(arn: str) -> str | None:
    return arn if arn.startswith("arn:") and ":elasticloadbalancing:" in arn else None


TAGS_FROM_TAGGING: Mapping[str, tuple[str, str, Callable[[str], str | None]]] = {
    "elb:DescribeTags": ("LoadBalancerNames", "LoadBalancerName", _classic_lb_name),
    "elbv2:DescribeTags": ("ResourceArns", "ResourceArn", _elbv2_arn),
}

# The entry that says a Kubernetes API server did not answer (:meth:`SharedReads.unreachable`): a fact of the run,
# not a read of anything, so it carries nothing but the error's words.
UNREACHABLE = "k8s:Unreachable"

_DATETIME, _BYTES = "__capa_datetime__", "__capa_bytes__"


def shareable(service: str, operation: str) -> bool:
    """Whether answers to ``service:operation`` may be handed to the next run (see :data:`SHAREABLE_PREFIXES`)."""
    if operation in NEVER_SHARED:
        return False
    return operation.startswith(SHAREABLE_PREFIXES.get(service, ()))


def static_only(entries: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`STATIC` reads of ``entries`` (what may cross a change)."""
    return {key: entry for key, entry in entries.items() if isinstance(entry, dict) and entry.get("call") in STATIC}


# The form the reads travel in between steps (a host fact): one string, zlib-compressed JSON. Ansible deep-copies a
# host's facts for every task it runs there and walks every task result: as nested data, the hundreds of answers of
# a cluster's no-op were most of ansible-playbook's own CPU (20 clusters: 41 of its 123 CPU-seconds in copying
# facts); as one string they cost nothing to copy, and a task's result does not show them.
PACKED_PREFIX = "capa-shared-reads:zlib+base64:"


def pack(entries: Mapping[str, Any]) -> str:
    """``entries`` (what :meth:`SharedReads.handed_forward` returned) as one string for a host fact."""
    return _packed(_text(entries))


def pack_withholding(entries: Mapping[str, Any], secrets: Iterable[str]) -> str:
    """``entries`` packed for a module's result - or nothing packed, when one of ``secrets`` (the run's ``no_log``
    values) is among them.

    A module's result leaves packed: as nested data, every answer of a no-op's reads was walked by
    ``AnsibleModule.exit_json`` (masking ``no_log`` values), encoded, decoded by the action plugin and packed again - a
    tenth of a step's CPU. A packed string cannot be masked, so the check is made here, on the JSON text, before it is
    compressed; an answer that carries a secret (it should never happen: only descriptions are shared) is not handed
    on, and the next step reads for itself.
    """
    text = _text(entries)
    if any(_exposes(text, secret) for secret in secrets if secret):
        text = _text({})
    return _packed(text)


def _text(entries: Mapping[str, Any]) -> str:
    return json.dumps(entries, sort_keys=True, separators=(",", ":"))


def _packed(text: str) -> str:
    return PACKED_PREFIX + base64.b64encode(zlib.compress(text.encode(), 6)).decode()


def _exposes(text: str, secret: str) -> bool:
    # As written, or as JSON escapes it (quotes, backslashes, anything beyond ASCII).
    return secret in text or json.dumps(secret)[1:-1] in text


def is_packed(value: Any) -> TypeGuard[str]:
    """Whether ``value`` is in :func:`pack`'s form (it may still be damaged: :func:`unpack` says)."""
    return isinstance(value, str) and value.startswith(PACKED_PREFIX)


def unpack(value: Any) -> dict[str, Any]:
    """What :func:`pack` packed (a dict is taken as it is: a registered result's ``shared_reads``); anything else,
    a damaged string included, is nothing handed on - the run reads for itself."""
    if isinstance(value, Mapping):
        return dict(value)
    if not is_packed(value):
        return {}
    try:
        found = json.loads(zlib.decompress(base64.b64decode(value[len(PACKED_PREFIX) :].encode())))
    except (ValueError, zlib.error):
        return {}
    return found if isinstance(found, dict) else {}


def encode(value: Any) -> Any:
    """A parsed botocore response as JSON data (datetimes and bytes tagged, so :func:`decode` restores them)."""
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, datetime.datetime):
        return {_DATETIME: value.isoformat()}
    if isinstance(value, (bytes, bytearray)):
        return {_BYTES: base64.b64encode(bytes(value)).decode()}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_DATETIME}:
            return datetime.datetime.fromisoformat(value[_DATETIME])
        if set(value) == {_BYTES}:
            return base64.b64decode(value[_BYTES])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def _asked_ids(params: Any, id_param: str) -> list[Any] | None:
    """The ids a read asks for when ``id_param`` is all it gives (as the caller gave it), else None."""
    ids = params.get(id_param) if isinstance(params, Mapping) and set(params) == {id_param} else None
    return ids if isinstance(ids, list) and ids else None


class NotShared(Exception):
    """A read asked of the given reads alone (:meth:`SharedReads.only_served`) that no earlier run made."""


class SharedReads:
    """One run's side of the hand-over: what it was given, what it served from that, what it read itself."""

    def __init__(self, given: Mapping[str, Any] | None, *, scope: str, clock: Callable[[], float] = time.time) -> None:
        self.enabled = given is not None  # a run given nothing hands nothing on (its result stays as it was)
        self.scope = scope  # region and endpoint: a read is only the same read against the same AWS
        self._clock = clock
        now = clock()
        self._given = {
            key: entry
            for key, entry in (given or {}).items()
            if isinstance(entry, dict) and 0 <= now - float(entry.get("taken", 0)) <= MAX_AGE
        }
        self._read: dict[str, dict[str, Any]] = {}
        self._served_keys: set[str] = set()
        self.served: collections.Counter[str] = collections.Counter()
        self.unsent: collections.Counter[str] = collections.Counter()  # asked of the given reads alone, not there
        self.wrote = False
        self._only_served = False

    # any client's side ---------------------------------------------------------------------------------------
    def serve(self, call: str, key: str) -> Any | None:
        """The answer an earlier run got to this identical request (``key``), once per run; None: ask it."""
        if not self.enabled or (self.wrote and call not in STATIC):
            return None
        entry = self._given.get(key)
        if entry is None or key in self._served_keys:
            return None
        self._served_keys.add(key)
        self.served[call] += 1
        return decode(entry["response"])

    @contextlib.contextmanager
    def only_served(self) -> Iterator[None]:
        """Inside, a read is answered from the given reads or not at all: :class:`NotShared` is raised before
        anything is sent (and it is not counted as a request). For a question a run would not ask AWS on its own."""
        self._only_served = True
        try:
            yield
        finally:
            self._only_served = False

    def unreachable(self, target: str, call: str) -> str | None:
        """Why an earlier run of the chain could not reach the API server ``target`` (its words), while nothing was
        written since; None: try. Unlike a read it holds for every request of the run, not once: a server that did
        not answer a moment ago is not asked again by each step of a run that changes nothing (each attempt would read
        the cluster PKI, mint a certificate and wait out a connect timeout)."""
        if not self.enabled or self.wrote:
            return None
        entry = self._given.get(self.key(UNREACHABLE, target))
        if entry is None or not isinstance(entry.get("response"), str):
            return None
        self.served[call] += 1
        return str(entry["response"])

    def note_unreachable(self, target: str, why: str) -> None:
        """This run could not reach the API server ``target``: the steps after it are told (:meth:`unreachable`)."""
        self.record(UNREACHABLE, self.key(UNREACHABLE, target), why)

    def serve_by_id(self, call: str, params: Any, key: str) -> Any | None:
        """A read of :data:`BY_ID` asking only for ids (``params``, as the caller gave them) answered from the items
        of the given reads of the same call, when every id is among them; once per run, as :meth:`serve`."""
        by_id = BY_ID.get(call)
        if by_id is None or not self.enabled or (self.wrote and call not in STATIC) or key in self._served_keys:
            return None
        id_param, list_key, id_field = by_id
        ids = _asked_ids(params, id_param)
        if ids is None:
            return None
        found: dict[str, Any] = {}
        for item in self._given_items(call, list_key):
            if item.get(id_field) in ids:
                found.setdefault(item[id_field], item)
        if not self._all_found(call, key, ids, found):
            return None
        return {list_key: [decode(found[name]) for name in dict.fromkeys(ids)]}

    def serve_tags(self, call: str, params: Any, key: str) -> Any | None:
        """A load balancer tag read (:data:`TAGS_FROM_TAGGING`) answered from the given tagging-API answers, when
        every load balancer asked is listed there; once per run, as :meth:`serve`. Tags are never static: after a
        write nothing is answered this way."""
        derived = TAGS_FROM_TAGGING.get(call)
        if derived is None or not self.enabled or self.wrote or key in self._served_keys:
            return None
        id_param, id_field, identify = derived
        ids = _asked_ids(params, id_param)
        if ids is None:
            return None
        found: dict[str, Any] = {}
        for item in self._given_items(TAGGING_CALL, "ResourceTagMappingList"):
            name = identify(str(item.get("ResourceARN", "")))
            if name is not None and name in ids:
                found.setdefault(name, item.get("Tags") or [])
        if not self._all_found(call, key, ids, found):
            return None
        return {"TagDescriptions": [{id_field: name, "Tags": decode(found[name])} for name in dict.fromkeys(ids)]}

    def _given_items(self, call: str, list_key: str) -> Iterator[dict[str, Any]]:
        """The items of every given answer to ``call`` in this run's scope."""
        prefix = f"{self.scope}|{call}|"
        for entry_key, entry in self._given.items():
            if entry_key.startswith(prefix) and isinstance(entry.get("response"), dict):
                yield from (item for item in entry["response"].get(list_key) or [] if isinstance(item, dict))

    def _all_found(self, call: str, key: str, ids: list[Any], found: Mapping[str, Any]) -> bool:
        """Whether every id asked is in ``found``; if so the read counts as served (once per run)."""
        if not set(ids) <= set(found):
            return False
        self._served_keys.add(key)
        self.served[call] += 1
        return True

    def record(self, call: str, key: str, response: Any) -> None:
        """This run's answer to ``key``, for the next run (only while it is still true: nothing written since)."""
        if self.enabled and not (self.wrote and call not in STATIC):
            self._read[key] = {"taken": self._clock(), "call": call, "response": encode(response)}

    def note_write(self) -> None:
        """A mutating request went out (to AWS or to the cluster): from here on only static reads hold."""
        self.wrote = True

    def key(self, call: str, request: Any) -> str:
        """The identity of a request: this run's scope, the call and the request as sent (page tokens included)."""
        return f"{self.scope}|{call}|{json.dumps(request, sort_keys=True, default=str)}"

    # botocore's side -------------------------------------------------------------------------------------------
    def attach(self, events: Any) -> None:
        # First in line, so a served read never reaches another handler that would send it.
        events.register("before-parameter-build", self._keep_params)
        events.register_first("before-call", self._before_call)
        events.register("after-call", self._after_call)

    @staticmethod
    def _keep_params(params: Any = None, context: Any = None, **_kw: Any) -> None:
        # before-call is given the request as serialized for the wire: serve_by_id needs the caller's parameters
        if isinstance(context, dict) and isinstance(params, dict):
            context["capa_params"] = dict(params)

    def _before_call(self, model: Any = None, params: Any = None, context: Any = None, **_kw: Any) -> Any:
        if model is None:
            return None
        service, operation = model.service_model.service_name, model.name
        if not shareable(service, operation):
            if self._only_served:
                self._withhold(f"{service}:{operation}")
            if not operation.startswith(("Describe", "List", "Get", "Head")):
                self.note_write()
            return None
        call = f"{service}:{operation}"
        request = params if isinstance(params, dict) else {}
        key = self.key(call, {k: request.get(k) for k in ("url_path", "query_string", "body", "method")})
        answer = self.serve(call, key)
        if answer is None and isinstance(context, dict):
            params = context.get("capa_params")
            answer = self.serve_by_id(call, params, key) or self.serve_tags(call, params, key)
        if isinstance(context, dict):
            # after-call is not given the request: it finds what it needs here
            context["capa_shared"] = (call, key, answer is not None)
        if answer is None:
            if self._only_served:
                self._withhold(call)
            return None
        return AWSResponse(None, 200, {}, None), answer

    def _withhold(self, call: str) -> None:
        self.unsent[call] += 1
        raise NotShared(call)

    def _after_call(self, http_response: Any = None, parsed: Any = None, context: Any = None, **_kw: Any) -> None:
        shared = context.get("capa_shared") if isinstance(context, dict) else None
        if shared is None or shared[2]:
            return  # not a shareable read, or answered from the given reads
        status = getattr(http_response, "status_code", 500)
        if isinstance(parsed, dict) and status < 300 and "Error" not in parsed:
            self.record(shared[0], shared[1], parsed)

    # the module's side -------------------------------------------------------------------------------------------
    def handed_forward(self, planned_change: bool) -> dict[str, Any] | None:
        """What the next run may use: what this run was given and still holds, with its own reads over it - only
        the static ones after a change (made or planned). None when the run was given none (option not used)."""
        if not self.enabled:
            return None
        everything = {**self._given, **self._read}
        return static_only(everything) if planned_change or self.wrote else everything
