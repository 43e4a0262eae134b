"""Benchmark: our playbooks against a hand-written amazon.aws peer playbook, on a local moto server.

    python bench/run.py [--runs 3] [--phases create,noop,noop-sm,check,delete] [--latency-scale 0.0333]
                        [--workers 2,20,100,200] [--clusters 1,5,20] [--series-runs 3] [--out .build/bench]
    python bench/run.py --report          # rewrite BENCHMARKS.md and its charts from the saved results

Every measurement is one ``ansible-playbook`` process: wall time, CPU seconds (user + system) of its whole
process tree and its peak RSS come from ``os.wait4`` on that process; AWS requests come from the moto server's
own counter (``/_capa/requests``), reset before each measurement; changed tasks from the PLAY RECAP; in the phase
runs, each task's start and end per host from the task clock bench/callback_plugins/bench_timings.py.

The create and delete phases of both sides run under the endpoint's AWS latency model (tools/moto_server.py fix 16)
at ``--latency-scale`` (default 1/30 of AWS's time; 0 runs them with everything settling at once); the no-op and
check phases and both scale series run with the model off, as they measure reads of what exists.

The upgrade runs (``--upgrade-runs``, ours alone: the peer playbook has no Kubernetes upgrade) need nodes that boot,
join and run etcd: the workload-cluster simulator (tools/kubesim, ``make sim-deps``) runs beside moto, both at
``--upgrade-scale`` (default 0.1: see DEFAULT_UPGRADE_SCALE). Each run builds the self-managed cluster (3
control-plane machines, md-0 with 2 workers, addons) and measures its upgrade from v1.31.2 to v1.32.0 - the control
plane, then the workers - against the critical path of bench/critical_path.py with each new machine's launch-to-Ready
time as the simulator took it (its journal), so that the ratio is what the reconciler adds.

``--keep`` starts from the saved results.json and replaces only the sections this run measures (``--phases ''``,
``--workers ''``, ``--clusters ''``, ``--limit-runs 0``, ``--upgrade-runs 0`` or ``--eks-upgrade-runs 0`` skip
theirs).

The limit runs (``--limit-runs``, default 3, ours alone) repeat the phase runs' create and delete of both clusters under
the latency model at ``--upgrade-scale``, set against the critical path at that scale: at 1/30 Ansible's fixed
seconds (start-up, compile, preflight, the status read-back) stand for thirty times as much of AWS's time, at 1/10 for
ten times; the peer is compared in the phase runs.

The EKS upgrade runs (``--eks-upgrade-runs``, default 3, ours alone) run on moto under the latency model at
``--upgrade-scale``: the demo-eks cluster (without its self-managed pool) is created at 1.31 and upgraded to 1.32 -
the control plane's version update, then its node group's (moto fix 18).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable
PLAYBOOK = [str(Path(PY).parent / "ansible-playbook")]
READ_ONLY = ("Describe", "List", "Get", "Simulate")
# The endpoint's account as every measured run and the bench itself address it.
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
REGION = "us-east-1"
PHASES = ["create", "noop", "noop-sm", "check", "delete"]
# The phases whose time is AWS's waits: run under the latency model, set against the critical path.
LATENCY_PHASES = ("create", "delete")
DEFAULT_LATENCY_SCALE = 0.0333
# The upgrade runs' scale: part of a simulated node's time is not scaled (its AWS CLI fetching the user data, etcd's
# 5 s health interval, real etcd member changes), and at 1/30 those few real seconds stand for minutes of AWS's; at
# 1/10 they weigh three times less, and a run still takes about three minutes.
DEFAULT_UPGRADE_SCALE = 0.1
# The phase runs' self-managed cluster alone: our `demo` host, the peer's first play (its EKS play switched off).
SELF_MANAGED_HOST = "demo"

OURS = {
    "create": ["-i", "{inv}", str(ROOT / "playbooks/site.yml")],
    "noop": ["-i", "{inv}", str(ROOT / "playbooks/site.yml")],
    "noop-sm": ["--limit", SELF_MANAGED_HOST, "-i", "{inv}", str(ROOT / "playbooks/site.yml")],
    "check": ["--check", "-i", "{inv}", str(ROOT / "playbooks/site.yml")],
    "delete": ["-i", "{inv}", str(ROOT / "playbooks/delete.yml")],
}
PEER = {
    "create": [str(BENCH / "peer/site.yml")],
    "noop": [str(BENCH / "peer/site.yml")],
    "noop-sm": [str(BENCH / "peer/site.yml"), "-e", "peer_eks=false"],
    "check": ["--check", str(BENCH / "peer/site.yml")],
    "delete": [str(BENCH / "peer/delete.yml")],
}


# --- moto server and counter ---------------------------------------------------------------------
class Moto:
    """A bench/moto_server.py process (tools/moto_server.py + one ELB fix) and its request counter."""

    def __init__(self, out: Path) -> None:
        self.urlfile = out / "moto.url"
        self.urlfile.unlink(missing_ok=True)
        self.log = open(out / "moto.log", "wb")  # noqa: SIM115 - lives as long as the server
        cmd = [PY, str(BENCH / "moto_server.py"), "--urlfile", str(self.urlfile)]
        self.process = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        while not (self.urlfile.exists() and self.urlfile.read_text().strip()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"moto server did not start; see {out / 'moto.log'}")
            time.sleep(0.1)
        self.url = self.urlfile.read_text().strip()
        self.server_pid = self.process.pid

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
        return json.loads(body) if body else None

    def reset_counter(self) -> None:
        self._call("POST", "/_capa/requests/reset")

    def reset_all(self) -> None:
        self._call("POST", "/moto-api/reset")
        self.warm()
        self.reset_counter()

    # After a reset moto builds a region's backends on their first request (EC2's with the default VPC, its subnets
    # and zones; the tagging API's, which creates those of every service it covers): 0.1-0.3 s each, which AWS does
    # not spend, counted against whichever side asks first - the phase runs start with ours. One read of each service
    # the clusters use builds them before the clock starts.
    WARMED = (
        ("ec2", "describe_availability_zones"),
        ("resourcegroupstaggingapi", "get_resources"),
        ("eks", "list_clusters"),
        ("iam", "list_roles"),
        ("sts", "get_caller_identity"),
        ("elb", "describe_load_balancers"),
        ("elbv2", "describe_load_balancers"),
        ("autoscaling", "describe_auto_scaling_groups"),
        ("secretsmanager", "list_secrets"),
        ("ssm", "describe_parameters"),
    )

    def warm(self) -> None:
        """Build the backends of :data:`WARMED` in :data:`REGION` with one read each (not counted: the caller resets
        the counter)."""
        import boto3

        session = boto3.session.Session(
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=REGION,
        )
        for service, operation in self.WARMED:
            getattr(session.client(service, endpoint_url=self.url), operation)()

    def requests(self) -> list[dict[str, str]]:
        return self._call("GET", "/_capa/requests")

    def raise_quotas(self, quotas: dict[tuple[str, str], float], region: str = "us-east-1") -> None:
        """Applied values for Service Quotas codes, as in an account whose quotas were raised (``/_capa/quotas``;
        moto's reset forgets them)."""
        for (service, code), value in quotas.items():
            self._post("/_capa/quotas", {"region": region, "service": service, "code": code, "value": value})

    def set_latency(self, scale: float) -> float:
        """The latency model's scale from now on (0: off); the server's answer, which is what is in force."""
        return float(self._post("/_capa/latency", {"scale": scale})["scale"])

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        """A JSON body POSTed to the server's control API; its JSON answer."""
        request = urllib.request.Request(
            self.url + path,
            method="POST",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = response.read()
        return json.loads(answer) if answer else None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)
        self.log.close()


# --- one measured ansible-playbook run -----------------------------------------------------------
def recap_changed(text: str) -> int:
    """Sum of changed=N over the PLAY RECAP lines."""
    total, in_recap = 0, False
    for line in text.splitlines():
        if line.startswith("PLAY RECAP"):
            in_recap = True
        elif in_recap and (match := re.search(r"\bchanged=(\d+)", line)):
            total += int(match.group(1))
    return total


def read_timings(path: Path, since: float) -> list[list[Any]]:
    """The task clock's lines as ``[host, role, task, start s, seconds, status]``, start counted from ``since``
    (the epoch time the playbook was started), in order of start."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        t = json.loads(line)
        rows.append([t["host"], t["role"], t["task"], round(t["start"] - since, 2), round(t["end"] - t["start"], 2)])
        rows[-1].append(t["status"])
    return sorted(rows, key=lambda row: row[3])


def measure(
    moto: Moto, env: dict[str, str], args: list[str], log: Path, forks: int = 5, timings: bool = False
) -> dict[str, Any]:
    moto.reset_counter()
    clock = log.with_suffix(".tasks.jsonl")
    clock.unlink(missing_ok=True)
    if timings:
        env = dict(
            env,
            ANSIBLE_CALLBACK_PLUGINS=str(BENCH / "callback_plugins"),
            ANSIBLE_CALLBACKS_ENABLED="bench_timings",
            BENCH_TIMINGS_FILE=str(clock),
        )
    since = time.time()
    start = time.perf_counter()
    with open(log, "w") as out:
        process = subprocess.Popen(
            [*PLAYBOOK, "-f", str(forks), "-e", f"capa_output_dir={log.parent / 'capa'}", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )
        # wait4 gives the rusage of this process and every descendant it waited for: the whole tree.
        _pid, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    records = moto.requests()
    # The endpoint's journal of this run (operation and arrival time of each request), next to its task clock.
    log.with_suffix(".requests.json").write_text(json.dumps(records))
    operations = Counter(f"{r['service']}:{r['operation']}" for r in records)
    mutating = {op: n for op, n in operations.items() if not op.split(":", 1)[1].startswith(READ_ONLY)}
    text = log.read_text()
    extra: dict[str, Any] = {}
    if timings:
        # With the task clock, the journal too: each request as [service:Operation, s from the playbook's start],
        # what report.chain_trace follows a cluster's critical chain through.
        extra["tasks"] = read_timings(clock, since)
        extra["journal"] = [[f"{r['service']}:{r['operation']}", round(r["time"] - since, 3)] for r in records]
    return {
        "rc": process.returncode,
        "wall": round(wall, 2),
        "cpu": round(usage.ru_utime + usage.ru_stime, 2),
        "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
        "requests": len(records),
        "mutating": sum(mutating.values()),
        "operations": dict(sorted(operations.items())),
        "changed": recap_changed(text),
        "log": str(log.relative_to(ROOT)) if log.is_relative_to(ROOT) else str(log),
        **extra,
    }


def checked(result: dict[str, Any], what: str) -> dict[str, Any]:
    status = "ok" if result["rc"] == 0 else f"FAILED rc={result['rc']} (see {result['log']})"
    print(
        f"  {what:<14} {status:<4} wall {result['wall']:7.2f}s cpu {result['cpu']:7.2f}s"
        f" rss {result['maxrss_mb']:6.1f}MB requests {result['requests']:5d} mutating {result['mutating']:4d}"
        f" changed {result['changed']}",
        flush=True,
    )
    return result


# --- inventories -----------------------------------------------------------------------------------
def cluster_spec(name: str, workers: int) -> dict[str, Any]:
    return {
        "name": name,
        "region": "us-east-1",
        "kind": "unmanaged",
        "kubernetes_version": "v1.31.2",
        "bastion": {"enabled": True, "allowed_cidr_blocks": ["203.0.113.0/24"]},
        "control_plane": {"replicas": 3, "instance_type": "t3.large"},
        "machine_deployments": [{"name": "md-0", "replicas": workers, "instance_type": "t3.large"}],
        # Moto has no Kubernetes API, so a worker added later joins with kubeadm init's token, which no run can renew
        # without one: it must outlive the workers series (grown in place over about 20 minutes), as it would for a
        # cluster whose API the controller cannot reach. The largest lifetime the spec takes: a week.
        "bootstrap_token_ttl": 7 * 24 * 3600,
    }


def write_inventory(path: Path, names: list[str], workers: int) -> Path:
    hosts = {name: {"capa_cluster": cluster_spec(name, workers)} for name in names}
    inventory = {
        "capa_clusters": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
            "hosts": hosts,
        }
    }
    path.write_text(json.dumps(inventory, indent=1))  # JSON is YAML
    return path


def sub(args: list[str], inv: Path) -> list[str]:
    return [a.replace("{inv}", str(inv)) for a in args]


UPGRADE_FROM, UPGRADE_TO = "v1.31.2", "v1.32.0"


class KubeSim:
    """The workload-cluster simulator (tools/kubesim_ctl.py) watching ``moto``'s instances: it boots them."""

    def __init__(self, out: Path, moto: Moto) -> None:
        self.state = str(out / "kubesim")
        self.ctl("stop")
        self.ctl("start", "--moto", moto.url)
        self.url = Path(self.state + ".url").read_text().strip()

    def ctl(self, *args: str) -> str:
        command = [PY, str(ROOT / "tools/kubesim_ctl.py"), args[0], "--state", self.state, *args[1:]]
        done = subprocess.run(command, capture_output=True, text=True, check=args[0] != "stop")
        return done.stdout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = response.read()
        return json.loads(answer) if answer else None

    def fresh(self, scale: float, inventory: Path, vars_file: Path) -> None:
        """No cluster, no journal; ``scale`` as the time scale; the inventory's clusters watched."""
        self.call("POST", "/reset")
        self.call("POST", "/config", {"time_scale": scale})
        self.ctl("register-inventory", "--inventory", str(inventory), "--vars", str(vars_file))

    def journal(self, since: float) -> list[dict[str, Any]]:
        return self.call("GET", f"/journal?since={since}")

    def stop(self) -> None:
        self.ctl("stop")


def launch_to_ready(journal: list[dict[str, Any]], launch: float) -> dict[str, list[float]]:
    """Each machine launched in the journal's window: seconds from its launch to its Node's Ready, per role
    (``control-plane`` / ``node``), in launch order. EC2's launch is the latency model's (``launch``); the rest is
    the simulator's boot, kubeadm join and CNI as its journal recorded them."""
    running = {e["node"]: e for e in journal if e.get("event") == "instance-running"}
    ready: dict[str, float] = {}
    for e in journal:
        if e.get("event") == "node-ready":
            ready.setdefault(e["node"], e["time"])
    joins: dict[str, list[float]] = {"control-plane": [], "node": []}
    for node, event in sorted(running.items(), key=lambda item: item[1]["time"]):
        if node in ready:
            joins.setdefault(event.get("role_tag", ""), []).append(round(launch + ready[node] - event["time"], 2))
    return joins


def upgrade_inventory(path: Path, version: str) -> Path:
    """The upgrade runs' cluster: the benchmark's self-managed cluster (no pool) with its addons (the CNI its
    Nodes need to be Ready) at ``version``."""
    spec = cluster_spec("demo", 2)
    spec.update(kubernetes_version=version, addons={"enabled": True})
    inventory = {
        "capa_clusters": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"},
            "hosts": {"demo": {"capa_cluster": spec}},
        }
    }
    path.write_text(json.dumps(inventory, indent=1))
    return path


