"""In-memory storage of one cluster's objects with kube-apiserver's write semantics.

One ``resourceVersion`` counter per cluster (as etcd's revision is), optimistic concurrency on update, ``uid``,
``creationTimestamp``, ``generation``, ``generateName``, ``managedFields`` (server-side apply ownership), status
subresources, graceful deletion (pods), finalizers, and a bounded event history for watches.

All methods are thread-safe (one re-entrant lock): the API server's handlers, the controllers and the boot
simulator all write here.
"""

from __future__ import annotations

import collections
import datetime
import json
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from . import objects as ob
from .resources import Resource, ResourceTable

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery utilrand
EVENT_HISTORY = 20_000


def clone(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, everything else is immutable and shared).

    The store copies every object it hands out or takes in; ``copy.deepcopy``'s memo and dispatch made those copies
    most of the simulator's CPU (its controllers read every object of several kinds 20 times a second)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def now_iso(offset: float = 0.0) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def random_suffix(n: int = 5) -> str:
    return "".join(random.choice(GENERATE_ALPHABET) for _i in range(n))


class ApiError(Exception):
    """An error answer: rendered as a ``Status`` object with ``code``/``reason``/``message``."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(res: Resource, name: str) -> ApiError:
    details = {"name": name, "kind": res.plural}
    if res.group:
        details["group"] = res.group
    return ApiError(404, "NotFound", f'{res.qualified} "{name}" not found', details)


def conflict(res: Resource, name: str) -> ApiError:
    details = {"name": name, "kind": res.plural}
    if res.group:
        details["group"] = res.group
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.qualified} "{name}": the object has been modified; please apply '
        "your changes to the latest version and try again",
        details,
    )


def invalid(res: Resource, name: str, message: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{res.kind} "{name}" is invalid: {message}',
        {"name": name, "kind": res.kind, "group": res.group},
    )


@dataclass
class Event:
    rv: int
    type: str
    key: tuple[str, str]
    obj: dict[str, Any]


class Store:
    def __init__(self, table: ResourceTable) -> None:
        self.table = table
        self.lock = threading.RLock()
        self.rv = 0
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = collections.defaultdict(dict)
        self.events: collections.deque[Event] = collections.deque(maxlen=EVENT_HISTORY)
        # (group, plural, ns, name) -> time.monotonic() after which a terminating pod may go.
        self.deadlines: dict[tuple[str, str, str, str], float] = {}
        self.changed = threading.Condition(self.lock)
        self.on_change: list[Callable[[str, Resource, dict[str, Any]], None]] = []

    # ---------------------------------------------------------------------------------------------------------
    def _bump(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _emit(self, kind: str, res: Resource, obj: dict[str, Any]) -> None:
        self.events.append(Event(int(obj["metadata"]["resourceVersion"]), kind, res.key, clone(obj)))
        for hook in self.on_change:
            hook(kind, res, obj)
        self.changed.notify_all()

    @staticmethod
    def _out(res: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        out = clone(obj)
        out["apiVersion"] = res.api_version
        out["kind"] = res.kind
        return out

    def namespace_exists(self, ns: str) -> bool:
        with self.lock:
            return ("", ns) in self.objects[("", "namespaces")]

    # ---------------------------------------------------------------------------------------------------------
    def get(self, res: Resource, ns: str, name: str) -> dict[str, Any]:
        with self.lock:
            obj = self.objects[res.key].get((ns if res.namespaced else "", name))
            if obj is None:
                raise not_found(res, name)
            return self._out(res, obj)

    def peek(self, res: Resource, ns: str, name: str) -> dict[str, Any] | None:
        """The stored object itself (callers hold ``lock`` and must not keep it)."""
        return self.objects[res.key].get((ns if res.namespaced else "", name))

    def items(self, res: Resource, ns: str | None = None) -> list[dict[str, Any]]:
        """Copies of the objects of a resource (one namespace or all), ordered by namespace/name."""
        with self.lock:
            found = self.objects[res.key]
            return [
                self._out(res, o)
                for (o_ns, _name), o in sorted(found.items())
                if ns is None or not res.namespaced or o_ns == ns
            ]

    def ownership(self, resources: Iterable[Resource]) -> list[tuple[Resource, str, str, str, tuple[str, ...], bool]]:
        """(resource, namespace, name, uid, owner uids, deleting) of every object of ``resources``, read in place
        under the lock (the garbage collector needs only these, 20 times a second: no copies)."""
        found = []
        with self.lock:
            for res in resources:
                for _key, obj in sorted(self.objects[res.key].items()):  # in items()' order
                    meta = obj["metadata"]
                    owners = tuple(r.get("uid") for r in meta.get("ownerReferences") or [])
                    deleting = bool(meta.get("deletionTimestamp"))
                    found.append((res, meta.get("namespace", ""), meta["name"], meta["uid"], owners, deleting))
        return found

    def list(
        self,
        res: Resource,
        ns: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        cont: str | None = None,
    ) -> dict[str, Any]:
        try:
            labels = ob.parse_label_selector(label_selector)
            fields = ob.parse_field_selector(field_selector, res.plural)
        except ob.PatchError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        with self.lock:
            snapshot_rv = self.rv
            start = ""
            if cont:
                try:
                    token = json.loads(_b64d(cont))
                    start, snapshot_rv = token["start"], token["rv"]
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "BadRequest", "continue key is not valid") from None
            keys = sorted(self.objects[res.key])
            matching = []
            for key in keys:
                if ns is not None and res.namespaced and key[0] != ns:
                    continue
                if "/".join(key) <= start:
                    continue
                obj = self.objects[res.key][key]
                if ob.labels_match(labels, obj["metadata"].get("labels")) and ob.fields_match(fields, obj):
                    matching.append((key, obj))
            meta: dict[str, Any] = {"resourceVersion": str(self.rv)}
            if limit and len(matching) > limit:
                last = matching[limit - 1][0]
                meta["continue"] = _b64e(json.dumps({"start": "/".join(last), "rv": snapshot_rv}))
                meta["remainingItemCount"] = len(matching) - limit
                matching = matching[:limit]
            items = [self._out(res, o) for _key, o in matching]
        for item in items:
            del item["apiVersion"], item["kind"]
        return {"apiVersion": res.api_version, "kind": f"{res.kind}List", "metadata": meta, "items": items}

    # ---------------------------------------------------------------------------------------------------------
    def create(
        self, res: Resource, ns: str, obj: dict[str, Any], manager: str = "", dry_run: bool = False
    ) -> dict[str, Any]:
        obj = clone(obj)
        meta = obj.setdefault("metadata", {})
        with self.lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + random_suffix()
            name = meta.get("name", "")
            if not name:
                raise ApiError(
                    422,
                    "Invalid",
                    f'{res.kind} "" is invalid: metadata.name: Required value: name or generateName is required',
                    {"kind": res.kind, "group": res.group},
                )
            if not NAME_RE.match(name) and res.plural not in (
                "clusterroles",
                "clusterrolebindings",
                "roles",
                "rolebindings",
            ):
                raise invalid(
                    res,
                    name,
                    f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain '
                    "must consist of lower case alphanumeric characters, '-' or '.'",
                )
            if res.namespaced:
                if meta.get("namespace") and meta["namespace"] != ns:
                    raise ApiError(
                        400,
                        "BadRequest",
                        "the namespace of the provided object does not match the namespace sent on the request",
                    )
                if not self.namespace_exists(ns):
                    raise ApiError(404, "NotFound", f'namespaces "{ns}" not found', {"name": ns, "kind": "namespaces"})
                namespace = self.objects[("", "namespaces")][("", ns)]
                if namespace["metadata"].get("deletionTimestamp"):
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{res.plural} "{name}" is forbidden: unable to create new content in namespace {ns} because '
                        "it is being terminated",
                    )
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            key = (ns if res.namespaced else "", name)
            if key in self.objects[res.key]:
                details = {"name": name, "kind": res.plural}
                if res.group:
                    details["group"] = res.group
                raise ApiError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists', details)
            if res.has_status and res.plural != "nodes":
                obj.pop("status", None)
            self._defaults(res, obj)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_iso()
            meta["generation"] = 1
            for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(k, None)
            self._own_update(res, None, obj, manager or "unknown", "Update")
            if dry_run:
                meta["resourceVersion"] = str(self.rv)
                return self._out(res, obj)
            meta["resourceVersion"] = self._bump()
            self.objects[res.key][key] = obj
            self._emit("ADDED", res, obj)
            return self._out(res, obj)

    def _defaults(self, res: Resource, obj: dict[str, Any]) -> None:
        if res.plural == "pods":
            spec = obj.setdefault("spec", {})
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("serviceAccountName", "default")
            obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        elif res.plural == "namespaces":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj["status"] = {"phase": "Active"}
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif res.plural == "secrets":
            obj.setdefault("type", "Opaque")
            if "stringData" in obj:
                import base64

                data = obj.setdefault("data", {})
                for k, v in (obj.pop("stringData") or {}).items():
                    data[k] = base64.b64encode(str(v).encode()).decode()
        elif res.plural == "services":
            spec = obj.setdefault("spec", {})
            spec.setdefault("type", "ClusterIP")
            if spec.get("clusterIP") is None and spec["type"] != "ExternalName":
                spec["clusterIP"] = f"10.96.{random.randint(1, 254)}.{random.randint(1, 254)}"
                spec["clusterIPs"] = [spec["clusterIP"]]
            spec.setdefault("sessionAffinity", "None")
        elif res.plural in ("deployments", "replicasets", "statefulsets"):
            obj.setdefault("spec", {}).setdefault("replicas", 1)
        elif res.plural == "poddisruptionbudgets":
            obj["status"] = {
                "disruptionsAllowed": 0,
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "expectedPods": 0,
                "observedGeneration": 0,
            }

    # ---------------------------------------------------------------------------------------------------------
    def _own_update(
        self, res: Resource, old: dict[str, Any] | None, new: dict[str, Any], manager: str, operation: str
    ) -> None:
        """Give ``manager`` the fields this write changed (operation Update takes them from everyone)."""
        entries = clone(old["metadata"].get("managedFields", [])) if old else []
        changed, removed = ob.changed_paths(_spec_view(old), _spec_view(new))
        sets = [(e, ob.from_fields_v1(e.get("fieldsV1", {}))) for e in entries]
        for entry, paths in sets:
            paths -= removed
            if not (entry["manager"] == manager and entry["operation"] == operation):
                paths -= changed
            entry["fieldsV1"] = ob.to_fields_v1(paths)
        mine = next((e for e, _paths in sets if e["manager"] == manager and e["operation"] == operation), None)
        if changed or mine is not None:
            if mine is None:
                mine = {"manager": manager, "operation": operation, "fieldsType": "FieldsV1"}
                sets.append((mine, set()))
            paths = next(p for e, p in sets if e is mine) | changed
            mine.update({"apiVersion": res.api_version, "time": now_iso(), "fieldsV1": ob.to_fields_v1(paths)})
        new["metadata"]["managedFields"] = [e for e, p in sets if e.get("fieldsV1")]
        if not new["metadata"]["managedFields"]:
            new["metadata"].pop("managedFields")

    def _replace(
        self,
        res: Resource,
        old: dict[str, Any],
        new: dict[str, Any],
        manager: str,
        subresource: str | None,
        operation: str = "Update",
        own: bool = True,
    ) -> dict[str, Any]:
        """Store ``new`` in place of ``old`` (lock held): immutable metadata, status rules, generation, rv.

        ``subresource``: ``None`` (main endpoint: status kept), ``"status"`` (only status changes) or ``"all"``
        (a controller writing spec and status together).
        """
        new = clone(new)
        new.pop("apiVersion", None)
        new.pop("kind", None)
        meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
        for k in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if res.has_status and subresource == "status":
            status = new.get("status")
            new = clone(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            meta = new["metadata"]
        elif res.has_status and subresource is None:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        if _spec_view(old, drop_meta=True) != _spec_view(new, drop_meta=True):
            meta["generation"] = old_meta.get("generation", 1) + 1
        else:
            meta["generation"] = old_meta.get("generation", 1)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if "managedFields" in old_meta:
            candidate = {**new, "metadata": {**meta, "managedFields": old_meta["managedFields"]}}
        else:
            candidate = {**new, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
        if candidate == old and own:
            return self._out(res, old)  # a no-op write keeps the resourceVersion, as on a real server
        if own:
            self._own_update(res, old, new, manager or "unknown", operation)
        meta["resourceVersion"] = self._bump()
        key = (old_meta.get("namespace", "") if res.namespaced else "", old_meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and res.plural not in ("pods", "namespaces"):
            del self.objects[res.key][key]
            self._emit("DELETED", res, new)
            return self._out(res, new)
        self.objects[res.key][key] = new
        self._emit("MODIFIED", res, new)
        return self._out(res, new)

    def update(
        self,
        res: Resource,
        ns: str,
        name: str,
        obj: dict[str, Any],
        manager: str = "",
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        with self.lock:
            old = self.peek(res, ns, name)
            if old is None:
                raise not_found(res, name)
            new = clone(obj)
            rv = new.get("metadata", {}).get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            if new.get("metadata", {}).get("name", name) != name:
                raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
            new.setdefault("metadata", {})["resourceVersion"] = old["metadata"]["resourceVersion"]
            if dry_run:
                return self._out(res, new)
            return self._replace(res, old, new, manager, subresource)

    def patch(
        self,
        res: Resource,
        ns: str,
        name: str,
        content_type: str,
        body: Any,
        manager: str = "",
        subresource: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        kind = content_type.split(";")[0].strip()
        with self.lock:
            old = self.peek(res, ns, name)
            if kind == "application/apply-patch+yaml":
                return self._apply(res, ns, name, old, body, manager, subresource, force, dry_run)
            if old is None:
                raise not_found(res, name)
            base = self._out(res, old)
            try:
                if kind == "application/merge-patch+json":
                    new = ob.merge_patch(base, body)
                elif kind == "application/strategic-merge-patch+json":
                    if res.crd:
                        raise ApiError(
                            415,
                            "UnsupportedMediaType",
                            "strategic merge patch is not supported for custom resources (use a merge patch)",
                        )
                    new = ob.strategic_merge_patch(base, body)
                elif kind == "application/json-patch+json":
                    new = ob.json_patch(base, body)
                else:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: "
                        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
                        "application/strategic-merge-patch+json",
                    )
            except ob.PatchError as exc:
                raise ApiError(422 if kind == "application/json-patch+json" else 400, "BadRequest", str(exc)) from None
            if not isinstance(new, dict):
                raise ApiError(400, "BadRequest", "patch did not produce an object")
            rv = (new.get("metadata") or {}).get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            new.setdefault("metadata", {})["resourceVersion"] = old["metadata"]["resourceVersion"]
            if dry_run:
                return self._out(res, new)
            return self._replace(res, old, new, manager, subresource)

    def _apply(
        self,
        res: Resource,
        ns: str,
        name: str,
        old: dict[str, Any] | None,
        applied: Any,
        manager: str,
        subresource: str | None,
        force: bool,
        dry_run: bool,
    ) -> dict[str, Any]:
        if not manager:
            raise ApiError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            )
        if not isinstance(applied, dict):
            raise ApiError(400, "BadRequest", "apply patch must be an object")
        if applied.get("kind") != res.kind or applied.get("apiVersion") != res.api_version:
            raise ApiError(
                400,
                "BadRequest",
                f"invalid object type: {applied.get('apiVersion')}, Kind={applied.get('kind')}; "
                f"expected {res.api_version}, Kind={res.kind}",
            )
        meta = applied.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the name on the URL")
        applied_paths = ob.field_paths(_spec_view(applied))
        if old is None:
            if subresource:
                raise not_found(res, name)
            created = clone(applied)
            created["metadata"]["name"] = name
            result = self.create(res, ns, created, manager, dry_run=dry_run)
            if dry_run:
                return result
            with self.lock:
                stored = self.peek(res, ns, name)
                assert stored is not None
                stored["metadata"]["managedFields"] = [
                    {
                        "manager": manager,
                        "operation": "Apply",
                        "apiVersion": res.api_version,
                        "time": now_iso(),
                        "fieldsType": "FieldsV1",
                        "fieldsV1": ob.to_fields_v1(applied_paths),
                    }
                ]
                return self._out(res, stored)
        entries = clone(old["metadata"].get("managedFields", []))
        current = self._out(res, old)
        conflicts: dict[str, list[ob.Path]] = {}
        others: list[tuple[dict[str, Any], set[ob.Path]]] = []
        mine: set[ob.Path] = set()
        for entry in entries:
            paths = ob.from_fields_v1(entry.get("fieldsV1", {}))
            if entry["manager"] == manager and entry["operation"] == "Apply":
                mine = paths
                continue
            others.append((entry, paths))
            for path in applied_paths & paths:
                if ob.get_path(current, path) != ob.get_path(applied, path):
                    conflicts.setdefault(entry["manager"], []).append(path)
        if conflicts and not force:
            total = sum(len(v) for v in conflicts.values())
            if total == 1:
                who, paths = next(iter(conflicts.items()))
                path = paths[0]
                text = f'Apply failed with 1 conflict: conflict with "{who}": {ob.render_path(path)}'
            else:
                lines = [
                    f'conflicts with "{who}":\n' + "\n".join(f"- {ob.render_path(p)}" for p in sorted(paths))
                    for who, paths in conflicts.items()
                ]
                text = f"Apply failed with {total} conflicts: " + "\n".join(lines)
            causes = [
                {"reason": "FieldManagerConflict", "message": f'conflict with "{who}"', "field": ob.render_path(p)}
                for who, paths in conflicts.items()
                for p in paths
            ]
            raise ApiError(409, "Conflict", text, {"name": name, "kind": res.plural, "causes": causes})
        new = clone(current)
        taken = {p for paths in conflicts.values() for p in paths}
        for entry, paths in others:
            paths -= taken
            entry["fieldsV1"] = ob.to_fields_v1(paths)
        still_owned = set().union(*[p for _entry, p in others]) if others else set()
        for path in sorted(mine - applied_paths - still_owned, key=len, reverse=True):
            ob.remove_path(new, path)
        if subresource == "status":
            new["status"] = ob.apply_merge(new.get("status"), applied.get("status"), "status")
        else:
            body = {k: v for k, v in applied.items() if k not in ("status",) or not res.has_status}
            body["metadata"] = {k: v for k, v in meta.items() if k not in ob.UNOWNED_METADATA}
            new = ob.apply_merge(new, body)
        new["metadata"]["managedFields"] = [e for e, p in others if p] + [
            {
                "manager": manager,
                "operation": "Apply",
                "apiVersion": res.api_version,
                "time": now_iso(),
                "fieldsType": "FieldsV1",
                "fieldsV1": ob.to_fields_v1(applied_paths),
            }
        ]
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if dry_run:
            return new
        return self._replace(res, old, new, manager, subresource, own=False)

    # ---------------------------------------------------------------------------------------------------------
    def delete(
        self,
        res: Resource,
        ns: str,
        name: str,
        grace: int | None = None,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        scale: float = 1.0,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete (or start deleting) an object; answer the object (graceful/finalizers) or a Success Status."""
        with self.lock:
            old = self.peek(res, ns, name)
            if old is None:
                raise not_found(res, name)
            meta = old["metadata"]
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != meta["uid"]:
                raise conflict(res, name)
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise conflict(res, name)
            if dry_run:
                return self._out(res, old)
            if propagation == "Orphan":
                self._orphan(meta["uid"])
            if res.plural == "pods":
                period = grace if grace is not None else old["spec"].get("terminationGracePeriodSeconds", 30)
                phase = old.get("status", {}).get("phase")
                if period == 0 or not old["spec"].get("nodeName") or phase in ("Succeeded", "Failed"):
                    return self.remove(res, ns, name)
                key = (res.group, res.plural, ns, name)
                deadline = time.monotonic() + period * scale
                if key in self.deadlines and self.deadlines[key] <= deadline:
                    return self._out(res, old)
                self.deadlines[key] = deadline
                new = clone(old)
                new["metadata"]["deletionTimestamp"] = now_iso(period * scale)
                new["metadata"]["deletionGracePeriodSeconds"] = period
                new["metadata"]["resourceVersion"] = self._bump()
                self.objects[res.key][(ns, name)] = new
                self._emit("MODIFIED", res, new)
                return self._out(res, new)
            if meta.get("finalizers") or (res.plural == "namespaces"):
                if meta.get("deletionTimestamp"):
                    return self._out(res, old)
                new = clone(old)
                new["metadata"]["deletionTimestamp"] = now_iso()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                if res.plural == "namespaces":
                    new["status"] = {"phase": "Terminating"}
                new["metadata"]["resourceVersion"] = self._bump()
                self.objects[res.key][(ns if res.namespaced else "", name)] = new
                self._emit("MODIFIED", res, new)
                return self._out(res, new)
            self.remove(res, ns, name)
            details = {"name": name, "kind": res.plural, "uid": meta["uid"]}
            if res.group:
                details["group"] = res.group
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def remove(self, res: Resource, ns: str, name: str) -> dict[str, Any]:
        """Remove an object now (the end of a graceful deletion, GC, force delete)."""
        with self.lock:
            key = (ns if res.namespaced else "", name)
            old = self.objects[res.key].pop(key, None)
            if old is None:
                raise not_found(res, name)
            self.deadlines.pop((res.group, res.plural, ns, name), None)
            gone = clone(old)
            gone["metadata"]["resourceVersion"] = self._bump()
            self._emit("DELETED", res, gone)
            return self._out(res, gone)

    def _orphan(self, uid: str) -> None:
        for bucket in self.objects.values():
            for obj in bucket.values():
                refs = obj["metadata"].get("ownerReferences") or []
                if any(r.get("uid") == uid for r in refs):
                    obj["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]

    # ---------------------------------------------------------------------------------------------------------
    def mutate(
        self, res: Resource, ns: str, name: str, fn: Callable[[dict[str, Any]], None], manager: str
    ) -> dict[str, Any] | None:
        """A controller's read-modify-write of spec and status together; ``None`` when the object is gone."""
        with self.lock:
            old = self.peek(res, ns, name)
            if old is None:
                return None
            new = clone(old)
            fn(new)
            if new == old:
                return self._out(res, old)
            return self._replace(res, old, new, manager, "all")

    def ensure(self, res: Resource, obj: dict[str, Any], manager: str) -> dict[str, Any]:
        """Create unless it exists (the bootstrap objects kubeadm and controllers make)."""
        ns = obj.get("metadata", {}).get("namespace", "")
        try:
            created = self.create(res, ns, obj, manager)
        except ApiError as exc:
            if exc.code != 409:
                raise
            return self.get(res, ns, obj["metadata"]["name"])
        if res.has_status and "status" in obj and res.plural != "nodes":
            status = clone(obj["status"])
            return self.mutate(res, ns, obj["metadata"]["name"], lambda o: o.update(status=status), manager) or created
        return created

    def watch_events(self, after_rv: int) -> Iterator[Event]:
        with self.lock:
            return iter([e for e in self.events if e.rv > after_rv])

    def oldest_event_rv(self) -> int:
        with self.lock:
            return self.events[0].rv if self.events else self.rv


def _spec_view(obj: dict[str, Any] | None, drop_meta: bool = False) -> dict[str, Any]:
    """An object without the server-managed parts, for ownership and generation comparisons."""
    if not obj:
        return {}
    view = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ob.UNOWNED_METADATA}
    if drop_meta:
        view.pop("metadata", None)
        view.pop("status", None)
    else:
        view["metadata"] = meta
    return view


def _b64e(text: str) -> str:
    import base64

    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _b64d(text: str) -> str:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
