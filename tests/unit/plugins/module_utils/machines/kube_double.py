# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A workload cluster's Kubernetes API server over HTTPS, for the tests that run machine tiers against in-process moto.

It stands for the other side of the wire only: the tiers reach it with their own client (``workload.kube``) through
``kubernetes_api.server``, with TLS checked against the cluster CA for the endpoint's name, exactly as they reach a
real API server. What it serves is what a worker group or a pool asks of it:

* ``GET /version``;
* the Nodes: one ``Ready`` Node for each running instance of the cluster that moto holds (a node that boots and
  joins at once, unless the test says it is still ``booting``), named after the instance's private DNS name with
  CAPA's providerID; a cordon (merge patch) and a delete are kept;
* pods: none (a drain finds nothing to evict);
* ``kube-system`` Secrets: created, listed (``fieldSelector=type=...``), merge-patched and deleted in memory, as the
  bootstrap tokens are.

Every request is recorded (``requests``) so a test can assert what reached the wire.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Instances = Callable[[], list[dict[str, Any]]]


class KubeDouble:
    """An API server whose Nodes are ``instances()`` (EC2 instances as ``DescribeInstances`` returns them)."""

    def __init__(self, ca_cert: str, ca_key: str, host: str, instances: Instances) -> None:
        self.instances = instances
        self.secrets: dict[str, dict[str, Any]] = {}
        self.deleted_nodes: set[str] = set()
        self.cordoned: set[str] = set()
        self.booting: set[str] = set()  # instance ids whose node has not joined yet (no Node)
        self.joining = True  # False: no instance's node joins (until set again)
        self.requests: list[tuple[str, str]] = []
        self._dir = tempfile.TemporaryDirectory()
        cert, key = _serving_pair(ca_cert, ca_key, host, Path(self._dir.name))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer(*double.get(self._path(), self._query()))

            def do_POST(self) -> None:
                self._answer(*double.post(self._path(), self._body()))

            def do_PATCH(self) -> None:
                self._answer(*double.patch(self._path(), self._body()))

            def do_DELETE(self) -> None:
                self._answer(*double.delete(self._path()))

            def _path(self) -> str:
                path = urllib.parse.urlparse(self.path).path
                double.requests.append((self.command, path))
                return path

            def _query(self) -> dict[str, str]:
                return dict(urllib.parse.parse_qsl(urllib.parse.urlparse(self.path).query))

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"{}")

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._dir.cleanup()

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    # the API -----------------------------------------------------------------------------------------------------
    def get(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path == "/version":
            return 200, {"gitVersion": "v1.31.2"}
        if path == "/api/v1/nodes":
            return 200, _list(self.nodes())
        if path.startswith("/api/v1/nodes/"):
            found = [n for n in self.nodes() if n["metadata"]["name"] == path.rsplit("/", 1)[1]]
            return (200, found[0]) if found else _not_found(path)
        if path.endswith("/pods"):
            return 200, _list([])
        if path == "/api/v1/namespaces/kube-system/secrets":
            wanted = query.get("fieldSelector", "").removeprefix("type=")
            return 200, _list([s for s in self.secrets.values() if not wanted or s.get("type") == wanted])
        return _not_found(path)

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path != "/api/v1/namespaces/kube-system/secrets":
            return _not_found(path)
        name = body["metadata"]["name"]
        if name in self.secrets:
            return 409, {"kind": "Status", "reason": "AlreadyExists", "message": f'secrets "{name}" already exists'}
        self.secrets[name] = body
        return 201, body

    def patch(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        name = path.rsplit("/", 1)[1]
        if path.startswith("/api/v1/nodes/"):
            self.cordoned.add(name)
            return 200, {"metadata": {"name": name}}
        secret = self.secrets.get(name)
        if secret is None:
            return _not_found(path)
        secret["data"] = {**secret.get("data", {}), **body.get("data", {})}
        return 200, secret

    def delete(self, path: str) -> tuple[int, Any]:
        name = path.rsplit("/", 1)[1]
        if path.startswith("/api/v1/nodes/"):
            self.deleted_nodes.add(name)
            return 200, {"kind": "Status", "status": "Success"}
        if self.secrets.pop(name, None) is None:
            return _not_found(path)
        return 200, {"kind": "Status", "status": "Success"}

    def nodes(self) -> list[dict[str, Any]]:
        found = []
        for instance in self.instances():
            name = instance.get("PrivateDnsName") or ""
            if instance["State"]["Name"] != "running" or not name or name in self.deleted_nodes:
                continue
            if instance["InstanceId"] in self.booting or not self.joining:
                continue
            zone = instance["Placement"]["AvailabilityZone"]
            since = instance["LaunchTime"]
            since = since.isoformat() if isinstance(since, datetime.datetime) else str(since)
            found.append(
                {
                    "metadata": {"name": name},
                    "spec": {
                        "providerID": f"aws:///{zone}/{instance['InstanceId']}",
                        "unschedulable": name in self.cordoned,
                    },
                    "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}]},
                }
            )
        return found


def _list(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "List", "metadata": {}, "items": items}


def _not_found(path: str) -> tuple[int, Any]:
    return 404, {"kind": "Status", "reason": "NotFound", "message": f"{path} not found"}


def _serving_pair(ca_cert: str, ca_key: str, host: str, where: Path) -> tuple[str, str]:
    """A serving certificate for ``host`` (and 127.0.0.1) signed by the cluster CA, as kubeadm makes the API
    server's: (certificate file, key file)."""
    ca = x509.load_pem_x509_certificate(ca_cert.encode())
    signer = serialization.load_pem_private_key(ca_key.encode(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName(host), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(signer, hashes.SHA256())
    )
    cert_file, key_file = where / "apiserver.crt", where / "apiserver.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)
