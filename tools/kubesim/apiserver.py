"""A kube-apiserver stand-in for one workload cluster: HTTPS on a real socket, authentication and RBAC, discovery,
generic storage with Kubernetes semantics, watches, eviction with PodDisruptionBudgets and WebSocket port-forward.

Why aiohttp directly and not kmock: the API server must serve ``pods/portforward`` as a WebSocket upgrade speaking
``v4.channel.k8s.io`` (aiohttp has WebSockets built in; kmock 0.8 has no port-forward), present a serving
certificate signed by the cluster's own CA, bind a port reserved before the cluster exists, and implement eviction,
PDBs, selectors, pagination, watches and server-side apply exactly - which with kmock would be reactions over
nearly every verb, on an early-stage API that announces breaking changes.

Deviations from kube-apiserver that a client can see (all documented in tools/kubesim/README.md):

* A client certificate that does not chain to the cluster CA fails the TLS handshake (kube-apiserver requests
  client certificates without verifying them in TLS and answers 401 afterwards): Python's ``ssl`` cannot request a
  certificate without verifying it.
* Only JSON (no protobuf, no table output); WebSocket port-forward only (no SPDY).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
import json
import re
import socket
import ssl
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable
from urllib.parse import parse_qs

import yaml
from aiohttp import WSMsgType, web
from cryptography import x509

from . import pki
from .resources import Resource, ResourceTable
from .store import ApiError, Store, now_iso

if TYPE_CHECKING:
    from .journal import Journal

# Cluster.portforward_target's answer for kube-apiserver-<node>:6443: the node's own endpoint (Cluster.node_apiserver).
NODE_APISERVER = ("node-apiserver", 0)
BOOTSTRAP_TOKEN_RE = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
MASTERS = "system:masters"
PORTFORWARD_PROTOCOLS = ("v4.channel.k8s.io", "channel.k8s.io")

TokenAuthenticator = Callable[[str], Awaitable[tuple[str, list[str]] | None]]


class User:
    def __init__(self, name: str, groups: list[str], via: str) -> None:
        self.name = name
        self.groups = groups
        self.via = via

    @property
    def is_anonymous(self) -> bool:
        return self.name == "system:anonymous"


# ------------------------------------------------------------------------------------------------------------------
# RBAC
# ------------------------------------------------------------------------------------------------------------------
def _rule_matches(rule: dict[str, Any], attrs: dict[str, Any]) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs["verb"] not in verbs:
        return False
    if attrs.get("path") is not None:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == attrs["path"] or (url.endswith("*") and attrs["path"].startswith(url[:-1])):
                return True
        return False
    if rule.get("nonResourceURLs") and not rule.get("resources"):
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs["group"] not in groups:
        return False
    resource = attrs["resource"] + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
    resources = rule.get("resources") or []
    if not any(
        r == "*"
        or r == resource
        or (r.endswith("/*") and resource.startswith(r[:-1]))
        or r == f"*/{attrs.get('subresource')}"
        for r in resources
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.get("name") in names


def _subject_matches(subject: dict[str, Any], user: User, namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return subject.get("name") == user.name
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        return user.name == f"system:serviceaccount:{subject.get('namespace', namespace)}:{subject.get('name')}"
    return False


# ------------------------------------------------------------------------------------------------------------------
class APIServer:
    """One cluster's API server. Objects live in ``store``; ``cluster`` supplies the node-side facts."""

    def __init__(
        self,
        name: str,
        journal: Journal,
        sock: socket.socket,
        advertise: str,
        state_dir: Path,
        cluster: Any,
    ) -> None:
        self.name = name
        self.journal = journal
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.advertise = advertise
        self.state_dir = state_dir
        self.cluster = cluster
        self.table = ResourceTable()
        self.store = Store(self.table)
        self.store.on_change.append(self._on_change)
        self.ca: pki.CA | None = None
        self.version = "v1.31.0"
        self.anonymous_auth = True
        self.token_authenticators: list[TokenAuthenticator] = []
        self.runner: web.AppRunner | None = None
        self.site: web.SockSite | None = None
        self.listening = False
        self.forwards: dict[str, set[web.WebSocketResponse]] = {}

    # ---------------------------------------------------------------------------------------------------------
    async def start(self, ca: pki.CA, sans: list[str], version: str) -> None:
        """Listen on the reserved socket with a serving certificate from ``ca`` (kubeadm init's apiserver cert)."""
        self.ca = ca
        self.version = version
        dns = [s for s in sans if not _is_ip(s)] + [
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ]
        ips = [s for s in sans if _is_ip(s)] + ["127.0.0.1", "10.96.0.1"]
        cert, key = ca.sign("kube-apiserver", server=True, dns_names=dns, ips=ips)
        directory = self.state_dir / "apiserver"
        cert_file, key_file = pki.write_pair(directory, "apiserver", cert, key)
        ca_file = directory / "ca.crt"
        ca_file.write_text(ca.cert_pem)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(cert_file), str(key_file))
        # Ask for a client certificate, accept none (anonymous or bearer token), verify one against the CA.
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(cafile=str(ca_file))
        app = web.Application(client_max_size=64 * 1024 * 1024, handler_args={"max_field_size": 65536})
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self.runner.setup()
        self.sock.listen(128)
        self.site = web.SockSite(self.runner, self.sock, ssl_context=ctx)
        await self.site.start()
        self.listening = True

    async def stop(self) -> None:
        for sockets in self.forwards.values():
            for ws in list(sockets):
                await ws.close()
        if self.runner is not None:
            await self.runner.cleanup()
        self.listening = False
        try:
            self.sock.close()
        except OSError:
            pass

    async def close_forwards(self, node: str) -> None:
        for ws in list(self.forwards.get(node, ())):
            await ws.close()

    # ---------------------------------------------------------------------------------------------------------
    def _on_change(self, kind: str, res: Resource, obj: dict[str, Any]) -> None:
        if res.plural == "customresourcedefinitions" and res.group == "apiextensions.k8s.io":
            if kind == "DELETED":
                self.table.remove_crd(obj)
                spec = obj.get("spec", {})
                bucket = self.store.objects.get((spec.get("group", ""), spec.get("names", {}).get("plural", "")))
                if bucket:
                    bucket.clear()
                return
            self.table.add_crd(obj)
            names = obj.get("spec", {}).get("names", {})
            wanted = [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ]
            status = obj.get("status") or {}
            if [c.get("type") for c in status.get("conditions", [])] != ["NamesAccepted", "Established"]:
                for c in wanted:
                    c["lastTransitionTime"] = now_iso()
                obj["status"] = {
                    "conditions": wanted,
                    "acceptedNames": names,
                    "storedVersions": [v["name"] for v in obj.get("spec", {}).get("versions", []) if v.get("storage")],
                }

    # ---------------------------------------------------------------------------------------------------------
    def authenticate(self, request: web.Request) -> User:
        header = request.headers.get("Authorization", "")
        if header.lower().startswith("bearer "):
            return self._bearer(header[7:].strip(), request)
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object else None
        if der:
            cert = x509.load_der_x509_certificate(der)
            assert self.ca is not None
            if self.ca.issued(cert) and pki.valid_now(cert):
                name, groups = pki.subject_of(cert)
                return User(name, groups + ["system:authenticated"], "x509")
            raise ApiError(401, "Unauthorized", "Unauthorized")
        if self.anonymous_auth:
            return User("system:anonymous", ["system:unauthenticated"], "anonymous")
        raise ApiError(401, "Unauthorized", "Unauthorized")

    def _bearer(self, token: str, request: web.Request) -> User:
        match = BOOTSTRAP_TOKEN_RE.match(token)
        if match:
            user = self.bootstrap_token_user(match.group(1), match.group(2))
            if user:
                return user
        found = request.get("kubesim_token_user")
        if found:
            return User(found[0], found[1] + ["system:authenticated"], "token")
        raise ApiError(401, "Unauthorized", "Unauthorized")

    def bootstrap_token_user(self, token_id: str, token_secret: str) -> User | None:
        """kube-apiserver's bootstrap token authenticator (``--enable-bootstrap-token-auth``)."""
        secrets = self.table.find("", "v1", "secrets")
        assert secrets is not None
        with self.store.lock:
            secret = self.store.peek(secrets, "kube-system", f"bootstrap-token-{token_id}")
            if not secret or secret.get("type") != "bootstrap.kubernetes.io/token":
                return None
            if secret["metadata"].get("deletionTimestamp"):
                return None
            data = {k: _b64(v) for k, v in (secret.get("data") or {}).items()}
        if data.get("token-id") != token_id or data.get("token-secret") != token_secret:
            return None
        if data.get("usage-bootstrap-authentication") != "true":
            return None
        expiration = data.get("expiration")
        if expiration:
            when = datetime.datetime.fromisoformat(expiration.replace("Z", "+00:00"))
            if when < datetime.datetime.now(datetime.timezone.utc):
                return None
        extra = [g for g in (data.get("auth-extra-groups") or "").split(",") if g]
        return User(f"system:bootstrap:{token_id}", ["system:bootstrappers", *extra, "system:authenticated"], "token")

    def authorize(self, user: User, attrs: dict[str, Any]) -> bool:
        if MASTERS in user.groups:
            return True
        rbac = "rbac.authorization.k8s.io"
        cluster_roles = {r["metadata"]["name"]: r for r in self.store.items(self.table.by_plural(rbac, "clusterroles"))}
        namespace = attrs.get("namespace") or ""

        def role_rules(ref: dict[str, Any], ns: str) -> list[dict[str, Any]]:
            if ref.get("kind") == "ClusterRole":
                return (cluster_roles.get(ref.get("name", "")) or {}).get("rules") or []
            res = self.table.by_plural(rbac, "roles")
            assert res is not None
            with self.store.lock:
                role = self.store.peek(res, ns, ref.get("name", ""))
                return copy.deepcopy((role or {}).get("rules") or [])

        for binding in self.store.items(self.table.by_plural(rbac, "clusterrolebindings")):
            if any(_subject_matches(s, user, "") for s in binding.get("subjects") or []):
                if any(_rule_matches(r, attrs) for r in role_rules(binding.get("roleRef", {}), "")):
                    return True
        if namespace and attrs.get("path") is None:
            for binding in self.store.items(self.table.by_plural(rbac, "rolebindings"), namespace):
                if any(_subject_matches(s, user, namespace) for s in binding.get("subjects") or []):
                    if any(_rule_matches(r, attrs) for r in role_rules(binding.get("roleRef", {}), namespace)):
                        return True
        return False

    # ---------------------------------------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        started = time.time()
        entry: dict[str, Any] = {
            "cluster": self.name,
            "method": request.method,
            "path": request.path,
            "query": request.query_string,
        }
        if not self.cluster.apiserver_available():
            # No control-plane node serves: the load balancer has no target (connection dropped).
            entry["status"] = 0
            self.journal.record("apiserver", "request", **entry, error="no control-plane node serves")
            if request.transport is not None:
                request.transport.abort()
            raise web.HTTPServiceUnavailable()
        try:
            user: User | None = None
            for auth in self.token_authenticators:
                header = request.headers.get("Authorization", "")
                if header.lower().startswith("bearer ") and not BOOTSTRAP_TOKEN_RE.match(header[7:].strip()):
                    found = await auth(header[7:].strip())
                    if found:
                        request["kubesim_token_user"] = found
                        break
            user = self.authenticate(request)
            entry["user"], entry["groups"] = user.name, user.groups
            response = await self.dispatch(request, user, entry)
        except ApiError as exc:
            if exc.code == 401:
                entry.setdefault("user", None)
            response = _json(exc.status(), exc.code)
        except web.HTTPException:
            raise
        except Exception as exc:  # noqa: BLE001 - a simulator bug must answer 500, not drop the connection
            import traceback

            traceback.print_exc()
            response = _json(ApiError(500, "InternalError", f"kubesim: {type(exc).__name__}: {exc}").status(), 500)
        entry["status"] = response.status
        entry["duration"] = round(time.time() - started, 4)
        self.journal.record("apiserver", "request", **entry)
        return response

    async def dispatch(self, request: web.Request, user: User, entry: dict[str, Any]) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        query = parse_qs(request.query_string, keep_blank_values=True)
        q = {k: v[-1] for k, v in query.items()}
        parsed = self.parse(path)
        if parsed is None:
            verb = {"GET": "get", "POST": "post", "PUT": "put", "DELETE": "delete", "PATCH": "patch"}.get(
                request.method, request.method.lower()
            )
            attrs = {"verb": verb, "path": path}
            if not self.authorize(user, attrs):
                raise _forbidden_path(user, verb, path)
            return self.nonresource(path, request)
        res, ns, name, sub = parsed
        entry.update(resource=res.plural, group=res.group, namespace=ns, name=name, subresource=sub)
        verb = _verb(request.method, name, q, sub, request.headers)
        entry["verb"] = verb
        attrs = {
            "verb": verb,
            "group": res.group,
            "resource": res.plural,
            "subresource": sub,
            "name": name,
            "namespace": ns,
            "path": None,
        }
        if not self.authorize(user, attrs):
            raise _forbidden(user, verb, res, sub, name, ns)
        manager = q.get("fieldManager") or _manager_from_agent(request.headers.get("User-Agent", ""))
        dry_run = "All" in query.get("dryRun", [])
        body: Any = None
        if request.method in ("POST", "PUT", "PATCH") or (request.method == "DELETE" and request.can_read_body):
            raw = await request.read()
            if raw:
                body = _parse_body(raw, request.headers.get("Content-Type", ""))
                entry["fields"] = _interesting(body, res.plural)
        if request.method in ("POST", "PUT", "PATCH", "DELETE") and sub != "portforward":
            self._check_writable()
        if sub == "portforward":
            return await self.portforward(request, ns, name, query)
        if sub == "eviction" and request.method == "POST":
            return _json(self.cluster.evict(ns, name, body or {}, user), 201)
        if sub == "binding" and request.method == "POST":
            return _json(self.bind(ns, name, body or {}), 201)
        if sub == "log" and request.method == "GET":
            self.store.get(res, ns, name)
            return web.Response(text="", content_type="text/plain")
        if sub == "scale":
            return await self.scale(request, res, ns, name, body, manager)
        if sub not in (None, "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        store = self.store
        if request.method == "GET":
            if name:
                return _json(store.get(res, ns, name))
            if q.get("watch") in ("true", "True", "1"):
                return await self.watch(request, res, ns, q)
            limit = int(q["limit"]) if q.get("limit", "").isdigit() and int(q["limit"]) > 0 else None
            return _json(
                store.list(
                    res, ns or None, q.get("labelSelector"), q.get("fieldSelector"), limit, q.get("continue") or None
                )
            )
        if request.method == "POST" and not name:
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the request body is not an object")
            _check_kind(res, body)
            created = store.create(res, ns, body, manager, dry_run)
            return _json(created, 201)
        if request.method == "PUT" and name:
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the request body is not an object")
            _check_kind(res, body)
            try:
                return _json(store.update(res, ns, name, body, manager, sub, dry_run))
            except ApiError as exc:
                if exc.code != 404 or sub or not _allows_create_on_update(res):
                    raise
                return _json(store.create(res, ns, body, manager, dry_run), 201)
        if request.method == "PATCH" and name:
            ctype = request.headers.get("Content-Type", "application/merge-patch+json")
            force = q.get("force") in ("true", "True", "1")
            existed = store.peek(res, ns, name) is not None
            out = store.patch(res, ns, name, ctype, body, manager, sub, force, dry_run)
            return _json(out, 201 if not existed else 200)
        if request.method == "DELETE":
            options = body if isinstance(body, dict) else {}
            grace = options.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
            grace = int(grace) if grace not in (None, "") else None
            propagation = options.get("propagationPolicy") or q.get("propagationPolicy")
            if not name:
                return _json(self.delete_collection(res, ns or None, q, grace))
            out = store.delete(
                res, ns, name, grace, propagation, options.get("preconditions"), self.cluster.scale, dry_run
            )
            return _json(out, 200)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _check_writable(self) -> None:
        # kube-apiserver stores in etcd: without quorum a write times out there.
        if not self.cluster.etcd_writable():
            raise ApiError(500, "InternalError", "etcdserver: request timed out")

    def delete_collection(self, res: Resource, ns: str | None, q: dict[str, str], grace: int | None) -> dict[str, Any]:
        found = self.store.list(res, ns, q.get("labelSelector"), q.get("fieldSelector"))
        for item in found["items"]:
            try:
                self.store.delete(
                    res,
                    item["metadata"].get("namespace", ""),
                    item["metadata"]["name"],
                    grace,
                    scale=self.cluster.scale,
                )
            except ApiError:
                pass
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

    def bind(self, ns: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        pods = self.table.find("", "v1", "pods")
        assert pods is not None
        target = (body.get("target") or {}).get("name")
        with self.store.lock:
            pod = self.store.peek(pods, ns, name)
            if pod is None:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            if pod["spec"].get("nodeName"):
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                    f'already assigned to node "{pod["spec"]["nodeName"]}"',
                )
            self.store.mutate(pods, ns, name, lambda p: p["spec"].update(nodeName=target), "kube-scheduler")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    async def scale(
        self, request: web.Request, res: Resource, ns: str, name: str, body: Any, manager: str
    ) -> web.StreamResponse:
        obj = self.store.get(res, ns, name)
        if request.method in ("PUT", "PATCH"):
            replicas = None
            if isinstance(body, dict):
                replicas = (body.get("spec") or {}).get("replicas")
            if replicas is None:
                raise ApiError(422, "Invalid", "spec.replicas: Required value")
            obj = self.store.patch(
                res, ns, name, "application/merge-patch+json", {"spec": {"replicas": replicas}}, manager
            )
        selector = ",".join(
            f"{k}={v}" for k, v in ((obj["spec"].get("selector") or {}).get("matchLabels") or {}).items()
        )
        return _json(
            {
                "kind": "Scale",
                "apiVersion": "autoscaling/v1",
                "metadata": {
                    k: obj["metadata"][k]
                    for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                    if k in obj["metadata"]
                },
                "spec": {"replicas": obj["spec"].get("replicas", 0)},
                "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": selector},
            }
        )

    # ---------------------------------------------------------------------------------------------------------
    def parse(self, path: str) -> tuple[Resource, str, str, str | None] | None:
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            return None
        if parts[0] == "api":
            if len(parts) < 3:
                return None
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) < 4:
                return None
            group, version, rest = parts[1], parts[2], parts[3:]
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        res = self.table.find(group, version, plural)
        if res is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if ns and not res.namespaced:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub and sub not in res.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return res, ns, name, sub

    def nonresource(self, path: str, request: web.Request) -> web.StreamResponse:
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            major, minor = self.version.lstrip("v").split(".")[:2]
            return _json(
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": self.version,
                    "gitCommit": "kubesim",
                    "gitTreeState": "clean",
                    "buildDate": "2024-01-01T00:00:00Z",
                    "goVersion": "go1.22",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                }
            )
        if path == "/api":
            return _json(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.advertise}],
                }
            )
        if path == "/apis":
            groups = [self._group_doc(g, v) for g, v in self.table.groups().items() if g]
            return _json({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        parts = [p for p in path.split("/") if p]
        if parts[0] == "api" and len(parts) == 2:
            return _json(self._resource_list("", parts[1]))
        if parts[0] == "apis" and len(parts) == 2:
            versions = self.table.groups().get(parts[1])
            if versions:
                return _json({**self._group_doc(parts[1], versions), "kind": "APIGroup", "apiVersion": "v1"})
        if parts[0] == "apis" and len(parts) == 3 and parts[2] in self.table.groups().get(parts[1], []):
            return _json(self._resource_list(parts[1], parts[2]))
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    @staticmethod
    def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources = []
        for r in self.table.all():
            if r.group != group or r.version != version:
                continue
            entry: dict[str, Any] = {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
            }
            if r.short_names:
                entry["shortNames"] = list(r.short_names)
            if r.categories:
                entry["categories"] = list(r.categories)
            resources.append(entry)
            for sub in r.subresources:
                resources.append(_subresource_doc(r, sub))
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}".lstrip("/"),
            "resources": resources,
        }

    # ---------------------------------------------------------------------------------------------------------
    async def watch(self, request: web.Request, res: Resource, ns: str, q: dict[str, str]) -> web.StreamResponse:
        from . import objects as ob

        try:
            labels = ob.parse_label_selector(q.get("labelSelector"))
            fields = ob.parse_field_selector(q.get("fieldSelector"), res.plural)
        except ob.PatchError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from None
        timeout = float(q.get("timeoutSeconds") or 1800)
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        rv_text = q.get("resourceVersion", "")

        def visible(obj: dict[str, Any]) -> bool:
            meta = obj["metadata"]
            if ns and res.namespaced and meta.get("namespace") != ns:
                return False
            return ob.labels_match(labels, meta.get("labels")) and ob.fields_match(fields, obj)

        async def send(kind: str, obj: dict[str, Any]) -> None:
            out = copy.deepcopy(obj)
            out["apiVersion"], out["kind"] = res.api_version, res.kind
            await response.write(json.dumps({"type": kind, "object": out}).encode() + b"\n")

        if rv_text in ("", "0"):
            with self.store.lock:
                last = self.store.rv
                current = [o for o in self.store.items(res, ns or None) if visible(o)]
            for obj in current:
                await send("ADDED", obj)
        else:
            last = int(rv_text) if rv_text.isdigit() else 0
            if last < self.store.oldest_event_rv() - 1:
                status = ApiError(410, "Expired", f"too old resource version: {last} ({self.store.oldest_event_rv()})")
                await response.write(json.dumps({"type": "ERROR", "object": status.status()}).encode() + b"\n")
                return response
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and self.cluster.apiserver_available():
                for event in self.store.watch_events(last):
                    last = event.rv
                    if event.key == res.key and visible(event.obj):
                        await send(event.type, event.obj)
                await asyncio.sleep(0.05)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    # ---------------------------------------------------------------------------------------------------------
    async def portforward(
        self, request: web.Request, ns: str, name: str, query: dict[str, list[str]]
    ) -> web.StreamResponse:
        """``pods/portforward`` over WebSocket, as kube-apiserver relays it from the kubelet (v4.channel.k8s.io)."""
        pods = self.table.find("", "v1", "pods")
        assert pods is not None
        pod = self.store.get(pods, ns, name)
        ports: list[int] = []
        for value in query.get("ports", []):
            for part in value.split(","):
                if not part.strip().isdigit():
                    raise ApiError(400, "BadRequest", f"invalid port number: {part}")
                ports.append(int(part))
        if not ports:
            raise ApiError(400, "BadRequest", "at least one port must be specified")
        node = pod["spec"].get("nodeName")
        reachable, reason = self.cluster.kubelet_reachable(node)
        if not reachable:
            raise ApiError(500, "InternalError", f"error dialing backend: {reason}")
        if pod.get("status", {}).get("phase") != "Running":
            raise ApiError(400, "BadRequest", f"pod {name} is not running")
        ws = web.WebSocketResponse(protocols=PORTFORWARD_PROTOCOLS, autoping=True, max_msg_size=0)
        if not ws.can_prepare(request).ok:
            raise ApiError(400, "BadRequest", "Upgrade request required (WebSocket, v4.channel.k8s.io)")
        await ws.prepare(request)
        self.forwards.setdefault(node, set()).add(ws)
        writers: dict[int, asyncio.StreamWriter] = {}
        pumps: list[asyncio.Task[None]] = []
        try:
            for index, port in enumerate(ports):
                header = bytes([port & 0xFF, port >> 8])
                await ws.send_bytes(bytes([2 * index]) + header)
                await ws.send_bytes(bytes([2 * index + 1]) + header)
            for index, port in enumerate(ports):
                target, why = self.cluster.portforward_target(pod, port)
                if target == NODE_APISERVER:
                    target, why = await self.cluster.node_apiserver(why), "connect: connection refused"
                if target is None:
                    await ws.send_bytes(bytes([2 * index + 1]) + _pf_error(pod, port, why).encode())
                    continue
                try:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(*target), timeout=5)
                except (OSError, asyncio.TimeoutError) as exc:
                    await ws.send_bytes(bytes([2 * index + 1]) + _pf_error(pod, port, str(exc)).encode())
                    continue
                writers[index] = writer
                pumps.append(asyncio.create_task(_pump(reader, ws, 2 * index)))
            async for msg in ws:
                if msg.type != WSMsgType.BINARY or not msg.data:
                    continue
                channel = msg.data[0]
                writer = writers.get(channel // 2)
                if channel % 2 == 0 and writer is not None:
                    writer.write(msg.data[1:])
                    await writer.drain()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            for task in pumps:
                task.cancel()
            for writer in writers.values():
                writer.close()
            self.forwards.get(node, set()).discard(ws)
            await ws.close()
        return ws


async def _pump(reader: asyncio.StreamReader, ws: web.WebSocketResponse, channel: int) -> None:
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            await ws.send_bytes(bytes([channel]) + data)
    except (ConnectionResetError, asyncio.CancelledError, RuntimeError):
        pass
    finally:
        # The pod closed the port: kube-apiserver ends the stream.
        if not ws.closed:
            await ws.close()


def _pf_error(pod: dict[str, Any], port: int, why: str) -> str:
    uid = pod["metadata"].get("uid", "")
    return (
        f"error forwarding port {port} to pod {uid[:12]}, uid : failed to execute portforward in network namespace "
        f'"/var/run/netns/cni-{uid[:8]}": failed to connect to localhost:{port} inside namespace '
        f'"{uid[:12]}", IPv4: dial tcp4 127.0.0.1:{port}: {why} '
    )


# ------------------------------------------------------------------------------------------------------------------
def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _b64(value: str) -> str:
    try:
        return base64.b64decode(value).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(body).encode(), content_type="application/json")


