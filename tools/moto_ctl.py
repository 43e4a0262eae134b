"""Control a background tools/moto_server.py for make targets.

    python tools/moto_ctl.py start  [--state .build/moto]   # start (or reuse) a server; prints its URL
    python tools/moto_ctl.py stop   [--state .build/moto]   # stop the server started with that state prefix
    python tools/moto_ctl.py url    [--state .build/moto]
    python tools/moto_ctl.py requests [--url URL | --state P] [--mutating] [--count] [--summary]
    python tools/moto_ctl.py reset-requests [--url URL | --state P]
    python tools/moto_ctl.py reset  [--url URL | --state P]  # moto state and counter

The state prefix P names P.url, P.pid and P.log.  ``start`` exits 0 once the server answers and
reuses a live server already recorded under P (printing "reused" on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
READ_ONLY_PREFIXES = ("Describe", "List", "Get", "Head", "Simulate")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_capa/requests", timeout=5):
            return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _call(url: str, method: str, path: str) -> object:
    request = urllib.request.Request(f"{url}{path}", method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return json.loads(body) if body else None


def _state(prefix: str) -> tuple[Path, Path, Path]:
    base = Path(prefix)
    return base.with_name(base.name + ".url"), base.with_name(base.name + ".pid"), base.with_name(base.name + ".log")


def start(prefix: str, timeout: float) -> int:
    urlfile, pidfile, logfile = _state(prefix)
    pid_text, url = _read(pidfile), _read(urlfile)
    if pid_text.isdigit() and _alive(int(pid_text)) and url and _answers(url):
        print(f"moto server already running at {url} (pid {pid_text}): reused", file=sys.stderr)
        print(url)
        return 0
    urlfile.parent.mkdir(parents=True, exist_ok=True)
    urlfile.unlink(missing_ok=True)
    pidfile.unlink(missing_ok=True)
    with open(logfile, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "moto_server.py"), "--urlfile", str(urlfile), "--pidfile", str(pidfile)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # survives the make recipe's shell
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            print(f"moto server exited with {process.returncode}; see {logfile}", file=sys.stderr)
            return 1
        url = _read(urlfile)
        if url and _answers(url):
            print(f"moto server started at {url} (pid {process.pid}, log {logfile})", file=sys.stderr)
            print(url)
            return 0
        time.sleep(0.1)
    process.terminate()
    print(f"moto server did not answer within {timeout}s; see {logfile}", file=sys.stderr)
    return 1


def stop(prefix: str) -> int:
    urlfile, pidfile = _state(prefix)[:2]
    pid_text = _read(pidfile)
    if not pid_text.isdigit() or not _alive(int(pid_text)):
        print("moto server not running", file=sys.stderr)
        urlfile.unlink(missing_ok=True)
        pidfile.unlink(missing_ok=True)
        return 0
    pid = int(pid_text)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    urlfile.unlink(missing_ok=True)
    pidfile.unlink(missing_ok=True)
    print(f"moto server (pid {pid}) stopped", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "command", choices=["start", "stop", "url", "requests", "reset-requests", "reset"], help="what to do"
    )
    parser.add_argument("--state", default=".build/moto", help="state file prefix (default .build/moto)")
    parser.add_argument("--url", help="server URL (default: read from STATE.url)")
    parser.add_argument("--timeout", type=float, default=90, help="start: seconds to wait for the server")
    parser.add_argument("--mutating", action="store_true", help="requests: only non Describe/List/Get operations")
    parser.add_argument("--count", action="store_true", help="requests: print only the number of requests")
    parser.add_argument("--summary", action="store_true", help="requests: one 'N service:Operation' line each")
    args = parser.parse_args(argv)

    if args.command == "start":
        return start(args.state, args.timeout)
    if args.command == "stop":
        return stop(args.state)
    url = args.url or _read(_state(args.state)[0])
    if not url:
        print(f"no moto server URL (start one: python {Path(__file__).name} start)", file=sys.stderr)
        return 1
    if args.command == "url":
        print(url)
    elif args.command == "reset-requests":
        _call(url, "POST", "/_capa/requests/reset")
    elif args.command == "reset":
        _call(url, "POST", "/moto-api/reset")
        _call(url, "POST", "/_capa/requests/reset")
    else:
        records = _call(url, "GET", "/_capa/requests")
        assert isinstance(records, list)
        if args.mutating:
            records = [r for r in records if not r.get("operation", "").startswith(READ_ONLY_PREFIXES)]
        if args.count:
            print(len(records))
        elif args.summary:
            for op, n in sorted(Counter(f"{r['service']}:{r['operation']}" for r in records).items()):
                print(f"{n:5d} {op}")
        else:
            print(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
