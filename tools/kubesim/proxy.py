"""An HTTP CONNECT proxy in front of every simulated cluster's API server.

A controller outside a private network reaches the API servers through a proxy (a corporate proxy, squid on a
bastion); the collection's ``kubernetes_api.proxy`` is that path. Here it is also how a controller reaches a
simulated cluster at its *real* endpoint name - the load balancer's DNS name a moto ELB hands out, an EKS endpoint -
which no resolver knows: ``CONNECT <host>:<port>`` is routed to the cluster whose endpoint that is (the aliases
kubeadm init's ``controlPlaneEndpoint`` and EKS's endpoint add), so the client sends the same request line, SNI and
Host header as against AWS and checks the serving certificate for the same name.

What a proxy in front of an unreachable endpoint answers, this one answers: ``502 Bad Gateway`` for a name that is
no cluster's (yet: before ``kubeadm init`` the load balancer has no healthy target) and ``405`` for anything but
``CONNECT``. Each tunnel is journalled (``proxy`` ``connect``: target, status), the bytes inside it are not (TLS).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

HEADER_LIMIT = 16 * 1024


class ConnectProxy:
    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.server: asyncio.base_events.Server | None = None
        self.url = ""

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.server = await asyncio.start_server(self._serve, host, port)
        bound = self.server.sockets[0].getsockname()
        self.url = f"http://{bound[0]}:{bound[1]}"
        return self.url

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ConnectionError):
            writer.close()
            return
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        method, target = request_line[0], (request_line[1] if len(request_line) > 1 else "")
        if method != "CONNECT":
            await self._answer(writer, 405, "Method Not Allowed", target)
            return
        cluster = self.sim.resolve_endpoint(target) or self.sim.resolve_endpoint(target.removesuffix(":443"))
        if cluster is None:
            await self._answer(writer, 502, "Bad Gateway", target)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", cluster.port)
        except OSError:
            await self._answer(writer, 502, "Bad Gateway", target, cluster.name)
            return
        self.sim.journal.record("proxy", "connect", cluster=cluster.name, target=target, status=200)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def _answer(
        self, writer: asyncio.StreamWriter, status: int, reason: str, target: str, cluster: str = ""
    ) -> None:
        self.sim.journal.record("proxy", "connect", cluster=cluster or None, target=target, status=status)
        body = f"{status} {reason}: no API server answers at {target}\n".encode()
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            sink.close()