def run_upgrades(moto: Moto, env: dict[str, str], out: Path, runs: int, scale: float) -> dict[str, Any]:
    """Each run: empty moto and simulator, the cluster created at v1.31.2 (not measured against anything), then its
    upgrade to v1.32.0 measured, with the critical path built from the launch-to-Ready times of its new machines."""
    import critical_path

    sim = KubeSim(out, moto)
    results = []
    try:
        for run in range(1, runs + 1):
            print(f"upgrade, run {run}/{runs}", flush=True)
            before, after = out / "inventory-upgrade-from.yml", out / "inventory-upgrade-to.yml"
            upgrade_inventory(before, UPGRADE_FROM)
            upgrade_inventory(after, UPGRADE_TO)
            extra = out / "kubesim-vars.json"
            fresh(moto, out)
            sim.fresh(scale, before, extra)
            moto.set_latency(scale)
            playbook = str(ROOT / "playbooks/site.yml")
            create = measure(moto, env, ["-i", str(before), "-e", f"@{extra}", playbook], out / f"u{run}-create.log")
            checked(create, "create ours")
            since = time.time()
            upgrade = measure(
                moto, env, ["-i", str(after), "-e", f"@{extra}", playbook], out / f"u{run}-upgrade.log", timings=True
            )
            checked(upgrade, "upgrade ours")
            joins = launch_to_ready(sim.journal(since), critical_path.LATENCIES[("instance", "launch")].seconds * scale)
            with critical_path.scaled(scale):
                steps = critical_path.self_managed_upgrade(
                    len(joins["control-plane"]), len(joins["node"]), joins["control-plane"], joins["node"]
                )
                limit, chain = critical_path.critical_path(steps)
                limit_cp, _ = critical_path.critical_path(critical_path.control_plane_steps(steps))
            results.append(
                {
                    "create": create,
                    "upgrade": upgrade,
                    "joins": joins,
                    "critical": round(limit, 2),
                    "critical_control_plane": round(limit_cp, 2),
                    "chain": chain,
                }
            )
    finally:
        sim.stop()
    return {"scale": scale, "from": UPGRADE_FROM, "to": UPGRADE_TO, "runs": results}


