"""Control a background workload-cluster simulator (tools/kubesim) next to a moto server.

    python tools/kubesim_ctl.py start --moto URL [--state .build/kubesim]   # start (or reuse); prints its URL
    python tools/kubesim_ctl.py stop  [--state .build/kubesim]              # stop it and every etcd it runs
    python tools/kubesim_ctl.py url   [--state .build/kubesim]
    python tools/kubesim_ctl.py state [--state .build/kubesim]              # clusters, instances, etcd, knobs
    python tools/kubesim_ctl.py register NAME [--endpoint HOST:PORT]        # watch a cluster; prints port/URL
    python tools/kubesim_ctl.py journal [--cluster NAME] [--since EPOCH] [--no-moto]
    python tools/kubesim_ctl.py proxy                                       # the CONNECT proxy's URL
    python tools/kubesim_ctl.py register-inventory --inventory F --vars OUT # every capa_cluster of an inventory
    python tools/kubesim_ctl.py settle [--timeout S]                        # wait until no node is still booting
    python tools/kubesim_ctl.py summary                                     # per cluster: Nodes Ready, etcd members
    python tools/kubesim_ctl.py controller-requests --since EPOCH           # what the controller asked the API servers

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
    base = Path(prefix).resolve()  # the simulator runs in tools/: its files are named from here
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


# What a node does on its own (kubelets, kubeadm's discovery and TLS bootstrap) and what the simulator does itself;
# every other identity asking an API server is a controller (the collection's certificate or EKS token identity).
NOT_CONTROLLER = ("system:node:", "system:bootstrap:", "system:anonymous", "system:serviceaccount:", "kubesim")
# A node that has come to rest: joined, or given up (knob, bad bootstrap data), or powered off.
SETTLED = ("joined", "rejected", "failed", "off")


def inventory_clusters(path: str) -> list[dict[str, str]]:
    """The capa_cluster of every host of an inventory file (YAML), as the simulator registers them."""
    import yaml  # the venv's PyYAML (an Ansible requirement)

    found: list[dict[str, str]] = []

    def walk(group: dict[str, object]) -> None:
        for host in (group.get("hosts") or {}).values():  # type: ignore[union-attr]
            spec = (host or {}).get("capa_cluster")
            if isinstance(spec, dict) and spec.get("state", "present") == "present":
                found.append({"name": str(spec["name"]), "kind": "eks" if spec.get("kind") == "eks" else "kubeadm"})
        for child in (group.get("children") or {}).values():  # type: ignore[union-attr]
            walk(child or {})

    for group in (yaml.safe_load(Path(path).read_text()) or {}).values():
        walk(group or {})
    return found


def register_inventory(url: str, inventory: str, out: str) -> int:
    """Watch every cluster of the inventory and write the extra vars that reach their API servers: the proxy
    routes each cluster's real endpoint name (the load balancer's DNS name, the EKS endpoint) to its API server;
    ``required``, because each API comes up during the run (kubeadm init) and the run is to wait for it."""
    for cluster in inventory_clusters(inventory):
        _call(url, "POST", "/clusters", cluster)
        print(f"kubesim: watching cluster {cluster['name']} ({cluster['kind']})", file=sys.stderr)
    proxy = _call(url, "GET", "/state")["proxy"]  # type: ignore[index]
    Path(out).write_text(json.dumps({"capa_kubernetes_api": {"proxy": proxy, "mode": "required"}}) + "\n")
    return 0


def settle(url: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        clusters = _call(url, "GET", "/state")["clusters"].values()  # type: ignore[index,union-attr]
        instances = [i for c in clusters for i in c["instances"]]
        busy = [f"{i['machine'] or i['instance_id']} ({i['state']})" for i in instances if i["state"] not in SETTLED]
        if not busy:
            return 0
        if time.monotonic() > deadline:
            print(f"kubesim: still booting after {timeout:.0f}s: {', '.join(busy)}", file=sys.stderr)
            return 1
        print(f"kubesim: waiting for {len(busy)} node(s) to settle: {', '.join(busy[:5])}", file=sys.stderr)
        time.sleep(2)


def print_summary(url: str) -> int:
    for name in sorted(_call(url, "GET", "/state")["clusters"]):  # type: ignore[index]
        nodes = _call(url, "GET", f"/clusters/{name}/objects?apiVersion=v1&kind=Node") or []
        ready = [
            n
            for n in nodes  # type: ignore[union-attr]
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))
        ]
        line = f"  {name}: {len(ready)} of {len(nodes)} Nodes Ready"  # type: ignore[arg-type]
        etcd = _call(url, "GET", f"/clusters/{name}/etcd")
        members = etcd.get("members") or []  # type: ignore[union-attr]
        if members:
            voters = [m for m in members if m["started"] and not m["is_learner"]]
            learners = [m for m in members if m["is_learner"]]
            failed = (etcd.get("quorum") or {}).get("failed_windows") or []  # type: ignore[union-attr]
            line += (
                f"; etcd: {len(voters)} voting members, {len(learners)} learners, {len(failed)} failed quorum windows"
            )
        print(line)
    return 0


def controller_requests(url: str, since: float) -> int:
    """The requests of the controller to every API server since ``since``: count per cluster and request, and the
    writes (anything but GET, and the port-forwards etcd's reads go through are counted as what they are)."""
    journal = _call(url, "GET", f"/journal?moto=0&source=apiserver&since={since}") or []
    counts: dict[tuple[str, str], int] = {}
    writes = 0
    for entry in journal:  # type: ignore[union-attr]
        user = str(entry.get("user") or "system:anonymous")
        if entry.get("event") != "request" or user.startswith(NOT_CONTROLLER):
            continue
        method = entry.get("method", "")
        key = (str(entry.get("cluster")), f"{method} {entry.get('path')}")
        counts[key] = counts.get(key, 0) + 1
        portforward = entry.get("subresource") == "portforward"
        writes += method not in ("GET", "HEAD") and not portforward
    for (cluster, request), count in sorted(counts.items()):
        print(f"  {cluster}: {request} x{count}")
    print(f"requests: {sum(counts.values())}")
    print(f"writes: {writes}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "command",
        choices=[
            "start",
            "stop",
            "url",
            "state",
            "register",
            "journal",
            "proxy",
            "register-inventory",
            "settle",
            "summary",
            "controller-requests",
        ],
    )
    parser.add_argument("name", nargs="?", help="register: the cluster name")
    parser.add_argument("--state", default=".build/kubesim", help="state prefix (default .build/kubesim)")
    parser.add_argument("--moto", help="moto server URL (default: the content of .build/moto.url)")
    parser.add_argument("--timeout", type=float, default=60, help="start: seconds to wait")
    parser.add_argument("--endpoint", help="register: controlPlaneEndpoint host:port that resolves to the cluster")
    parser.add_argument("--cluster", help="journal: only this cluster")
    parser.add_argument("--since", type=float, help="journal: only entries after this epoch time")
    parser.add_argument("--no-moto", action="store_true", help="journal: without moto's requests")
    parser.add_argument("--inventory", help="register-inventory: the Ansible inventory (YAML)")
    parser.add_argument("--vars", help="register-inventory: write the extra vars (capa_kubernetes_api) here")
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
    elif args.command == "proxy":
        print(_call(url, "GET", "/state")["proxy"])  # type: ignore[index]
    elif args.command == "register-inventory":
        if not args.inventory or not args.vars:
            parser.error("register-inventory needs --inventory and --vars")
        return register_inventory(url, args.inventory, args.vars)
    elif args.command == "settle":
        return settle(url, args.timeout)
    elif args.command == "summary":
        return print_summary(url)
    elif args.command == "controller-requests":
        return controller_requests(url, args.since or 0.0)
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