def _verb(method: str, name: str, q: dict[str, str], sub: str | None, headers: Any) -> str:
    if sub == "portforward":
        return "create" if headers.get("Upgrade", "").lower() == "websocket" or method == "POST" else "get"
    if method == "GET":
        if name:
            return "get"
        return "watch" if q.get("watch") in ("true", "True", "1") else "list"
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _manager_from_agent(agent: str) -> str:
    # kube-apiserver defaults fieldManager to the user agent up to the first "/".
    return (agent.split("/", 1)[0] or "unknown")[:128]


def _parse_body(raw: bytes, content_type: str) -> Any:
    if "yaml" in content_type:
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ApiError(400, "BadRequest", f"error decoding YAML: {exc}") from None
    try:
        return json.loads(raw)
    except ValueError:
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError:
            raise ApiError(400, "BadRequest", "the request body is not valid JSON") from None


def _check_kind(res: Resource, body: dict[str, Any]) -> None:
    kind = body.get("kind")
    if kind and kind != res.kind:
        raise ApiError(
            400,
            "BadRequest",
            f"the API version in the data ({body.get('apiVersion')}) does not match the "
            f"expected API version ({res.api_version})"
            if kind is None
            else f'{kind} in version "{res.version}" cannot be handled as a {res.kind}',
        )


