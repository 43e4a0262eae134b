"""Write BENCHMARKS.md and its charts (bench/charts/*.png) from bench/run.py's results (see bench/run.py).

Everything here reads the results dictionary only, so ``python bench/run.py --report`` redraws the file and the
charts from a saved ``results.json`` without running anything.
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

import critical_path  # bench/ is the script's directory, on sys.path as report is

PHASES = ["create", "noop", "noop-sm", "check", "delete"]
PHASE_NAMES = {
    "create": "create",
    "noop": "no-op reconcile",
    "noop-sm": "no-op, self-managed demo alone",
    "check": "check mode",
    "delete": "delete",
}
METRICS = [("wall", "wall s"), ("cpu", "CPU s"), ("maxrss_mb", "peak RSS MB"), ("requests", "requests")]
METRICS += [("mutating", "mutating"), ("changed", "changed tasks")]
SIDES = ("ours", "peer")
CHARTS = "bench/charts"
# bench/inventory-ours.yml's hosts and the graph of bench/critical_path.py each one is measured against.
CLUSTERS = {"demo": "self-managed", "demo-eks": "eks"}
# Steps of the graphs the bench's endpoint does not make take time: no node boots on moto (kubeadm init and join,
# an EKS node's join), and the bench clusters' API load balancer is a classic ELB, which the latency model leaves
# settled at once (it times ELBv2 load balancers).
NOT_MODELLED = ("kubeadm", "eks_node", "load_balancer")


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend: files only, no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _med(values: list[float]) -> float:
    return round(median(values), 2)


def _ratio(ours: float, peer: float) -> float | None:
    return round(ours / peer, 2) if peer else None


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return str(value)


def series_value(row: dict[str, Any], side: str, key: str) -> float:
    """Median of one metric over a series point's no-op runs."""
    return _med([run[side][key] for run in row["runs"]])


def series_operations(row: dict[str, Any], side: str) -> dict[str, int]:
    return row["runs"][0][side]["operations"]


def series_rc(row: dict[str, Any], side: str) -> int:
    return max(run[side]["rc"] for run in row["runs"])


