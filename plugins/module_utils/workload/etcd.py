# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (workload-cluster client): the cluster's etcd, reached the way Cluster API's KubeadmControlPlane does.

No network path to the control-plane machines is needed: the controller opens a port-forward through the API server
to port 2379 of the static pod ``kube-system/etcd-<node>`` (``pods/portforward``, WebSocket, subprotocol
``v4.channel.k8s.io``), and speaks TLS inside that tunnel with a client certificate it mints for the run from the
etcd CA (CN ``cluster-api.x-k8s.io``), verifying the member's certificate against the etcd CA (the member is
reached by pod, not by a name its certificate carries, so the name is not checked - as KCP does). Inside TLS it
uses etcd's v3 JSON gateway (``POST /v3/cluster/member/list`` ...), plain HTTP/1.1: no etcd client library.

:class:`Etcd` is an :class:`~..kernel.operations.Endpoint`: leadership moves and member removals go through
``Operations.call`` (``etcd:MoveLeader``, ``etcd:MemberRemove``) - planned in check mode, counted in ``api_calls``.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping

try:
    import websocket  # websocket-client: the port-forward stream (v4.channel.k8s.io) to etcd

    HAS_WEBSOCKET = True
except ImportError:
    HAS_WEBSOCKET = False

from ..kernel.errors import RemoteError
from .credentials import Identity, tls_context
from .kube import UNREACHABLE, KubeApi

ETCD_PORT = 2379
APISERVER_PORT = 6443
NAMESPACE = "kube-system"
CHANNEL_PROTOCOL = "v4.channel.k8s.io"
PLANNED = {"move_leader": "etcd:MoveLeader", "member_remove": "etcd:MemberRemove"}


def pod_of(node: str) -> str:
    """kubeadm names the static etcd pod of a control-plane node ``etcd-<node name>``."""
    return f"etcd-{node}"


def apiserver_certificate(api: KubeApi, node: str, ca_certificate: str) -> bytes:
    """The serving certificate (DER) of the kube-apiserver on control-plane ``node``, as KCP reads its expiry:
    a TLS handshake through a port-forward to ``kube-system/kube-apiserver-<node>:6443``, the certificate checked
    against the cluster CA (by pod, so not for a name). One ``k8s:GetPortForward``."""
    context = tls_context(ca_certificate, None, check_hostname=False)
    session = TlsSession(Tunnel(api, f"kube-apiserver-{node}", APISERVER_PORT), context)
    try:
        return session.peer_certificate()
    finally:
        session.close()


@dataclass(frozen=True)
class Member:
    """One etcd member as etcd reports it. ``name`` is the node name (kubeadm's ``--name``); empty = never started."""

    id: str  # decimal uint64, as the JSON gateway spells ids
    name: str
    peer_urls: tuple[str, ...]
    is_learner: bool

    @property
    def started(self) -> bool:
        # A member that was added but never ran has published no name (etcd's "unstarted").
        return bool(self.name)


@dataclass(frozen=True)
class EtcdStatus:
    """The cluster as one member sees it: members, the leader's id, alarms (member id -> alarm names)."""

    via: str  # the node whose member answered
    members: tuple[Member, ...]
    leader_id: str
    alarms: dict[str, tuple[str, ...]]
    # member name -> why its own status did not come (frozen, partitioned, not listening): KCP's member health
    unanswered: Mapping[str, str] = field(default_factory=dict)

    def by_name(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)

    @property
    def leader(self) -> Member | None:
        return next((m for m in self.members if m.id == self.leader_id), None)


class Tunnel:
    """A port-forward to one pod port, as a byte stream (the data channel of the port)."""

    def __init__(self, api: KubeApi, pod: str, port: int = ETCD_PORT, namespace: str = NAMESPACE) -> None:
        api.count("k8s:GetPortForward")
        url = urllib.parse.urlparse(api.target.url)
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/portforward?ports={port}"
        headers = [f"Authorization: Bearer {api.token}"] if api.token else []
        options: dict[str, Any] = {
            "header": headers,
            "subprotocols": [CHANNEL_PROTOCOL],
            "sslopt": {"context": api.ssl_context, "server_hostname": api.target.verify_name},
            "timeout": api.timeout,
        }
        if api.target.proxy:
            proxy = urllib.parse.urlparse(api.target.proxy)
            options.update(http_proxy_host=proxy.hostname, http_proxy_port=proxy.port, proxy_type="http")
        try:
            self.socket = websocket.create_connection(f"wss://{url.netloc}{path}", **options)
        except websocket.WebSocketBadStatusException as e:
            raise RemoteError(
                "PortForwardRefused",
                f"port-forward to {namespace}/{pod}:{port} refused: HTTP {e.status_code}",
                e.status_code,
            ) from None
        except (websocket.WebSocketException, OSError) as e:
            raise RemoteError(UNREACHABLE, f"cannot open a port-forward to {namespace}/{pod}:{port}: {e}") from None
        self.port = port
        self.pod = pod
        self._initialised = {0: False, 1: False}
        self._buffer = b""

    def send(self, data: bytes) -> None:
        self.socket.send_binary(b"\x00" + data)

    def recv(self) -> bytes:
        """The next bytes of the data channel; b'' when the other side closed the port."""
        while True:
            try:
                opcode, data = self.socket.recv_data()
            except (websocket.WebSocketConnectionClosedException, OSError):
                return b""
            except websocket.WebSocketTimeoutException:
                raise RemoteError("Timeout", f"no answer through the port-forward to {self.pod}") from None
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                return b""
            if opcode != websocket.ABNF.OPCODE_BINARY or not data:
                continue
            channel, payload = data[0], data[1:]
            if channel not in self._initialised:
                continue
            if not self._initialised[channel]:
                # Each channel's first frame names the port it belongs to (two bytes, little-endian).
                self._initialised[channel] = True
                continue
            if channel == 1:
                raise RemoteError("PortForwardError", f"port-forward to {self.pod}: {payload.decode(errors='replace')}")
            if payload:
                return payload

    def close(self) -> None:
        try:
            self.socket.close()
        except (websocket.WebSocketException, OSError):
            pass