def _allows_create_on_update(res: Resource) -> bool:
    # kube-apiserver: a PUT of a missing object creates it only for kinds whose strategy allows it.
    return res.plural in ("events", "endpoints")


SECRET_FIELDS = {"data", "stringData", "binaryData"}


def _interesting(body: Any, plural: str, limit: int = 40) -> dict[str, Any]:
    """Leaf fields of a request body for the journal: ``{"spec.unschedulable": true, ...}``; never secret values."""
    out: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(node, dict) and node:
            for key, value in node.items():
                if key in ("managedFields",):
                    continue
                path = f"{prefix}.{key}" if prefix else key
                if key in SECRET_FIELDS and (plural == "secrets" or not prefix):
                    out[path] = sorted(value) if isinstance(value, dict) else "<redacted>"
                    continue
                walk(value, path)
            return
        if isinstance(node, list):
            text = json.dumps(node)
            out[prefix] = node if len(text) <= 300 else text[:300] + "..."
            return
        if isinstance(node, str) and len(node) > 200:
            node = node[:200] + "..."
        out[prefix] = node

    walk(body, "")
    return out


def _forbidden(user: User, verb: str, res: Resource, sub: str | None, name: str, ns: str) -> ApiError:
    resource = res.plural + (f"/{sub}" if sub else "")
    subject = f'{res.qualified} "{name}"' if name else res.qualified
    scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{subject} is forbidden: User "{user.name}" cannot {verb} resource "{resource}" in API group '
        f'"{res.group}" {scope}',
        {"name": name, "group": res.group, "kind": res.plural} if name else {"group": res.group, "kind": res.plural},
    )