EKS_UPGRADE_FROM, EKS_UPGRADE_TO = "1.31", "1.32"


def eks_upgrade_inventory(path: Path, version: str) -> Path:
    """The EKS upgrade runs' cluster: the benchmark's demo-eks (control plane, node group ng-0 of 2 nodes, Fargate
    profile) at ``version``, without its self-managed pool (no node boots on moto: its instances would only be
    replaced, which is no part of the control plane's upgrade)."""
    inventory = yaml.safe_load((BENCH / "inventory-ours.yml").read_text())
    spec = inventory["capa_clusters"]["hosts"]["demo-eks"]["capa_cluster"]
    spec["eks"]["version"] = version
    spec.pop("machine_pools", None)
    inventory["capa_clusters"]["hosts"] = {"demo-eks": {"capa_cluster": spec}}
    path.write_text(json.dumps(inventory, indent=1))
    return path


def run_eks_upgrades(moto: Moto, env: dict[str, str], out: Path, runs: int, scale: float) -> dict[str, Any]:
    """Each run: an empty moto under the latency model at ``scale``, the EKS cluster created at 1.31 (not measured
    against anything), then its upgrade to 1.32 measured: the control plane's version update, then its node group's
    (tools/moto_server.py fix 18 answers both as EKS does, for the model's time)."""
    import critical_path

    results = []
    for run in range(1, runs + 1):
        print(f"eks upgrade, run {run}/{runs}", flush=True)
        before = eks_upgrade_inventory(out / "inventory-eks-upgrade-from.yml", EKS_UPGRADE_FROM)
        after = eks_upgrade_inventory(out / "inventory-eks-upgrade-to.yml", EKS_UPGRADE_TO)
        fresh(moto, out)
        moto.set_latency(scale)
        playbook = str(ROOT / "playbooks/site.yml")
        create = checked(measure(moto, env, ["-i", str(before), playbook], out / f"e{run}-create.log"), "create ours")
        upgrade = measure(moto, env, ["-i", str(after), playbook], out / f"e{run}-upgrade.log", timings=True)
        checked(upgrade, "upgrade ours")
        with critical_path.scaled(scale):
            steps = critical_path.eks_upgrade(nodegroups=1, nodes=2, max_unavailable=1)
            limit, chain = critical_path.critical_path(steps)
            limit_cp, _ = critical_path.critical_path(critical_path.control_plane_steps(steps))
        results.append(
            {
                "create": create,
                "upgrade": upgrade,
                "critical": round(limit, 2),
                "critical_control_plane": round(limit_cp, 2),
                "chain": chain,
            }
        )
    moto.set_latency(0.0)
    return {"scale": scale, "from": EKS_UPGRADE_FROM, "to": EKS_UPGRADE_TO, "runs": results}


