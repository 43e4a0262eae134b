"""Control a background workload-cluster simulator (tools/kubesim) next to a moto server.

    python tools/kubesim_ctl.py start --moto URL [--state .build/kubesim]   # start (or reuse); prints its URL
    python tools/kubesim_ctl.py stop  [--state .build/kubesim]              # stop it and every etcd it runs
    python tools/kubesim_ctl.py url   [--state .build/kubesim]
    python tools/kubesim_ctl.py state [--state .build/kubesim]              # clusters, instances, etcd, knobs
    python tools/kubesim_ctl.py register NAME [--endpoint HOST:PORT]        # watch a cluster; prints port/URL
    python tools/kubesim_ctl.py journal [--cluster NAME] [--since EPOCH] [--no-moto]

The state prefix P names P.url, P.pid, P.log and the state directory P.d (etcd data, node sandboxes). ``start``
exits 0 once the control API answers and reuses a live simulator recorded under P. ``--moto`` defaults to the URL
in .build/moto.url (``make moto-start``).
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
from pathlib import Path

HERE = Path(__file__).resolve().parent


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


def _call(url: str, method: str, path: str, body: object = None) -> object:
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(
        f"{url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read() or b"null")


def _answers(url: str) -> bool:
    try:
        _call(url, "GET", "/healthz")
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _state(prefix: str) -> tuple[Path, Path, Path, Path]:
    base = Path(prefix)
    return (
        base.with_name(base.name + ".url"),
        base.with_name(base.name + ".pid"),
        base.with_name(base.name + ".log"),
        base.with_name(base.name + ".d"),
    )


def start(prefix: str, moto: str, timeout: float) -> int:
    urlfile, pidfile, logfile, state = _state(prefix)
    pid_text, url = _read(pidfile), _read(urlfile)
    if pid_text.isdigit() and _alive(int(pid_text)) and url and _answers(url):
        print(f"kubesim already running at {url} (pid {pid_text}): reused", file=sys.stderr)
        print(url)
        return 0
    urlfile.parent.mkdir(parents=True, exist_ok=True)
    urlfile.unlink(missing_ok=True)
    pidfile.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    with open(logfile, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesim",
                "--state",
                str(state),
                "--moto",
                moto,
                "--urlfile",
                str(urlfile),
                "--pidfile",
                str(pidfile),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=str(HERE),
            env=env,
            start_new_session=True,  # survives the make recipe's shell
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            print(f"kubesim exited with {process.returncode}; see {logfile}", file=sys.stderr)
            return 1
        url = _read(urlfile)
        if url and _answers(url):
            print(f"kubesim started at {url} (pid {process.pid}, log {logfile})", file=sys.stderr)
            print(url)
            return 0
        time.sleep(0.1)
    process.terminate()
    print(f"kubesim did not answer within {timeout}s; see {logfile}", file=sys.stderr)
    return 1


def stop(prefix: str) -> int:
    urlfile, pidfile = _state(prefix)[:2]
    pid_text = _read(pidfile)
    if not pid_text.isdigit() or not _alive(int(pid_text)):
        print("kubesim not running", file=sys.stderr)
        urlfile.unlink(missing_ok=True)
        pidfile.unlink(missing_ok=True)
        return 0
    pid = int(pid_text)
    os.kill(pid, signal.SIGTERM)  # the simulator stops its etcd members (SIGTERM, then SIGKILL) before exiting
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)  # its etcd children get SIGKILL from the kernel (PR_SET_PDEATHSIG)
    urlfile.unlink(missing_ok=True)
    pidfile.unlink(missing_ok=True)
    print(f"kubesim (pid {pid}) stopped", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("command", choices=["start", "stop", "url", "state", "register", "journal"])
    parser.add_argument("name", nargs="?", help="register: the cluster name")
    parser.add_argument("--state", default=".build/kubesim", help="state prefix (default .build/kubesim)")
    parser.add_argument("--moto", help="moto server URL (default: the content of .build/moto.url)")
    parser.add_argument("--timeout", type=float, default=60, help="start: seconds to wait")
    parser.add_argument("--endpoint", help="register: controlPlaneEndpoint host:port that resolves to the cluster")
    parser.add_argument("--cluster", help="journal: only this cluster")
    parser.add_argument("--since", type=float, help="journal: only entries after this epoch time")
    parser.add_argument("--no-moto", action="store_true", help="journal: without moto's requests")
    args = parser.parse_args(argv)
    if args.command == "start":
        moto = args.moto or _read(Path(".build/moto.url"))
        if not moto:
            print("no moto server URL: pass --moto or run `make moto-start` first", file=sys.stderr)
            return 1
        return start(args.state, moto, args.timeout)
    if args.command == "stop":
        return stop(args.state)
    url = _read(_state(args.state)[0])
    if not url:
        print("kubesim is not running (start it: python tools/kubesim_ctl.py start)", file=sys.stderr)
        return 1
    if args.command == "url":
        print(url)
    elif args.command == "state":
        print(json.dumps(_call(url, "GET", "/state"), indent=1))
    elif args.command == "register":
        if not args.name:
            parser.error("register needs a cluster name")
        body: dict[str, object] = {"name": args.name}
        if args.endpoint:
            body["endpoint"] = args.endpoint
        summary = _call(url, "POST", "/clusters", body)
        assert isinstance(summary, dict)
        print(json.dumps({k: summary[k] for k in ("name", "port", "url")}))
    else:
        query = [f"moto={0 if args.no_moto else 1}"]
        if args.cluster:
            query.append(f"cluster={args.cluster}")
        if args.since is not None:
            query.append(f"since={args.since}")
        for entry in _call(url, "GET", "/journal?" + "&".join(query)) or []:  # type: ignore[union-attr]
            print(json.dumps(entry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