def _forbidden_path(user: User, verb: str, path: str) -> ApiError:
    return ApiError(403, "Forbidden", f'forbidden: User "{user.name}" cannot {verb} path "{path}"', {})


def _subresource_doc(r: Resource, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{r.plural}/{sub}",
        "singularName": "",
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": ["get", "patch", "update"],
    }
    if sub == "eviction":
        entry.update(group="policy", version="v1", kind="Eviction", verbs=["create"])
    elif sub == "portforward":
        entry.update(kind="PodPortForwardOptions", verbs=["create", "get"])
    elif sub in ("exec", "attach"):
        entry.update(kind=f"Pod{sub.capitalize()}Options", verbs=["create", "get"])
    elif sub == "log":
        entry.update(kind="Pod", verbs=["get"])
    elif sub == "binding":
        entry.update(kind="Binding", verbs=["create"])
    elif sub == "proxy":
        entry.update(kind=f"{r.kind}ProxyOptions", verbs=["create", "delete", "get", "patch", "update"])
    elif sub == "scale":
        entry.update(group="autoscaling", version="v1", kind="Scale")
    elif sub == "token":
        entry.update(group="authentication.k8s.io", version="v1", kind="TokenRequest", verbs=["create"])
    elif sub == "approval":
        entry["verbs"] = ["get", "patch", "update"]
    elif sub == "finalize":
        entry["verbs"] = ["update"]
    return entry
