"""Write BENCHMARKS.md and docs/bench-*.png from bench/run.py's results (see bench/run.py)."""

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


def series_runs(rows: list[dict[str, Any]]) -> int:
    return min(len(row["runs"]) for row in rows)


def phase_rows(runs: list[dict[str, Any]]) -> list[str]:
    rows = ["| phase | metric | ours | peer | ours/peer |", "|---|---|---:|---:|---:|"]
    for phase in PHASES:
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    return rows


def cluster_targets(clusters: list[dict[str, Any]]) -> list[str]:
    one = series_value(clusters[0], "ours", "cpu") / clusters[0]["clusters"]
    last = clusters[-1]
    per = series_value(last, "ours", "cpu") / last["clusters"]
    factor = round(per / one, 2)
    return [
        f"| CPU per cluster with {last['clusters']} in parallel ≤ 1.5× of one (median of {series_runs(clusters)} "
        f"runs each) | {per:.2f} s vs {one:.2f} s = {factor}× | {_yes(factor <= 1.5)} |"
    ]


def targets(results: dict[str, Any]) -> list[str]:
    rows = ["| target | measured | met |", "|---|---|---|"]
    runs = results.get("phases", [])
    if runs and all("noop-sm" in r for r in runs):
        rows += phase_targets(runs, "noop-sm", "phase runs: the self-managed demo cluster with its pool mp-0")
    workers = results.get("workers", [])
    if workers:
        rows += worker_targets(workers)
    if runs:
        create = [(r["create"]["ours"]["requests"], r["create"]["peer"]["requests"]) for r in runs]
        pairs = ", ".join(f"{o} vs {p}" for o, p in create)
        rows.append(
            f"| create: fewer requests than the peer (phase runs) | {pairs} | {_yes(all(o < p for o, p in create))} |"
        )
    clusters = results.get("clusters", [])
    if len(clusters) > 1:
        rows += cluster_targets(clusters)
    if runs:
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


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def write(results: dict[str, Any], root: Path) -> None:
    docs = root / "docs"
    docs.mkdir(exist_ok=True)
    runs = results.get("phases", [])
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
        "Reproduce: `make bench` (installs `bench/requirements.txt`, runs `bench/run.py`; logs and `results.json` "
        "in `.build/bench/`). `python bench/run.py --report` rewrites this file from the saved results.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in results["machine"].items()]
    out += [""]
    if runs:
        out += [
            "## Phases: ours vs the peer",
            "",
            f"{len(runs)} runs." + " Each run starts from an empty moto and interleaves the sides (create ours, create "
            "peer, no-op ours, no-op peer, no-op of the self-managed demo alone ours (`--limit demo`) and peer "
            "(`-e peer_eks=false`), check ours, check peer, delete ours, delete peer). Figures are medians over the "
            "runs; the ratio is computed within each run, then the median taken.",
            "",
        ]
        out += phase_rows(runs)
        source = "run 1"
        for phase in ("noop-sm", "noop", "create"):
            if runs[0][phase]["ours"]["operations"] or runs[0][phase]["peer"]["operations"]:
                out += ["", f"### Requests per operation, {PHASE_NAMES[phase]} ({source})", ""]
                out += operation_rows(runs[0], phase)
        out += [""]
    workers = results.get("workers", [])
    if workers:
        plot_workers(workers, docs / "bench-workers.png")
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
            out.append(f"| {r['workers']} | " + " | ".join(_fmt(c) for c in cells) + " |")
        out += ["", "![no-op reconcile by worker count](docs/bench-workers.png)", ""]
    clusters = results.get("clusters", [])
    if clusters:
        plot_clusters(clusters, docs / "bench-clusters.png")
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
                f"| {k} | {_fmt(wall)} | {_fmt(cpu)} | {cpu / k:.2f} | {wall / k:.2f} | "
                + " | ".join(_fmt(c) for c in rest)
                + " |"
            )
        out += ["", "![no-op reconcile by cluster count](docs/bench-clusters.png)", ""]
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