def series_ok(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The series points whose runs all succeeded on every side measured: the only ones charted and judged."""
    return [r for r in rows if all(series_rc(r, side) == 0 for side in SIDES if side in r["runs"][0])]


def _point(row: dict[str, Any], key: str) -> str:
    return str(row[key]) + ("" if series_ok([row]) else " (failed: not charted or judged)")


def series_runs(rows: list[dict[str, Any]]) -> int:
    return min(len(row["runs"]) for row in rows)


def measured_phases(runs: list[dict[str, Any]]) -> list[str]:
    """The phases every run measured (``bench/run.py --phases`` can choose fewer), in PHASES' order."""
    return [phase for phase in PHASES if runs and all(phase in r for r in runs)]


def phase_rows(runs: list[dict[str, Any]]) -> list[str]:
    rows = ["| phase | metric | ours | peer | ours/peer |", "|---|---|---:|---:|---:|"]
    for phase in measured_phases(runs):
        done = [r for r in runs if phase in r]
        for key, label in METRICS:
            ours = _med([r[phase]["ours"][key] for r in done])
            peer = _med([r[phase]["peer"][key] for r in done])
            ratios = [_ratio(r[phase]["ours"][key], r[phase]["peer"][key]) for r in done]
            ratios = [x for x in ratios if x is not None]
            ratio = _med(ratios) if ratios else None
            rows.append(f"| {PHASE_NAMES[phase]} | {label} | {_fmt(ours)} | {_fmt(peer)} | {_fmt(ratio)} |")
    return rows


def operation_rows(run: dict[str, Any], phase: str) -> list[str]:
    ours, peer = run[phase]["ours"]["operations"], run[phase]["peer"]["operations"]
    rows = ["| operation | ours | peer |", "|---|---:|---:|"]
    for op in sorted(set(ours) | set(peer)):
        rows.append(f"| {op} | {ours.get(op, 0)} | {peer.get(op, 0)} |")
    rows.append(f"| **total** | **{sum(ours.values())}** | **{sum(peer.values())}** |")
    return rows


def failures(results: dict[str, Any]) -> list[str]:
    found = []
    for i, run in enumerate(results.get("phases", []), 1):
        for phase in [p for p in PHASES if p in run]:
            for side in ("ours", "peer"):
                if run[phase][side]["rc"] != 0:
                    found.append(f"run {i} {phase} {side}: rc={run[phase][side]['rc']} ({run[phase][side]['log']})")
    for row in results.get("workers", []):
        for side in ("ours", "peer"):
            if series_rc(row, side) != 0:
                found.append(f"{row['workers']} workers no-op {side}: rc={series_rc(row, side)}")
    for row in results.get("clusters", []):
        if series_rc(row, "ours") != 0:
            found.append(f"{row['clusters']} clusters no-op: rc={series_rc(row, 'ours')}")
    return found


def plot_workers(rows: list[dict[str, Any]], path: Path) -> None:
    plt = _pyplot()

    xs = [r["workers"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for side, style in (("ours", "o-"), ("peer", "s--")):
        left.plot(xs, [series_value(r, side, "requests") for r in rows], style, label=side)
        right.plot(xs, [series_value(r, side, "cpu") for r in rows], style, label=f"{side} CPU")
        right.plot(xs, [series_value(r, side, "wall") for r in rows], style, alpha=0.35, label=f"{side} wall")
    left.set(title="no-op reconcile: AWS requests", xlabel="worker machines", ylabel="requests")
    right.set(title="no-op reconcile: CPU and wall seconds", xlabel="worker machines", ylabel="seconds")
    for ax in (left, right):
        ax.legend()
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_clusters(rows: list[dict[str, Any]], path: Path) -> None:
    plt = _pyplot()

    xs = [r["clusters"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(xs, [series_value(r, "ours", "cpu") / r["clusters"] for r in rows], "o-", label="CPU s per cluster")
    left.plot(xs, [series_value(r, "ours", "wall") / r["clusters"] for r in rows], "s--", label="wall s per cluster")
    left.set(title="no-op reconcile, ansible-playbook -f N", xlabel="clusters", ylabel="seconds per cluster")
    right.plot(
        xs, [series_value(r, "ours", "requests") / r["clusters"] for r in rows], "o-", label="requests per cluster"
    )
    right.set(title="no-op reconcile: AWS requests per cluster", xlabel="clusters", ylabel="requests")
    for ax in (left, right):
        ax.legend()
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def series_ratio(row: dict[str, Any], key: str) -> float:
    """Ours/peer of one metric, computed within each interleaved pair of no-op runs, then the median taken."""
    ratios = [_ratio(run["ours"][key], run["peer"][key]) for run in row["runs"]]
    return _med([x for x in ratios if x is not None])


def phase_targets(runs: list[dict[str, Any]], phase: str, where: str) -> list[str]:
    req = _med([_ratio(r[phase]["ours"]["requests"], r[phase]["peer"]["requests"]) for r in runs])
    mut = max(r[phase]["ours"]["mutating"] for r in runs)
    wall = _med([_ratio(r[phase]["ours"]["wall"], r[phase]["peer"]["wall"]) for r in runs])
    where = f"{where}, median of {len(runs)} runs"
    return [
        f"| no-op: requests ≤ 1/5 of the peer's ({where}) | ours/peer = {req} | {_yes(req <= 0.2)} |",
        f"| no-op: no mutating request ({where}) | at most {mut} in {len(runs)} runs | {_yes(mut == 0)} |",
        f"| no-op: wall ≤ 1/2 of the peer's ({where}) | ours/peer = {wall} | {_yes(wall <= 0.5)} |",
    ]


def worker_targets(workers: list[dict[str, Any]]) -> list[str]:
    req_ratios = [series_ratio(r, "requests") for r in workers]
    wall_ratios = [series_ratio(r, "wall") for r in workers]
    sizes = "/".join(str(r["workers"]) for r in workers)
    where = f"self-managed demo cluster with {sizes} workers, median of {series_runs(workers)} runs each"
    mutating = max(series_value(r, "ours", "mutating") for r in workers)
    rows = [
        f"| no-op: requests ≤ 1/5 of the peer's ({where}) | ours/peer = {', '.join(map(str, req_ratios))} | "
        f"{_yes(max(req_ratios) <= 0.2)} |",
        f"| no-op: no mutating request ({where}) | at most {_fmt(mutating)} | {_yes(mutating == 0)} |",
        f"| no-op: wall ≤ 1/2 of the peer's ({where}) | ours/peer = {', '.join(map(str, wall_ratios))} | "
        f"{_yes(max(wall_ratios) <= 0.5)} |",
    ]
    counts = {r["workers"]: _fmt(series_value(r, "ours", "requests")) for r in workers}
    text = ", ".join(f"{n}: {c}" for n, c in counts.items())
    growth = page_growth(series_operations(workers[0], "ours"), series_operations(workers[-1], "ours"))
    only_pages = all(op in PAGINATED for op in growth)
    if growth:
        extra = ", ".join(f"+{n} {op}" for op, n in sorted(growth.items()))
        text += f" (from {workers[0]['workers']} to {workers[-1]['workers']}: {extra})"
    peer = ", ".join(_fmt(series_value(r, "peer", "requests")) for r in workers)
    text += f"; the peer's: {peer}"
    verdict = _yes(only_pages) + (" (pagination aside, as the target says)" if growth and only_pages else "")
    if 200 not in counts:
        verdict = f"not measured at 200; {verdict}"
    rows.append(f"| no-op requests equal for 2 and 200 workers (pagination aside) | {text} | {verdict} |")
    # Issue 24's goals for the HA self-managed cluster (this series' cluster): at most 16 requests - at the smallest
    # size, where no read has a second page - and a wall time at most 0.2 of the peer's.
    smallest = workers[0]
    fewest = series_value(smallest, "ours", "requests")
    rows.append(
        f"| no-op of the HA self-managed cluster: ≤ 16 AWS requests ({smallest['workers']} workers, median of "
        f"{series_runs(workers)} runs) | {_fmt(fewest)} | {_yes(fewest <= 16)} |"
    )
    rows.append(
        f"| no-op of the HA self-managed cluster: wall ≤ 0.2 of the peer's ({where}) | ours/peer = "
        f"{', '.join(map(str, wall_ratios))} | {_yes(max(wall_ratios) <= 0.2)} |"
    )
    return rows


def cluster_targets(clusters: list[dict[str, Any]]) -> list[str]:
    one = series_value(clusters[0], "ours", "cpu") / clusters[0]["clusters"]
    last = clusters[-1]
    per = series_value(last, "ours", "cpu") / last["clusters"]
    factor = round(per / one, 2)
    # Performance issue's goal: many clusters in one run share Ansible's fixed costs (0.7x of one cluster alone).
    return [
        f"| CPU per cluster with {last['clusters']} in parallel ≤ 0.7× of one (median of {series_runs(clusters)} "
        f"runs each) | {per:.2f} s vs {one:.2f} s = {factor}× | {_yes(factor <= 0.7)} |"
    ]


def targets(results: dict[str, Any]) -> list[str]:
    rows = ["| target | measured | met |", "|---|---|---|"]
    runs = results.get("phases", [])
    if "noop-sm" in measured_phases(runs):
        rows += phase_targets(runs, "noop-sm", "phase runs: the self-managed demo cluster with its pool mp-0")
    workers = series_ok(results.get("workers", []))
    if workers:
        rows += worker_targets(workers)
    if "create" in measured_phases(runs):
        create = [(r["create"]["ours"]["requests"], r["create"]["peer"]["requests"]) for r in runs]
        pairs = ", ".join(f"{o} vs {p}" for o, p in create)
        rows.append(
            f"| create: fewer requests than the peer (phase runs) | {pairs} | {_yes(all(o < p for o, p in create))} |"
        )
    clusters = series_ok(results.get("clusters", []))
    if len(clusters) > 1:
        rows += cluster_targets(clusters)
    rows += latency_targets(results)
    rows += limit_targets(results)
    rows += upgrade_targets(results)
    rows += eks_upgrade_targets(results)
    if "noop" in measured_phases(runs):
        # Beyond the target's scope (the self-managed cluster): both demo clusters, EKS included.
        rows += [
            "",
            "Beyond the targets' scope, the whole phase no-op (demo with mp-0 and the EKS cluster demo-eks):",
            "",
        ]
        rows += ["| measure | measured | within the self-managed target |", "|---|---|---|"]
        rows += phase_targets(runs, "noop", "phase runs: demo with mp-0 + demo-eks")
    return rows


# Operations whose answers come in pages: more machines can mean more pages of the same logical request
# (GetResources: 100 resources per page, AWS's maximum; DescribeInstances: 1000; DescribeInstanceStatus: 100 ids).
PAGINATED = {"tagging:GetResources", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus"}


def page_growth(small: dict[str, int], large: dict[str, int]) -> dict[str, int]:
    """Operations sent more often at the larger size, and by how much."""
    return {op: large[op] - small.get(op, 0) for op in large if large[op] > small.get(op, 0)}


# --- under the latency model: ours, the peer and the critical path -------------------------------------------------
def host_finish(tasks: list[list[Any]], host: str) -> float | None:
    """When a host's last task ended, in seconds from the playbook's start (its cluster's time in the run)."""
    ends = [task[3] + task[4] for task in tasks if task[0] == host]
    return round(max(ends), 2) if ends else None


def phase_limits(scale: float) -> dict[str, dict[str, float]]:
    """Each latency phase's critical path at ``scale``: per cluster and for the phase's run of both clusters (the
    clusters are independent - ``site.yml`` runs them side by side - so the longer of the two), on AWS (the whole
    graph) and on the bench's endpoint (the graph with NOT_MODELLED steps at 0 s)."""
    aws, endpoint = critical_path.limits(scale), critical_path.limits(scale, zero=NOT_MODELLED)
    out: dict[str, dict[str, float]] = {}
    for phase in ("create", "upgrade", "delete"):
        for host, kind in CLUSTERS.items():
            out[f"{phase} {host}"] = {"aws": aws[(kind, phase)], "endpoint": endpoint[(kind, phase)]}
        out[phase] = {
            "aws": max(aws[(kind, phase)] for kind in CLUSTERS.values()),
            "endpoint": max(endpoint[(kind, phase)] for kind in CLUSTERS.values()),
        }
    return out


def latency_table(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of the latency section: per latency phase, the run of both clusters (ours and the peer, medians of
    the runs, ours/peer the median of the within-run ratios), then each of our clusters alone (its last task's end);
    each with the critical path at the run's scale and ours over it."""
    latency = results.get("latency") or {}
    scale, runs = latency.get("scale", 0.0), results.get("phases", [])
    limits = phase_limits(scale)
    rows = []
    for phase in [p for p in latency.get("phases", []) if p in measured_phases(runs)]:
        ours = _med([r[phase]["ours"]["wall"] for r in runs])
        peer = _med([r[phase]["peer"]["wall"] for r in runs])
        within = [x for r in runs if (x := _ratio(r[phase]["ours"]["wall"], r[phase]["peer"]["wall"])) is not None]
        entries = [(phase, "both clusters", ours, peer, _med(within) if within else None, limits[phase])]
        for host in CLUSTERS:
            finishes = host_finishes([r[phase]["ours"] for r in runs], host)
            if finishes:
                entries.append((phase, host, _med(finishes), None, None, limits[f"{phase} {host}"]))
        for name, what, mine, theirs, ours_peer, limit in entries:
            rows.append(
                {
                    "phase": name,
                    "what": what,
                    "ours": mine,
                    "peer": theirs,
                    **against(mine, limit),
                    "ours/peer": ours_peer,
                    "peer/critical": _ratio(theirs, limit["aws"]) if theirs is not None else None,
                }
            )
    return rows


def host_finishes(sides: list[dict[str, Any]], host: str) -> list[float]:
    """When ``host``'s last task ended in each measured run of one side (runs where it ran no task left out)."""
    return [f for side in sides if (f := host_finish(side.get("tasks", []), host)) is not None]


def against(ours: float, limit: dict[str, float]) -> dict[str, Any]:
    """The critical path (on AWS, and with the steps the endpoint does not time at 0 s) and ours over each."""
    return {
        "critical": round(limit["aws"], 2),
        "endpoint": round(limit["endpoint"], 2),
        "ours/critical": _ratio(ours, limit["aws"]),
        "ours/endpoint": _ratio(ours, limit["endpoint"]),
    }


def median_run(runs: list[dict[str, Any]], phase: str, side: str | None = "ours") -> dict[str, Any]:
    """The run whose ``phase`` (of ``side``; a limit run has one side, None) took the median wall time (the upper
    one of an even count)."""
    return sorted(runs, key=lambda r: (r[phase][side] if side else r[phase])["wall"])[len(runs) // 2]


def _role(name: str) -> str:
    return name.removeprefix("clusterapi.aws.") or "(play)"


def waterfall(tasks: list[list[Any]]) -> list[dict[str, Any]]:
    """Per host and role, in order of start: when its first task started and its last ended (seconds from the
    playbook's start), the seconds its tasks ran, how many, and the longest of them."""
    groups: dict[tuple[str, str], list[list[Any]]] = {}
    for task in tasks:
        groups.setdefault((task[0], _role(task[1])), []).append(task)
    rows = []
    for (host, role), own in groups.items():
        longest = max(own, key=lambda task: task[4])
        rows.append(
            {
                "host": host,
                "role": role,
                "start": round(min(t[3] for t in own), 2),
                "end": round(max(t[3] + t[4] for t in own), 2),
                "busy": round(sum(t[4] for t in own), 2),
                "tasks": len(own),
                "longest": longest[2].split(" : ", 1)[-1],
                "longest_s": longest[4],
            }
        )
    return sorted(rows, key=lambda row: (row["start"], row["host"]))


def plot_phases(rows: list[dict[str, Any]], path: Path) -> None:
    """Grouped bars: for each latency phase (both clusters, then each of ours alone), ours, the peer, the critical
    path on AWS's graph and the part of it the endpoint models."""
    plt = _pyplot()
    labels = [f"{row['phase']}\n{row['what']}" for row in rows]
    bars = [
        ("ours", "ours", "#1f77b4", None),
        ("peer", "peer (amazon.aws)", "#ff7f0e", None),
        ("critical", "critical path", "#2ca02c", None),
        ("endpoint", "critical path, endpoint-modelled steps", "#98df8a", "//"),
    ]
    width = 0.2
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(rows) + 2), 4.5))
    for i, (key, label, color, hatch) in enumerate(bars):
        xs = [n + (i - 1.5) * width for n in range(len(rows))]
        values = [row[key] if row[key] is not None else 0 for row in rows]
        drawn = ax.bar(xs, values, width, label=label, color=color, hatch=hatch, edgecolor="white")
        ax.bar_label(drawn, labels=[_fmt(row[key]) if row[key] is not None else "" for row in rows], fontsize=7)
    ax.set_xticks(range(len(rows)), labels)
    ax.set(ylabel="wall seconds", title="Under the latency model: ours, the peer and the critical path")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_waterfall(tasks: list[list[Any]], limits: dict[str, float], path: Path, title: str) -> None:
    """Every task of one run as a bar from its start to its end, one row per host and role (the waterfall), with
    each cluster's critical path as a dashed line."""
    plt = _pyplot()
    rows = waterfall(tasks)
    colors = {host: f"C{n}" for n, host in enumerate(dict.fromkeys(row["host"] for row in rows))}
    fig, ax = plt.subplots(figsize=(10, max(3, 0.28 * len(rows) + 1.2)))
    for y, row in enumerate(rows):
        spans = [(t[3], max(t[4], 0.05)) for t in tasks if t[0] == row["host"] and _role(t[1]) == row["role"]]
        ax.broken_barh(spans, (y - 0.35, 0.7), color=colors[row["host"]])
    for n, (host, limit) in enumerate(limits.items()):
        ax.axvline(limit, color=colors.get(host, f"C{n}"), linestyle="--", label=f"{host}: critical path {limit:.1f} s")
    ax.set_yticks(range(len(rows)), [f"{row['host']}: {row['role']}" for row in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel="seconds from the start of ansible-playbook", title=title)
    ax.grid(axis="x", alpha=0.3)
    if limits:
        ax.legend(fontsize=8, loc="upper center")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def latency_section(results: dict[str, Any], charts: Path) -> list[str]:
    """BENCHMARKS.md's section of the phases run under the latency model, with its charts written to ``charts``."""
    latency = results.get("latency") or {}
    scale = latency.get("scale", 0.0)
    runs = results.get("phases", [])
    timed = [p for p in latency.get("phases", []) if p in measured_phases(runs)]
    if not scale or not timed:
        return [
            "## Under the AWS latency model",
            "",
            "Not measured: these results were made with the latency model off (`--latency-scale 0`) or without a "
            "create or delete phase.",
            "",
        ]
    rows = latency_table(results)
    plot_phases(rows, charts / "phases.png")
    out = [
        "## Under the AWS latency model: ours, the peer and the critical path",
        "",
        f"The create and delete phases of both sides ran with the endpoint's latency model on at scale {scale:g} "
        f"(1/{1 / scale:.0f} of AWS's time; the table is in the next section), in the same runs as the table above, "
        f"{len(runs)} run{'s' if len(runs) != 1 else ''}; the other phases ran with it off. The critical path is "
        "`bench/critical_path.py`'s at the same scale: for a phase that builds or removes both clusters in one run the "
        "longer of the two clusters' (site.yml runs them side by side); for one cluster its own graph. "
        "*Critical path* is the whole graph, the bar on AWS; *endpoint-modelled* is the same graph with the steps this "
        "endpoint does not make take time at 0 s (no node boots on moto: kubeadm init and join, an EKS node's join; "
        "the clusters' classic ELB, which the model leaves settled at once): nothing run here can be slower than the "
        "second for a reason of AWS's. A cluster's own time is its host's last task's end, from the start of the "
        "`ansible-playbook` process (its start-up included); the peer's playbook is one host, so only its whole "
        "phase is timed. There is no upgrade phase: the peer has no control-plane upgrade to set ours against (the "
        "critical paths of the upgrades are in the next section).",
        "",
        "| phase | what | ours s | peer s | critical path s | endpoint-modelled s | ours / critical path | "
        "ours / endpoint-modelled | ours / peer | peer / critical path |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = ("ours", "peer", "critical", "endpoint", "ours/critical", "ours/endpoint", "ours/peer", "peer/critical")
    for row in rows:
        out.append(f"| {row['phase']} | {row['what']} | " + " | ".join(_fmt(row[k]) for k in keys) + " |")
    out += ["", f"![phase times under the latency model]({CHARTS}/phases.png)", ""]
    limits = phase_limits(scale)
    for phase in timed:
        run = median_run(runs, phase)
        tasks = run[phase]["ours"].get("tasks", [])
        if not tasks:
            continue
        number = runs.index(run) + 1
        per_host = {host: limits[f"{phase} {host}"]["aws"] for host in CLUSTERS if host_finish(tasks, host)}
        plot_waterfall(
            tasks, per_host, charts / f"waterfall-{phase}.png", f"ours, {phase} under the latency model (run {number})"
        )
        out += [
            f"### Where our {phase} spends its time (run {number}, the median run)",
            "",
            "Each role of each cluster: when its first task started and its last ended, in seconds from the start of "
            "`ansible-playbook`; the seconds its tasks ran (tasks of one host run one after the other; the two "
            "clusters run side by side), how many tasks, and the longest one. What lies beyond a cluster's critical "
            "path is the sum of its rows' task seconds plus Ansible's own time between tasks.",
            "",
            "| cluster | role | start s | end s | task seconds | tasks | longest task | its s |",
            "|---|---|---:|---:|---:|---:|---|---:|",
        ]
        for row in waterfall(tasks):
            cells = (row["start"], row["end"], row["busy"], row["tasks"], row["longest"], row["longest_s"])
            out.append(f"| {row['host']} | {row['role']} | " + " | ".join(_fmt(c) for c in cells) + " |")
        for host, limit in per_host.items():
            first = min(t[3] for t in tasks if t[0] == host)
            busy = sum(t[4] for t in tasks if t[0] == host)
            end = host_finish(tasks, host) or 0.0
            out.append("")
            between = max(end - first - busy, 0.0)
            out.append(
                f"{host}: done at {end:.1f} s against a critical path of {limit:.1f} s; its first task started at "
                f"{first:.1f} s (Ansible's start-up), its tasks ran {busy:.1f} s, and {between:.1f} s went between "
                "them (Ansible's scheduling and the other cluster's tasks sharing the controller)."
            )
        out += ["", f"![waterfall of our {phase}]({CHARTS}/waterfall-{phase}.png)", ""]
        out += chain_trace(run[phase]["ours"], phase, scale)
    return out


def chain_trace(side: dict[str, Any], phase: str, scale: float) -> list[str]:
    """Each cluster's critical chain as the run went through it (critical_path.as_run, from the run's journal of
    requests): when each step was asked, its model time, and what was lost after it - where the gap to the critical
    path goes, step by step. Nothing for a run without a journal or a chain a journal cannot tell (a launch)."""
    journal, tasks = side.get("journal"), side.get("tasks", [])
    if not journal:
        return []
    rows, sums = [], []
    for host, kind in CLUSTERS.items():
        end = host_finish(tasks, host)
        steps = critical_path.chain(kind, phase, scale, zero=NOT_MODELLED)
        traced = critical_path.as_run(steps, journal, end) if end is not None else None
        if traced is None:
            continue
        before, chain = traced
        for step in chain:
            settled = step.asked + step.seconds
            rows.append(
                f"| {host} | {step.step} | {_fmt(step.asked)} | {_fmt(step.seconds)} | {_fmt(round(settled, 2))} | "
                f"{_fmt(step.lost)} |"
            )
        modelled = round(sum(step.seconds for step in chain), 2)
        lost = round(sum(step.lost for step in chain), 2)
        sums.append(
            f"{host}: {before:.2f} s before the chain's first request, {modelled:g} s of the model's time on it, "
            f"{lost:.2f} s lost after its steps = done at {end:.2f} s."
        )
    if not rows:
        return []
    return [
        "Each cluster's critical chain as this run went through it, from the endpoint's journal of its requests: a "
        "step is asked by its request (the first of its operation after the step before it was asked; a launch "
        "cannot be told from its request, so a chain with one is not traced), settles after the model's time, and "
        "*lost* is the time from then to the next step's request (or the cluster's last task): a poll seeing the "
        "settle late plus the run's own steps between (negative: the endpoint let the next step start before the "
        "model's time was up). Before the first step: Ansible's start-up, the compile, the preflight and whatever the "
        "run asks first.",
        "",
        "| cluster | step | asked at s | model s | settled at s | lost after it s |",
        "|---|---|---:|---:|---:|---:|",
        *rows,
        "",
        *sums,
        "",
    ]


# --- the upgrade runs: ours on the simulator against the critical path ------------------------------------------------
UPGRADE_GOAL = 1.3  # the bound: a control-plane version upgrade within 1.3 x its critical path
CONTROL_PLANE_TASK = "Reconcile the control-plane machines"
WORKERS_TASK = "Reconcile the machine deployments"


def task_span(tasks: list[list[Any]], name: str) -> tuple[float, float] | None:
    """When the (last) task whose name holds ``name`` started and ended, in seconds from the playbook's start."""
    spans = [(t[3], t[3] + t[4]) for t in tasks if name in t[2]]
    return spans[-1] if spans else None


def upgrade_rows(upgrade: dict[str, Any], control_plane_task: str = CONTROL_PLANE_TASK) -> list[dict[str, Any]]:
    """Per upgrade run: ours (the whole playbook, and until its control-plane task ended) and the critical path of
    both, with the ratios."""
    rows = []
    for number, run in enumerate(upgrade.get("runs", []), 1):
        ours = run["upgrade"]
        control_plane = task_span(ours.get("tasks", []), control_plane_task)
        cp_done = control_plane[1] if control_plane else None
        rows.append(
            {
                "run": number,
                "rc": ours["rc"],
                "ours": ours["wall"],
                "critical": run["critical"],
                "ours/critical": _ratio(ours["wall"], run["critical"]),
                "ours cp": round(cp_done, 2) if cp_done is not None else None,
                "critical cp": run["critical_control_plane"],
                "ours/critical cp": _ratio(cp_done, run["critical_control_plane"]) if cp_done else None,
                "requests": ours["requests"],
                "mutating": ours["mutating"],
                "changed": ours["changed"],
                "joins": run.get("joins"),
            }
        )
    return rows


def upgrade_median(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("ours", "critical", "ours/critical", "ours cp", "critical cp", "ours/critical cp")
    ok = [r for r in rows if r["rc"] == 0]
    values = {k: [r[k] for r in ok if r[k] is not None] for k in keys}
    return {k: _med(v) if v else None for k, v in values.items()}


def not_measured(title: str, option: str) -> list[str]:
    """A section this run did not measure (``option`` skipped it): its title and that, no figures."""
    return [title, "", f"Not measured in this run (`{option}`): no figures here.", ""]


def upgrade_section(results: dict[str, Any]) -> list[str]:
    upgrade = results.get("upgrade") or {}
    rows = upgrade_rows(upgrade)
    if not rows:
        return not_measured("## Upgrade: ours against the critical path", "--upgrade-runs 0")
    scale = upgrade["scale"]
    median = upgrade_median(rows)
    out = [
        f"## Upgrade {upgrade['from']} -> {upgrade['to']}: ours against the critical path (simulator)",
        "",
        f"Ours alone (the peer playbook has no Kubernetes upgrade), {len(rows)} run{'s' if len(rows) != 1 else ''} "
        f"({upgrade.get('date', '')}; `{upgrade.get('command', '')}`). Each run starts from an empty moto and "
        "workload-cluster simulator (tools/kubesim: every instance boots from its user data, runs kubeadm join and a "
        f"real etcd member), both at scale {scale:g}: the self-managed cluster (3 control-plane machines, md-0 with 2 "
        "workers, addons) is created, then `site.yml` runs with the new `kubernetes_version` - the control plane one "
        "machine at a time, then the workers (max_surge 1). The critical path is `bench/critical_path.py`'s upgrade "
        "graph with each new machine's launch-to-Ready seconds as the simulator took them (its journal: the model's "
        "EC2 launch, then boot, the node's AWS CLI fetching its user data - not time-scaled -, kubeadm join, etcd, "
        "CNI) and the model's instance termination; drains count 0 s. So the ratio is what the reconciler adds: "
        "polls, drains, etcd member moves, Ansible's start-up and the read-back.",
        "",
        "| run | ours s | critical path s | ours / critical path | control plane done s | its critical path s | "
        "ours / critical path (control plane) | requests | mutating | changed | launch-to-Ready s (control plane; "
        "workers) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        joins = "; ".join(", ".join(_fmt(j) for j in r["joins"][role]) for role in ("control-plane", "node"))
        cells = [r[k] for k in ("ours", "critical", "ours/critical", "ours cp", "critical cp", "ours/critical cp")]
        cells += [r["requests"], r["mutating"], r["changed"]]
        status = "" if r["rc"] == 0 else f" (rc {r['rc']})"
        out.append(f"| {r['run']}{status} | " + " | ".join(_fmt(c) for c in cells) + f" | {joins} |")
    cells = [median[k] for k in ("ours", "critical", "ours/critical", "ours cp", "critical cp", "ours/critical cp")]
    out.append("| median | " + " | ".join(_fmt(c) for c in cells) + " | | | | |")
    out.append("")
    return out


# --- the EKS upgrade runs: ours on moto (fix 18) against the critical path -------------------------------------------
EKS_CONTROL_PLANE_TASK = "Reconcile or delete the EKS control plane of "


def eks_upgrade_rows(upgrade: dict[str, Any]) -> list[dict[str, Any]]:
    """Per EKS upgrade run: ours (the whole playbook, and until its control-plane task ended) against the critical
    path of both (the control plane's update; then the node group's)."""
    return upgrade_rows(upgrade, EKS_CONTROL_PLANE_TASK)


def eks_upgrade_section(results: dict[str, Any]) -> list[str]:
    upgrade = results.get("eks_upgrade") or {}
    rows = eks_upgrade_rows(upgrade)
    if not rows:
        return not_measured("## EKS upgrade: ours against the critical path", "--eks-upgrade-runs 0")
    median = upgrade_median(rows)
    out = [
        f"## EKS upgrade {upgrade['from']} -> {upgrade['to']}: ours against the critical path (moto, latency model)",
        "",
        f"Ours alone, {len(rows)} run{'s' if len(rows) != 1 else ''} ({upgrade.get('date', '')}; "
        f"`{upgrade.get('command', '')}`). Each run starts from an empty moto under the latency model at scale "
        f"{upgrade['scale']:g}: the demo-eks cluster (control plane, node group ng-0 of 2 nodes, Fargate profile; "
        "without its self-managed pool) is created, then `site.yml` runs with the new `eks.version`: the control "
        "plane's `UpdateClusterVersion`, awaited by its update id, then the node group's `UpdateNodegroupVersion` "
        "(tools/moto_server.py fix 18 answers both as EKS does, `UPDATING` for the model's time: 25 min for the "
        "control plane, 5 min per node replaced). The critical path is `bench/critical_path.py`'s `eks_upgrade`: the "
        "control plane's update, then the node group's. No node boots on moto: the node group's Nodes are not read.",
        "",
        "| run | ours s | critical path s | ours / critical path | control plane done s | its critical path s | "
        "ours / critical path (control plane) | requests | mutating | changed |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = ("ours", "critical", "ours/critical", "ours cp", "critical cp", "ours/critical cp")
    for r in rows:
        cells = [r[k] for k in keys] + [r["requests"], r["mutating"], r["changed"]]
        status = "" if r["rc"] == 0 else f" (rc {r['rc']})"
        out.append(f"| {r['run']}{status} | " + " | ".join(_fmt(c) for c in cells) + " |")
    out.append("| median | " + " | ".join(_fmt(median[k]) for k in keys) + " | | | |")
    out.append("")
    return out


def eks_upgrade_targets(results: dict[str, Any]) -> list[str]:
    labels = ("EKS control-plane version upgrade", "EKS version upgrade (control plane, then node group)")
    return _upgrade_targets(
        eks_upgrade_rows(results.get("eks_upgrade") or {}), results.get("eks_upgrade"), "moto", labels
    )


def upgrade_targets(results: dict[str, Any]) -> list[str]:
    labels = ("control-plane version upgrade", "whole-cluster version upgrade (control plane, then workers)")
    return _upgrade_targets(upgrade_rows(results.get("upgrade") or {}), results.get("upgrade"), "simulator", labels)


def _upgrade_targets(
    rows: list[dict[str, Any]], upgrade: dict[str, Any] | None, endpoint: str, labels: tuple[str, str]
) -> list[str]:
    """The two target rows of an upgrade section: the control plane, then the whole upgrade, each within
    UPGRADE_GOAL x its critical path (medians of the runs that succeeded)."""
    if not rows or not upgrade:
        return []
    median = upgrade_median(rows)
    where = f"{endpoint}, scale {upgrade['scale']:g}, median of {len(rows)}"
    out = []
    for label, (key, ours, limit) in zip(
        labels, (("ours/critical cp", "ours cp", "critical cp"), ("ours/critical", "ours", "critical")), strict=True
    ):
        ratio = median[key]
        met = _yes(ratio is not None and ratio <= UPGRADE_GOAL)
        out.append(
            f"| {label} ≤ {UPGRADE_GOAL} × critical path ({where}) | {_fmt(median[ours])} s / "
            f"{_fmt(median[limit])} s = {_fmt(ratio)} | {met} |"
        )
    return out


# The goals under the latency model: (phase, bound over the critical path, bound over the peer).
LATENCY_GOALS = {"create": (1.2, 0.5), "delete": (1.2, None)}


def latency_targets(results: dict[str, Any]) -> list[str]:
    """Target rows for the phases run under the latency model: ours / critical path for the run of both clusters and
    for each cluster, ours / peer for the run. Where the endpoint does not time part of the path (node boots), the
    verdict says so: there ours can come in under the critical path without being faster than AWS allows."""
    scale = (results.get("latency") or {}).get("scale", 0.0)
    if not scale:
        return []
    rows = []
    runs = len(results.get("phases", []))
    where = f"scale {scale:g}, median of {runs} run{'s' if runs != 1 else ''}"
    for row in latency_table(results):
        peer_bound = LATENCY_GOALS.get(row["phase"], (None, None))[1]
        rows += critical_target(row, where)
        if peer_bound is not None and row["ours/peer"] is not None:
            rows.append(
                f"| {row['phase']} ≤ {peer_bound} × the peer's wall ({row['what']}, {where}) | "
                f"ours/peer = {_fmt(row['ours/peer'])} | {_yes(row['ours/peer'] <= peer_bound)} |"
            )
    return rows


def critical_target(row: dict[str, Any], where: str) -> list[str]:
    """The target row of ours / critical path for a row of :func:`latency_table` or :func:`limit_rows`. Where the
    endpoint does not time part of the path (node boots), the verdict says so."""
    bound = LATENCY_GOALS.get(row["phase"], (None, None))[0]
    if bound is None or row["ours/critical"] is None:
        return []
    verdict = _yes(row["ours/critical"] <= bound)
    if row["endpoint"] < row["critical"]:
        verdict += f" (but ours / endpoint-modelled path = {_fmt(row['ours/endpoint'])}: the endpoint boots no node)"
    return [
        f"| {row['phase']} ≤ {bound} × critical path ({row['what']}, {where}) | "
        f"{_fmt(row['ours'])} s / {_fmt(row['critical'])} s = {_fmt(row['ours/critical'])} | {verdict} |"
    ]


# --- the limit runs: ours alone, create and delete at the upgrade runs' scale, against the critical path ------------
def limit_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Per latency phase: the run of both clusters, then each cluster alone (its last task's end); each run's wall,
    their median, and the critical path at the runs' scale."""
    limits = results.get("limits") or {}
    runs, scale = limits.get("runs", []), limits.get("scale", 0.0)
    if not runs or not scale:
        return []
    bounds = phase_limits(scale)
    rows = []
    for phase in [p for p in LATENCY_GOALS if all(p in r for r in runs)]:
        entries = [(phase, "both clusters", [r[phase]["wall"] for r in runs], bounds[phase])]
        for host in CLUSTERS:
            finishes = host_finishes([r[phase] for r in runs], host)
            if finishes:
                entries.append((phase, host, finishes, bounds[f"{phase} {host}"]))
        for name, what, values, limit in entries:
            ours = _med(values)
            rows.append({"phase": name, "what": what, "runs": values, "ours": ours, **against(ours, limit)})
    return rows


def limit_section(results: dict[str, Any]) -> list[str]:
    limits = results.get("limits") or {}
    rows = limit_rows(results)
    if not rows:
        return not_measured("## Create and delete at 1/10: ours against the critical path", "--limit-runs 0")
    scale, runs = limits["scale"], len(limits["runs"])
    out = [
        f"## Create and delete at scale {scale:g}: ours against the critical path",
        "",
        f"Ours alone, {runs} run{'s' if runs != 1 else ''} ({limits.get('date', '')}; `{limits.get('command', '')}`). "
        f"Each run starts from an empty moto under the latency model at scale {scale:g} (1/{1 / scale:.0f} of AWS's "
        "time, the upgrade runs' scale) and runs the phase runs' create, then delete, of both bench clusters. The "
        "critical path is the same graph as above, at this scale. Why a second scale: what Ansible spends whatever "
        "AWS's times (its start-up, the compile and preflight, the status read-back, polls paced for AWS's seconds: "
        "about 3 s of a run) does not shrink with the model, so at 1/30 it stands for thirty times as much of AWS's "
        "time and at 1/10 for ten times; against AWS itself (scale 1) it weighs less still. The peer is set against "
        "ours in the phase runs above, at their scale (at 1/10 its create alone would take about ten minutes).",
        "",
        "| phase | what | ours s, each run | ours s (median) | critical path s | endpoint-modelled s | "
        "ours / critical path | ours / endpoint-modelled |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        each = ", ".join(_fmt(v) for v in r["runs"])
        cells = [r[k] for k in ("ours", "critical", "endpoint", "ours/critical", "ours/endpoint")]
        out.append(f"| {r['phase']} | {r['what']} | {each} | " + " | ".join(_fmt(c) for c in cells) + " |")
    out.append("")
    for phase in [p for p in LATENCY_GOALS if all(p in r for r in limits["runs"])]:
        run = median_run(limits["runs"], phase, side=None)
        trace = chain_trace(run[phase], phase, scale)
        if trace:
            out += [f"### The {phase}'s critical chains as run (run {limits['runs'].index(run) + 1}, the median)", ""]
            out += trace
    return out


def limit_targets(results: dict[str, Any]) -> list[str]:
    limits = results.get("limits") or {}
    rows = limit_rows(results)
    if not rows:
        return []
    runs = len(limits["runs"])
    where = f"ours alone at scale {limits['scale']:g}, median of {runs} run{'s' if runs != 1 else ''}"
    return [line for row in rows for line in critical_target(row, where)]


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def write(results: dict[str, Any], root: Path) -> None:
    charts = root / CHARTS
    charts.mkdir(parents=True, exist_ok=True)
    runs = results.get("phases", [])
    phases = measured_phases(runs)
    latency = results.get("latency") or {}
    out = ["# Benchmarks", ""]
    out += [
        "Our playbooks (`playbooks/site.yml` / `delete.yml` on `bench/inventory-ours.yml`: the demo cluster with its "
        "auto scaling group pool mp-0, and the EKS cluster demo-eks) against a peer playbook written with amazon.aws "
        "and community.aws modules only (`bench/peer/site.yml` / `delete.yml`) that builds "
        "the same topology, on the embedded moto endpoint. Every figure is one "
        "`ansible-playbook` process: wall time; CPU seconds (user + system) and peak RSS of its whole process tree "
        "(`os.wait4`); AWS requests from the moto server's own counter (`/_capa/requests`), reset before each run; "
        "changed tasks from the PLAY RECAP. Mutating = any operation not named Describe*/List*/Get*.",
        "",
        "Reproduce: `make bench` (installs `bench/requirements.txt`, runs `bench/run.py --latency-scale "
        "$(BENCH_LATENCY_SCALE)`, 0.0333 unless set: the create and delete phases of both sides under the AWS latency "
        "model at 1/30 of AWS's time, `BENCH_LATENCY_SCALE=0` for none; more options in `BENCH_ARGS`, for example "
        "`make bench BENCH_ARGS=\"--runs 1 --phases create,delete --workers '' --clusters ''\"` for a short run; "
        "logs, each run's task clock (`*.tasks.jsonl`), the endpoint's journal of its requests (`*.requests.json`) "
        "and `results.json` in `.build/bench/`). "
        "`python bench/run.py --report` rewrites this file and its charts (`bench/charts/`) from the saved results "
        'alone. docs/docsite/rst/development.rst, "Benchmarks", says more.',
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in results["machine"].items()]
    out += [f"| command | `{results.get('command', 'make bench')}` |"]
    scale = latency.get("scale", 0.0)
    model = f"{scale:g} (1/{1 / scale:.0f} of AWS's time)" if scale else "off"
    out += [f"| latency model | {model}, in the {' and '.join(latency.get('phases', [])) or 'no'} phases |", ""]
    if runs:
        out += [
            "## Phases: ours vs the peer",
            "",
            f"{len(runs)} run{'s' if len(runs) != 1 else ''} of the phases {', '.join(phases)}. Each run starts from "
            "an empty moto (every service's backend built by one read before the clock starts: moto builds them on the "
            "first request after its reset, 0.1-0.9 s that AWS does not spend and that the side asking first, ours, "
            "paid until 2026-12-05) and interleaves the sides (create ours, create peer, no-op ours, no-op peer, "
            "no-op of the self-managed demo alone ours (`--limit demo`) and peer (`-e peer_eks=false`), check ours, "
            "check peer, delete ours, delete peer; the phases measured). Figures are medians over the runs; the "
            "ratio is computed within each run, then the median taken. "
            + (
                f"The create and delete ran under the latency model at scale {scale:g} (next section)."
                if scale
                else "The latency model was off."
            ),
            "",
        ]
        out += phase_rows(runs)
        source = "run 1"
        for phase in [p for p in ("noop-sm", "noop", "create") if p in phases]:
            if runs[0][phase]["ours"]["operations"] or runs[0][phase]["peer"]["operations"]:
                out += ["", f"### Requests per operation, {PHASE_NAMES[phase]} ({source})", ""]
                out += operation_rows(runs[0], phase)
        out += [""]
        out += latency_section(results, charts)
    out += limit_section(results)
    out += upgrade_section(results)
    out += eks_upgrade_section(results)
    workers = results.get("workers", [])
    if workers:
        plot_workers(series_ok(workers), charts / "scale-workers.png")
        out += [
            "## Scale: worker machines in one cluster (no-op reconcile)",
            "",
            f"The self-managed demo cluster without pool or EKS cluster, on both sides, grown in place from size to "
            f"size (ours: md-0 replicas; the peer: `exact_count` per private subnet, three `ec2_instance` loop items "
            f"whatever N); at each size {series_runs(workers)} no-op reconciles per side, interleaved. Medians; "
            f"requests are the same in every run.",
            "",
            "| workers | ours requests | peer requests | ours wall s | peer wall s | ours CPU s | peer CPU s | "
            "ours mutating | peer mutating |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in workers:
            cells = [series_value(r, side, key) for key in ("requests", "wall", "cpu", "mutating") for side in SIDES]
            out.append(f"| {_point(r, 'workers')} | " + " | ".join(_fmt(c) for c in cells) + " |")
        out += ["", f"![no-op reconcile by worker count]({CHARTS}/scale-workers.png)", ""]
    clusters = results.get("clusters", [])
    if clusters:
        plot_clusters(series_ok(clusters), charts / "scale-clusters.png")
        out += [
            "## Scale: clusters reconciled by one `ansible-playbook -f N` (ours, no-op reconcile)",
            "",
            f"Demo clusters (2 workers each, no pool) are added to one inventory up to N and created by one run; "
            f"then {series_runs(clusters)} no-op reconciles of all N are measured. Medians.",
            "",
            "| clusters | wall s | CPU s | CPU s/cluster | wall s/cluster | requests | mutating | peak RSS MB |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in clusters:
            k = r["clusters"]
            wall, cpu = series_value(r, "ours", "wall"), series_value(r, "ours", "cpu")
            rest = [series_value(r, "ours", key) for key in ("requests", "mutating", "maxrss_mb")]
            out.append(
                f"| {_point(r, 'clusters')} | {_fmt(wall)} | {_fmt(cpu)} | {cpu / k:.2f} | {wall / k:.2f} | "
                + " | ".join(_fmt(c) for c in rest)
                + " |"
            )
        out += ["", f"![no-op reconcile by cluster count]({CHARTS}/scale-clusters.png)", ""]
    if not workers or not clusters:
        missing = " and ".join(n for n, rows in (("worker", workers), ("cluster", clusters)) if not rows)
        out += [
            "## Scale series",
            "",
            f"The {missing} series {'was' if ' and ' not in missing else 'were'} not measured in this run (`--workers "
            "''` / `--clusters ''`, or the run ended before them): no figures or charts for "
            f"{'it' if ' and ' not in missing else 'them'} here.",
            "",
        ]
    # The latency model's table and each phase's critical path: figures of the model, not of this run.
    out += critical_path.markdown()
    out += ["## Done-when targets", ""]
    out += targets(results)
    out += [""]
    broken = failures(results)
    if broken:
        out += ["## Failed runs", ""] + [f"- {b}" for b in broken] + [""]
    notes = root / "bench" / "NOTES.md"
    if notes.exists():
        out += [notes.read_text().strip(), ""]
    (root / "BENCHMARKS.md").write_text("\n".join(out))