def run_limits(moto: Moto, env: dict[str, str], out: Path, runs: int, scale: float) -> dict[str, Any]:
    """Ours alone, against the critical path at a scale where Ansible's fixed seconds weigh less: each run an empty
    moto under the latency model at ``scale``, the phase runs' create and delete of both bench clusters (the peer
    is measured against ours in the phase runs, at their scale: at 1/10 its create alone would take ten minutes)."""
    inv = BENCH / "inventory-ours.yml"
    results = []
    for run in range(1, runs + 1):
        print(f"create and delete at scale {scale:g}, run {run}/{runs}", flush=True)
        fresh(moto, out)
        moto.set_latency(scale)
        one = {}
        for phase in LATENCY_PHASES:
            measured = measure(moto, env, sub(OURS[phase], inv), out / f"l{run}-{phase}.log", timings=True)
            one[phase] = checked(measured, f"{phase} ours at scale {scale:g}")
        results.append(one)
    moto.set_latency(0.0)
    return {"scale": scale, "runs": results}


def fresh(moto: Moto, out: Path) -> None:
    """Empty moto and our local cluster state (PKI, status.json) with it: they describe the same clusters."""
    moto.reset_all()
    shutil.rmtree(out / "capa", ignore_errors=True)


# --- the three sections ---------------------------------------------------------------------------
def run_phases(
    moto: Moto,
    env: dict[str, str],
    out: Path,
    runs: int,
    phases: list[str] | None = None,
    latency_scale: float = 0.0,
) -> list[dict[str, Any]]:
    """Each run: a fresh moto; create, no-op, no-op of the self-managed cluster alone, check, delete (or the chosen
    ``phases``, in that order); ours then the peer's, interleaved. The create and delete of both sides run under the
    latency model at ``latency_scale``, the other phases with it off."""
    inv = BENCH / "inventory-ours.yml"
    results = []
    for run in range(1, runs + 1):
        print(f"phases, run {run}/{runs}", flush=True)
        fresh(moto, out)
        one: dict[str, Any] = {}
        for phase in phases or PHASES:
            # fresh() resets moto, and with it the model to the server's start value: set it for every phase.
            moto.set_latency(latency_scale if phase in LATENCY_PHASES else 0.0)
            ours = measure(moto, env, sub(OURS[phase], inv), out / f"r{run}-{phase}-ours.log", timings=True)
            checked(ours, f"{phase} ours")
            peer = checked(
                measure(moto, env, PEER[phase], out / f"r{run}-{phase}-peer.log", timings=True), f"{phase} peer"
            )
            one[phase] = {"ours": ours, "peer": peer}
        moto.set_latency(0.0)
        results.append(one)
    return results