class TlsSession:
    """TLS inside one tunnel (an ``SSLObject`` over memory buffers), handshaken at once."""

    def __init__(self, tunnel: Tunnel, context: ssl.SSLContext) -> None:
        self.tunnel = tunnel
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self._incoming, self._outgoing, server_side=False)
        self._handshake()

    def peer_certificate(self) -> bytes:
        """The server's certificate (DER), as the handshake received it."""
        return self.tls.getpeercert(binary_form=True) or b""

    def _pump(self) -> None:
        pending = self._outgoing.read()
        if pending:
            self.tunnel.send(pending)

    def _feed(self) -> None:
        data = self.tunnel.recv()
        if not data:
            raise RemoteError(UNREACHABLE, f"{self.tunnel.pod} closed the connection")
        self._incoming.write(data)

    def _handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                self._pump()
                return
            except ssl.SSLWantReadError:
                self._pump()
                self._feed()
            except ssl.SSLError as e:
                raise RemoteError("TLS", f"TLS with {self.tunnel.pod} failed: {e.reason or e}") from None

    def close(self) -> None:
        self.tunnel.close()


class EtcdSession(TlsSession):
    """HTTP/1.1 requests to etcd's JSON gateway, inside TLS inside one tunnel."""

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._send(path, body)
        status, headers, content = self._response()
        answer = json.loads(content or b"{}")
        if status != 200 or "error" in answer:
            message = answer.get("error") or answer.get("message") or f"HTTP {status}"
            raise RemoteError(message, f"etcd ({self.tunnel.pod}) {path}: {message}", status)
        return answer

    def _send(self, path: str, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        request = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{ETCD_PORT}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode() + payload
        self.tls.write(request)
        self._pump()

    def _read(self) -> bytes:
        while True:
            try:
                return self.tls.read(65536)
            except ssl.SSLWantReadError:
                self._feed()

    def _head(self) -> tuple[int, dict[str, str], bytes]:
        """The status, headers and what already came of the body."""
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._read()
        head, _sep, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        return status, headers, rest

    def _response(self) -> tuple[int, dict[str, str], bytes]:
        status, headers, rest = self._head()
        return status, headers, b"".join(self._body(headers, rest))

    def _body(self, headers: Mapping[str, str], rest: bytes) -> Iterator[bytes]:
        """The body as it arrives (chunked or sized): a snapshot is never held in memory whole."""
        if headers.get("transfer-encoding", "").lower() != "chunked":
            length = int(headers.get("content-length", "0"))
            while len(rest) < length:
                rest += self._read()
            yield rest[:length]
            return
        data = rest
        while True:
            while b"\r\n" not in data:
                data += self._read()
            size_line, _sep, data = data.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                return
            while len(data) < size + 2:
                data += self._read()
            yield data[:size]
            data = data[size + 2 :]

    def stream(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A server-streaming call of the JSON gateway: its messages, one JSON object per line, as they come."""
        self._send(path, body)
        status, headers, rest = self._head()
        if status != 200:
            answer = json.loads(b"".join(self._body(headers, rest)) or b"{}")
            message = answer.get("error") or answer.get("message") or f"HTTP {status}"
            raise RemoteError(str(message), f"etcd ({self.tunnel.pod}) {path}: {message}", status)
        pending = b""
        for piece in self._body(headers, rest):
            pending += piece
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield _stream_message(json.loads(line), self.tunnel.pod, path)
        if pending.strip():
            yield _stream_message(json.loads(pending), self.tunnel.pod, path)


def _stream_message(message: dict[str, Any], pod: str, path: str) -> dict[str, Any]:
    """One message of a gateway stream; an ``error`` message (the stream broke off inside etcd) raises."""
    error = message.get("error")
    if error:
        text = error.get("message", error) if isinstance(error, dict) else error
        raise RemoteError("StreamError", f"etcd ({pod}) {path}: {text}")
    return message.get("result") or {}


class Etcd:
    """The cluster's etcd members, for one module run. Reads through the first member that answers."""

    def __init__(
        self,
        api: KubeApi,
        ca_certificate: str,
        identity: Identity,
        count: Callable[[str], None] = lambda _name: None,
    ) -> None:
        self.api = api
        self.count = count
        # The chain is verified against the etcd CA; the name is not (see the module docstring).
        self.context = tls_context(ca_certificate, identity, check_hostname=False)
        self._sessions: dict[str, EtcdSession] = {}

    def session(self, node: str) -> EtcdSession:
        if node not in self._sessions:
            self._sessions[node] = EtcdSession(Tunnel(self.api, pod_of(node)), self.context)
        return self._sessions[node]

    def _post(self, node: str, path: str, body: dict[str, Any], name: str) -> dict[str, Any]:
        self.count(name)
        try:
            return self.session(node).post(path, body)
        except RemoteError:
            self.drop(node)
            raise

    def drop(self, node: str) -> None:
        session = self._sessions.pop(node, None)
        if session is not None:
            session.close()

    def status(self, nodes: list[str]) -> EtcdStatus:
        """Members, leader and alarms through the first of ``nodes`` whose member answers its status."""
        errors = []
        for node in nodes:
            try:
                status = self._post(node, "/v3/maintenance/status", {}, "etcd:GetStatus")
                members = self._post(node, "/v3/cluster/member/list", {}, "etcd:ListMembers")
                alarms = self._post(node, "/v3/maintenance/alarm", {"action": "GET"}, "etcd:ListAlarms")
            except RemoteError as e:
                errors.append(f"{node}: {e}")
                continue
            return EtcdStatus(
                via=node,
                members=tuple(_member(m) for m in members.get("members") or []),
                leader_id=str((status.get("leader") or "")),
                alarms=_alarms(alarms),
            )
        raise RemoteError(UNREACHABLE, "no etcd member answered: " + "; ".join(errors or ["no control-plane node"]))

    def member_status(self, node: str) -> dict[str, Any]:
        """The status of ``node``'s own member (answers only while that member runs and is reachable)."""
        return self._post(node, "/v3/maintenance/status", {}, "etcd:GetStatus")

    def health(self, status: EtcdStatus, nodes: list[str]) -> EtcdStatus:
        """``status`` with the members of ``nodes`` that do not answer their own status (KCP asks each member)."""
        unanswered = {}
        for node in nodes:
            if node == status.via or status.by_name(node) is None:
                continue  # the member that answered, or a node without a member yet
            try:
                self.member_status(node)
            except RemoteError as e:
                unanswered[node] = str(e)
        return replace(status, unanswered=unanswered)

    def snapshot(self, node: str, write: Callable[[bytes], None]) -> int:
        """A snapshot of ``node``'s member (etcd's ``Maintenance.Snapshot``: the backend database followed by its
        sha256), streamed to ``write`` as it comes; the number of bytes. A read (``etcd:Snapshot``) on a session
        of its own: the stream holds the connection until its end."""
        self.count("etcd:Snapshot")
        session = EtcdSession(Tunnel(self.api, pod_of(node)), self.context)
        size = 0
        try:
            for message in session.stream("/v3/maintenance/snapshot", {}):
                blob = base64.b64decode(message.get("blob") or "")
                if blob:
                    write(blob)
                    size += len(blob)
        finally:
            session.close()
        return size

    # writes: only through Operations.call ------------------------------------------------------------------
    def planned_name(self, method: str) -> str:
        return PLANNED[method]

    def invoke(self, method: str, params: dict[str, Any]) -> Any:
        if method == "move_leader":
            # etcd only accepts MoveLeader from the leader itself.
            return self._post(
                params["via"], "/v3/maintenance/transfer-leadership", {"targetID": params["target_id"]}, PLANNED[method]
            )
        if method == "member_remove":
            return self._post(params["via"], "/v3/cluster/member/remove", {"ID": params["member_id"]}, PLANNED[method])
        raise ValueError(f"unknown etcd write {method}")

    def close(self) -> None:
        for node in list(self._sessions):
            self.drop(node)


def _member(raw: dict[str, Any]) -> Member:
    return Member(
        id=str(raw.get("ID", "")),
        name=raw.get("name", ""),
        peer_urls=tuple(raw.get("peerURLs") or ()),
        is_learner=bool(raw.get("isLearner")),
    )


def _alarms(raw: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for alarm in raw.get("alarms") or []:
        found.setdefault(str(alarm.get("memberID", "")), []).append(str(alarm.get("alarm", "")))
    return {member: tuple(names) for member, names in found.items()}
