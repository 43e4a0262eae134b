"""Run the simulator in the foreground until SIGTERM/SIGINT::

    python -m kubesim --state DIR --moto URL [--port N] [--urlfile F] [--pidfile F] [--exit-with-parent]

(with ``tools/`` on ``sys.path``; ``tools/kubesim_ctl.py start`` does this in the background). ``--urlfile`` gets
``http://127.0.0.1:PORT`` of the control API once it listens.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from aiohttp import web

from .control import build_app
from .proxy import ConnectProxy
from .sim import Simulator


def _write_atomic(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


async def serve(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    state = Path(args.state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    sim = Simulator(state, args.moto, loop)
    if not args.no_eks:
        from . import eks

        eks.attach(sim)
    runner = web.AppRunner(build_app(sim), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}"
    sim.control_url = url
    proxy = ConnectProxy(sim)
    sim.proxy_url = await proxy.start()
    sim.start()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if args.pidfile:
        _write_atomic(args.pidfile, f"{os.getpid()}\n")
    if args.urlfile:
        _write_atomic(args.urlfile, f"{url}\n")
    print(f"kubesim listening on {url} (pid {os.getpid()}, moto {args.moto}, state {state})", flush=True)
    parent = os.getppid()
    try:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass
            if args.exit_with_parent and os.getppid() != parent:
                break
    finally:
        await loop.run_in_executor(None, sim.stop)
        await proxy.stop()
        await runner.cleanup()
        for path, text in ((args.pidfile, f"{os.getpid()}\n"), (args.urlfile, f"{url}\n")):
            try:
                if path and Path(path).read_text() == text:
                    Path(path).unlink()
            except OSError:
                pass
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubesim", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--state", required=True, help="state directory (etcd data, node sandboxes, logs)")
    parser.add_argument("--moto", required=True, help="URL of the moto server (tools/moto_server.py)")
    parser.add_argument("--port", type=int, default=0, help="control API port (default: a free one)")
    parser.add_argument("--urlfile", help="write the control API URL here once listening")
    parser.add_argument("--pidfile", help="write the process id here")
    parser.add_argument("--exit-with-parent", action="store_true", help="stop when the parent exits (fixtures)")
    parser.add_argument("--no-eks", action="store_true", help="do not simulate EKS clusters")
    return asyncio.run(serve(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
