# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (workload-cluster client): the cluster's Kubernetes API, over urllib3 with credentials minted per run.

The controller reaches the API server the way a user's kubectl would: at the control-plane endpoint (the load
balancer), or - for private clusters - at an address the user gives (a tunnel, an SSM port forward, a bastion
``ssh -L``) while the server's certificate is still checked against the cluster CA for the endpoint's name
(``tls_server_name``), optionally through an HTTP CONNECT proxy. Credentials are minted per run
(:mod:`.credentials`) and live in the process's TLS context only.

The wire is urllib3 (``PoolManager.request``, the same pool the official ``kubernetes`` client wraps): the collection
needs a few fields of plain JSON, not the client's models, and urllib3's request surface has held from 1.26 to 2.x,
where the client's own low-level ``ApiClient.call_api``/``RESTClientObject.request`` changed their keyword sets in
kubernetes 34 (a collection driving them broke on every release that followed). So the controller needs no
``kubernetes`` package at all.
Writes are not made here directly: :class:`KubeApi` is an :class:`~..kernel.operations.Endpoint`, so every cordon,
eviction, Node deletion and manifest apply goes through ``Operations.call`` - planned in check mode, listed in
``plan``, counted in ``api_calls`` (``k8s:PatchNode`` ...), like an AWS write.
"""

from __future__ import annotations

import builtins
import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

try:
    import urllib3

    HAS_URLLIB3 = True
except ImportError:  # botocore depends on urllib3: wherever the AWS side imports, this does
    HAS_URLLIB3 = False

from ..kernel.errors import RemoteError
from ..kernel.shared_reads import SharedReads
from .credentials import Identity, tls_context

PAGE_SIZE = 500
# Reads of the cluster that may travel to the next step (kernel/shared_reads.py): Nodes describe machines only.
# Pods (an env value may hold anything) and Secrets never do.
SHARED_CALLS = frozenset({"k8s:ListNodes"})
FIELD_MANAGER = "clusterapi.aws"
# What each write shows as in the plan and in api_calls.
PLANNED = {
    "cordon": "k8s:PatchNode",
    "annotate_node": "k8s:PatchNode",
    "evict": "k8s:CreateEviction",
    "delete_node": "k8s:DeleteNode",
    "apply": "k8s:Apply",
    "create_secret": "k8s:CreateSecret",
    "patch_secret": "k8s:PatchSecret",
    "delete_secret": "k8s:DeleteSecret",
}
UNREACHABLE = "Unreachable"


@dataclass(frozen=True)
class ApiTarget:
    """Where the API server is and how to trust it."""

    url: str  # https://host:port
    ca_certificate: str = ""  # PEM; empty when the client's ``trust`` gives it (KubeApi)
    tls_server_name: str | None = None  # the name the certificate must carry, when url's host is an address
    proxy: str | None = None  # an HTTP CONNECT proxy (http://host:port)

    @property
    def host(self) -> str:
        return urllib.parse.urlparse(self.url).hostname or ""

    @property
    def verify_name(self) -> str:
        return self.tls_server_name or self.host


# The CA a client trusts and the identity it presents, asked for when the first request goes out: reading the
# cluster PKI is an AWS request and minting a certificate a key generation, and a run whose reads were all handed on
# by an earlier step (kernel/shared_reads.py) needs neither.
Trust = Callable[[], "tuple[str, Identity | None]"]


class KubeApi:
    """One workload cluster's API server, for one module run."""

    def __init__(
        self,
        target: ApiTarget,
        identity: Identity | None = None,
        token: str | None = None,
        count: Callable[[str], None] = lambda _name: None,
        timeout: float = 10.0,
        shared: SharedReads | None = None,
        trust: Trust | None = None,
    ) -> None:
        """``trust``, when given, stands for ``target.ca_certificate`` and ``identity``: called once, before the first
        request that goes out."""
        self.target = target
        self.token = token
        self.count = count
        self.shared = shared
        self.timeout = timeout
        self._trust: Trust = trust or (lambda: (target.ca_certificate, identity))
        self._ssl_context: ssl.SSLContext | None = None
        self._pool: urllib3.PoolManager | None = None
        self._resources: dict[str, dict[str, Any]] = {}
        self.listed: dict[str, str] = {}  # path -> the resourceVersion of its last list (where a watch starts)

    @property
    def ssl_context(self) -> ssl.SSLContext:
        """Trusts the cluster CA and presents the run's identity, from memory (never from files)."""
        if self._ssl_context is None:
            self._ssl_context = tls_context(*self._trust())
        return self._ssl_context

    @property
    def pool(self) -> urllib3.PoolManager:
        if self._pool is None:
            self._pool = self._connect()
        return self._pool

    def _connect(self) -> urllib3.PoolManager:
        # The certificate is checked for the endpoint's name when the API server is reached at an address.
        pool_args: dict[str, Any] = {
            "num_pools": 2,
            "maxsize": 4,
            "ssl_context": self.ssl_context,
            "timeout": urllib3.Timeout(connect=self.timeout, read=self.timeout * 3),
            "retries": False,
        }
        if self.target.tls_server_name:
            pool_args.update(server_hostname=self.target.tls_server_name, assert_hostname=self.target.tls_server_name)
        if self.target.proxy:
            return urllib3.ProxyManager(self.target.proxy, **pool_args)
        return urllib3.PoolManager(**pool_args)

    # reading -------------------------------------------------------------------------------------------------
    def probe(self) -> str | None:
        """None when the API server answers (``GET /version``), else why not, in words a user can act on."""
        try:
            self._get("/version", "k8s:GetVersion")
        except RemoteError as e:
            if e.code == UNREACHABLE:
                return e.args[0]
            return f"{self.target.url} answered {e.status} {e.code}: {e.args[0]}"
        return None

    def list(self, path: str, name: str, **query: str) -> list[dict[str, Any]]:
        """Every item of a list, following ``continue`` (one counted request per page)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            page = self._get(path, name, limit=str(PAGE_SIZE), **({"continue": token} if token else {}), **query)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                self.listed[_listed_key(path, query)] = (page.get("metadata") or {}).get("resourceVersion") or ""
                return items

    def watch_for(
        self, path: str, name: str, wanted: Callable[[str, dict[str, Any]], bool], seconds: float, **query: str
    ) -> bool:
        """Follow a watch of ``path`` (with the selectors ``query`` of its list) from that list's last
        resourceVersion for up to ``seconds``: True as soon as an event is one ``wanted(type, object)`` waits for,
        False when the time runs out first - or when that list was never read or the watch breaks (410 Gone, a
        dropped stream, an API that refuses it): the caller then polls at its own pace, as it would without a
        watch. One counted request (``name``)."""
        version = self.listed.get(_listed_key(path, query))
        if not version or seconds <= 0:
            return False
        pool = self.pool
        self.count(name)
        timeout = str(max(1, int(seconds + 0.999)))
        watch = {**query, "watch": "1", "resourceVersion": version, "timeoutSeconds": timeout}
        url = f"{self.target.url.rstrip('/')}{path}?{urllib.parse.urlencode(watch)}"
        headers = self._headers(None)
        deadline = time.monotonic() + seconds
        try:
            response = pool.request(
                "GET",
                url,
                headers=headers,
                preload_content=False,
                timeout=urllib3.Timeout(connect=self.timeout, read=max(seconds, 0.05)),
                retries=False,
            )
        except (urllib3.exceptions.HTTPError, ssl.SSLError, OSError):
            return False
        try:
            if response.status != 200:
                return False
            pending = b""
            for chunk in response.stream(2**16):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    event = json.loads(line) if line.strip() else {}
                    if event.get("type") == "ERROR":
                        return False  # 410 Gone: the version is too old to follow
                    kind = event.get("type") or ""
                    if kind in ("ADDED", "MODIFIED", "DELETED") and wanted(kind, event.get("object") or {}):
                        return True
                if time.monotonic() >= deadline:
                    return False
        except (urllib3.exceptions.HTTPError, ssl.SSLError, OSError, ValueError):
            return False  # the read timed out (nothing wanted came), the stream broke or carried no JSON
        finally:
            response.close()  # an unfinished stream is not handed back to the pool
        return False

    # builtins.list: inside this class, ``list`` names the method above.
    def nodes(self) -> builtins.list[dict[str, Any]]:
        return self.list("/api/v1/nodes", "k8s:ListNodes")

    def pods(self, namespace: str | None = None, **selectors: str) -> builtins.list[dict[str, Any]]:
        return self.list(_pods_path(namespace), "k8s:ListPods", **_selectors(selectors))

    def watch_pods(
        self,
        wanted: Callable[[str, dict[str, Any]], bool],
        seconds: float,
        namespace: str | None = None,
        **selectors: str,
    ) -> bool:
        """:meth:`watch_for` on the pods the same :meth:`pods` call listed last."""
        return self.watch_for(_pods_path(namespace), "k8s:WatchPods", wanted, seconds, **_selectors(selectors))

    def secrets(self, namespace: str, **selectors: str) -> builtins.list[dict[str, Any]]:
        return self.list(f"/api/v1/namespaces/{namespace}/secrets", "k8s:ListSecrets", **_selectors(selectors))

    def get(self, path: str, name: str) -> dict[str, Any] | None:
        """One object, or None when it does not exist."""
        try:
            return self._get(path, name)
        except RemoteError as e:
            if e.status == 404:
                return None
            raise

    # writing: only through Operations.call ------------------------------------------------------------------
    def planned_name(self, method: str) -> str:
        return PLANNED[method]

    def invoke(self, method: str, params: dict[str, Any]) -> Any:
        name = PLANNED[method]
        if method == "cordon":
            return self._request(
                "PATCH", f"/api/v1/nodes/{params['node']}", name, _MERGE, {"spec": {"unschedulable": True}}
            )
        if method == "annotate_node":
            body: dict[str, Any] = {"metadata": {"annotations": params["annotations"]}}
            return self._request("PATCH", f"/api/v1/nodes/{params['node']}", name, _MERGE, body)
        if method == "evict":
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": params["name"], "namespace": params["namespace"]},
            }
            if params.get("grace_period_seconds") is not None:
                body["deleteOptions"] = {"gracePeriodSeconds": params["grace_period_seconds"]}
            path = f"/api/v1/namespaces/{params['namespace']}/pods/{params['name']}/eviction"
            return self._request("POST", path, name, "application/json", body)
        if method == "delete_node":
            return self._request("DELETE", f"/api/v1/nodes/{params['node']}", name, "application/json", None)
        if method == "apply":
            manifest = params["manifest"]
            query = {"fieldManager": FIELD_MANAGER, "force": "true"}
            path = self.object_path(manifest)
            return self._request("PATCH", path, name, "application/apply-patch+yaml", manifest, query)
        if method == "create_secret":
            manifest = params["manifest"]
            path = f"/api/v1/namespaces/{manifest['metadata']['namespace']}/secrets"
            return self._request("POST", path, name, "application/json", manifest, {"fieldManager": FIELD_MANAGER})
        if method in ("patch_secret", "delete_secret"):
            path = f"/api/v1/namespaces/{params['namespace']}/secrets/{params['name']}"
            if method == "delete_secret":
                return self._request("DELETE", path, name, "application/json", None)
            return self._request("PATCH", path, name, _MERGE, params["patch"], {"fieldManager": FIELD_MANAGER})
        raise ValueError(f"unknown Kubernetes write {method}")

    # paths of arbitrary kinds (server-side apply), from discovery -------------------------------------------
    def object_path(self, manifest: dict[str, Any]) -> str:
        """``/apis/<group>/<version>/[namespaces/<ns>/]<plural>/<name>`` of a manifest's object."""
        api_version, kind = manifest["apiVersion"], manifest["kind"]
        metadata = manifest.get("metadata") or {}
        resource = self.resource_of(api_version, kind)
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        namespace = ""
        if resource["namespaced"]:
            namespace = f"/namespaces/{metadata.get('namespace') or 'default'}"
        return f"{base}{namespace}/{resource['name']}/{metadata['name']}"

    def resource_of(self, api_version: str, kind: str) -> dict[str, Any]:
        """The discovery entry of ``kind`` (one request per group/version and run, then cached)."""
        if api_version not in self._resources:
            base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            found = self.get(base, "k8s:GetAPIResources") or {}
            self._resources[api_version] = {
                r["kind"]: r for r in found.get("resources") or [] if "/" not in r.get("name", "")
            }
        resources = self._resources[api_version]
        if kind not in resources:
            # A CRD applied moments ago may not be served yet: forget the group so the next call asks again.
            self._resources.pop(api_version, None)
            raise RemoteError("NotServed", f"the API server does not serve {kind} in {api_version} (yet)", 404)
        return resources[kind]

    # the wire --------------------------------------------------------------------------------------------------
    def _get(self, path: str, name: str, **query: str) -> dict[str, Any]:
        if self.shared is None or name not in SHARED_CALLS:
            return self._request("GET", path, name, None, None, query)
        key = self.shared.key(name, {"url": self.target.url, "path": path, "query": query})
        answer = self.shared.serve(name, key)
        if answer is None:
            answer = self._request("GET", path, name, None, None, query)
            self.shared.record(name, key, answer)
        return answer

    def _request(
        self,
        method: str,
        path: str,
        name: str,
        content_type: str | None,
        body: Any,
        query: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        if self.shared is not None:
            # An earlier step of this run found the server unreachable: not tried again (kernel/shared_reads.py),
            # and said in the same words, so what the run reports does not depend on which step asked.
            known = self.shared.unreachable(self.target.url, name)
            if known is not None:
                raise RemoteError(UNREACHABLE, known)
        pool = self.pool  # the trust first: without it nothing goes out, and nothing is counted
        self.count(name)
        if method != "GET" and self.shared is not None:
            self.shared.note_write()
        headers = self._headers(content_type)
        url = self.target.url.rstrip("/") + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        try:
            response = pool.request(
                method,
                url,
                body=None if body is None else json.dumps(body),
                headers=headers,
                timeout=urllib3.Timeout(connect=self.timeout, read=self.timeout * 3),
                retries=False,
            )
        except (urllib3.exceptions.HTTPError, ssl.SSLError, OSError) as e:
            why = f"cannot reach the Kubernetes API at {self.target.url}: {_why(e)}"
            if self.shared is not None:
                self.shared.note_unreachable(self.target.url, why)
            raise RemoteError(UNREACHABLE, why) from None
        if not 200 <= response.status < 300:
            raise _remote_error(response.status, response.reason, response.data)
        return json.loads(response.data) if response.data else {}

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers


class PlannedApi:
    """Stands for an API server that does not answer yet (check mode of a cluster not built): it names the writes
    the plan would hold and refuses to make any."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def planned_name(self, method: str) -> str:
        return PLANNED[method]

    def invoke(self, method: str, params: dict[str, Any]) -> Any:
        raise RemoteError(UNREACHABLE, f"the Kubernetes API is not reachable: {self.reason}")


_MERGE = "application/merge-patch+json"


def _listed_key(path: str, query: dict[str, str]) -> str:
    """Which list a watch continues: the path and its selectors (not its page size or continue token)."""
    selectors = sorted((k, v) for k, v in query.items() if k not in ("limit", "continue"))
    return f"{path}?{urllib.parse.urlencode(selectors)}"


def _pods_path(namespace: str | None) -> str:
    """The pods of one namespace, or of every namespace."""
    return f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"


def _selectors(selectors: dict[str, str]) -> dict[str, str]:
    names = {"field_selector": "fieldSelector", "label_selector": "labelSelector"}
    return {names[k]: v for k, v in selectors.items() if v}


def _remote_error(status: int, reason: str | None, data: bytes | None) -> RemoteError:
    """The API server's ``Status`` object (reason, message) as a RemoteError; a bare HTTP answer by its status."""
    try:
        answer = json.loads(data or b"{}")
    except (TypeError, ValueError):
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    code = answer.get("reason") or reason or str(status)
    message = answer.get("message") or reason or f"HTTP {status}"
    return RemoteError(code, message, status)


def _why(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    return str(reason or error)