def chosen_phases(text: str) -> list[str]:
    """``--phases``: a comma-separated subset of PHASES, run in PHASES' order (a no-op needs the create before it,
    a delete something to delete: choose create with them); empty: no phase runs."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PHASES]
    if unknown or (not names and text.strip()):
        raise argparse.ArgumentTypeError(f"phases must be among {', '.join(PHASES)} (got {text!r})")
    return [phase for phase in PHASES if phase in names]


def noop_pairs(
    moto: Moto,
    env: dict[str, str],
    out: Path,
    label: str,
    ours: list[str],
    peer: list[str] | None,
    runs: int,
    forks: int = 5,
) -> list[dict[str, Any]]:
    """`runs` no-op reconciles of what exists, the sides interleaved (ours, peer, ours, peer, ...)."""
    pairs = []
    for run in range(1, runs + 1):
        pair = {
            "ours": checked(measure(moto, env, ours, out / f"{label}-noop{run}-ours.log", forks), f"noop{run} ours")
        }
        if peer is not None:
            pair["peer"] = checked(measure(moto, env, peer, out / f"{label}-noop{run}-peer.log"), f"noop{run} peer")
        pairs.append(pair)
    return pairs


def run_workers(moto: Moto, env: dict[str, str], out: Path, counts: list[int], runs: int) -> list[dict[str, Any]]:
    """One cluster grown to each worker count in turn (2, 20, ...); at each size `runs` no-op reconciles per side.

    The cluster is grown in place rather than built again per size: the network, control plane and bastion are the
    same at every size, and building them once keeps `make bench` short. Growing is each side's own create path.
    """
    results = []
    fresh(moto, out)
    for n in counts:
        print(f"workers {n}", flush=True)
        inv = write_inventory(out / f"inventory-workers-{n}.yml", ["demo"], n)
        # The series' cluster is the self-managed demo without pool or EKS cluster, on both sides.
        peer = PEER["noop"] + ["-e", f"peer_workers={n}", "-e", "peer_pools=false", "-e", "peer_eks=false"]
        checked(measure(moto, env, sub(OURS["create"], inv), out / f"w{n}-create-ours.log"), "create ours")
        checked(measure(moto, env, peer, out / f"w{n}-create-peer.log"), "create peer")
        pairs = noop_pairs(moto, env, out, f"w{n}", sub(OURS["noop"], inv), peer, runs)
        results.append({"workers": n, "runs": pairs})
    return results


def cluster_quotas(clusters: int) -> dict[tuple[str, str], float]:
    """The quotas the preflight checks, raised for ``clusters`` of :func:`cluster_spec`'s (each: a VPC, a NAT gateway
    and an Elastic IP per zone - three -, a classic ELB, 16 vCPUs), as a platform team running that many clusters in
    one account and region has them raised; AWS's defaults (5 VPCs, 5 Elastic IPs, 5 NAT gateways per zone, 20
    classic ELBs) refuse more than a few."""
    return {
        ("vpc", "L-F678F1CE"): max(5.0, clusters),  # VPCs per Region
        ("ec2", "L-0263D0A3"): max(5.0, 3.0 * clusters),  # EC2-VPC Elastic IPs
        ("vpc", "L-FE5A380F"): max(5.0, clusters),  # NAT gateways per Availability Zone
        ("elasticloadbalancing", "L-E9E9831D"): max(20.0, clusters),  # Classic Load Balancers per Region
        ("ec2", "L-1216C47A"): max(1152.0, 16.0 * clusters),  # Running On-Demand Standard instances (vCPUs)
    }


def run_clusters(moto: Moto, env: dict[str, str], out: Path, counts: list[int], runs: int) -> list[dict[str, Any]]:
    """Clusters added to one inventory up to each count (1, 5, ...), `ansible-playbook -f K`; `runs` no-ops each."""
    results = []
    fresh(moto, out)
    moto.raise_quotas(cluster_quotas(max(counts, default=1)))
    for k in counts:
        print(f"clusters {k}", flush=True)
        inv = write_inventory(out / f"inventory-clusters-{k}.yml", [f"bench-{i:02d}" for i in range(k)], 2)
        checked(measure(moto, env, sub(OURS["create"], inv), out / f"c{k}-create-ours.log", forks=k), "create ours")
        pairs = noop_pairs(moto, env, out, f"c{k}", sub(OURS["noop"], inv), None, runs, forks=k)
        results.append({"clusters": k, "runs": pairs})
    return results


# --- environment and machine -------------------------------------------------------------------------
def playbook_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")}
    env.update(
        AWS_ENDPOINT_URL=url,
        **CREDENTIALS,
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build/collections"),
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_NOCOLOR="1",
        PATH=f"{Path(PY).parent}:{os.environ.get('PATH', '')}",
    )
    return env


def _collection(namespace: str, name: str) -> str:
    import ansible_collections

    manifest = Path(ansible_collections.__path__[0]) / namespace / name / "MANIFEST.json"
    return json.loads(manifest.read_text())["collection_info"]["version"]


def machine() -> dict[str, str]:
    from importlib.metadata import version

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "python": platform.python_version(),
        "ansible-core": version("ansible-core"),
        "amazon.aws / community.aws": f"{_collection('amazon', 'aws')} / {_collection('community', 'aws')}",
        "moto": version("moto"),
        "boto3": version("boto3"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of the four phases (default 3)")
    parser.add_argument(
        "--phases", type=chosen_phases, default=PHASES, help=f"phases of each run (default {','.join(PHASES)})"
    )
    parser.add_argument(
        "--latency-scale",
        type=float,
        default=DEFAULT_LATENCY_SCALE,
        help="the AWS latency model's scale for the create and delete phases of both sides (default 0.0333 = 1/30 "
        "of AWS's time; 0: off)",
    )
    parser.add_argument("--workers", default="2,20,100,200", help="worker counts for the machine series ('' skips)")
    parser.add_argument("--clusters", default="1,5,20", help="cluster counts for the parallel series ('' skips)")
    parser.add_argument("--series-runs", type=int, default=3, help="no-op runs per size in both series (default 3)")
    parser.add_argument(
        "--upgrade-runs",
        type=int,
        default=3,
        help="upgrade runs on the workload-cluster simulator (default 3; 0 skips)",
    )
    parser.add_argument(
        "--eks-upgrade-runs",
        type=int,
        default=3,
        help="EKS upgrade runs on moto under the latency model at --upgrade-scale (default 3; 0 skips)",
    )
    parser.add_argument(
        "--upgrade-scale",
        type=float,
        default=DEFAULT_UPGRADE_SCALE,
        help="the time scale of the upgrade runs, for the latency model and the simulator alike (default 0.1)",
    )
    parser.add_argument(
        "--limit-runs",
        type=int,
        default=3,
        help="runs of ours alone, create and delete under the latency model at --upgrade-scale, against the critical "
        "path (default 3; 0 skips)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the saved results of the sections this run does not measure"
    )
    parser.add_argument("--out", default=str(ROOT / ".build/bench"), help="logs and results.json")
    parser.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md and plots from results")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.json"

    if not args.report:
        if args.latency_scale < 0:
            parser.error("--latency-scale must be >= 0")
        command = "python bench/run.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        kept = json.loads(results_file.read_text()) if args.keep and results_file.exists() else None
        results: dict[str, Any] = kept or {"machine": machine(), "command": command.strip()}
        moto = Moto(out)
        try:
            env = playbook_env(moto.url)
            if args.phases:
                # The machine and command at the top describe the phase runs (the upgrade runs carry their own).
                results.update(machine=machine(), command=command.strip())
                phases = [p for p in LATENCY_PHASES if p in args.phases]
                results["latency"] = {"scale": args.latency_scale, "phases": phases}
                results["phases"] = run_phases(moto, env, out, args.runs, args.phases, args.latency_scale)
                results_file.write_text(json.dumps(results, indent=1))
            if args.limit_runs:
                results["limits"] = run_limits(moto, env, out, args.limit_runs, args.upgrade_scale)
                results["limits"].update(command=command.strip(), date=machine()["date"])
                results_file.write_text(json.dumps(results, indent=1))
            if args.upgrade_runs:
                results["upgrade"] = run_upgrades(moto, env, out, args.upgrade_runs, args.upgrade_scale)
                results["upgrade"].update(command=command.strip(), date=machine()["date"])
                results_file.write_text(json.dumps(results, indent=1))
            if args.eks_upgrade_runs:
                results["eks_upgrade"] = run_eks_upgrades(moto, env, out, args.eks_upgrade_runs, args.upgrade_scale)
                results["eks_upgrade"].update(command=command.strip(), date=machine()["date"])
                results_file.write_text(json.dumps(results, indent=1))
            if args.workers:
                counts = [int(n) for n in args.workers.split(",")]
                results["workers"] = run_workers(moto, env, out, counts, args.series_runs)
                results_file.write_text(json.dumps(results, indent=1))
            if args.clusters:
                counts = [int(k) for k in args.clusters.split(",")]
                results["clusters"] = run_clusters(moto, env, out, counts, args.series_runs)
                results_file.write_text(json.dumps(results, indent=1))
        finally:
            moto.stop()

    sys.path.insert(0, str(BENCH))
    import report

    saved = json.loads(results_file.read_text())
    report.write(saved, ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
