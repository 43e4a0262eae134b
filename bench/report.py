"""Write BENCHMARKS.md and docs/bench-*.png from bench/run.py's results (see bench/run.py)."""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any

PHASES = ["create", "noop", "check", "delete"]
PHASE_NAMES = {"create": "create", "noop": "no-op reconcile", "check": "check mode", "delete": "delete"}
METRICS = [("wall", "wall s"), ("cpu", "CPU s"), ("maxrss_mb", "peak RSS MB"), ("requests", "requests")]
METRICS += [("mutating", "mutating"), ("changed", "changed tasks")]


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
            if row[side]["rc"] != 0:
                found.append(f"{row['workers']} workers no-op {side}: rc={row[side]['rc']}")
    for row in results.get("clusters", []):
        if row["ours"]["rc"] != 0:
            found.append(f"{row['clusters']} clusters no-op: rc={row['ours']['rc']}")
    return found


def plot_workers(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["workers"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for side, style in (("ours", "o-"), ("peer", "s--")):
        left.plot(xs, [r[side]["requests"] for r in rows], style, label=side)
        right.plot(xs, [r[side]["cpu"] for r in rows], style, label=f"{side} CPU")
        right.plot(xs, [r[side]["wall"] for r in rows], style, alpha=0.35, label=f"{side} wall")
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
    left.plot(xs, [r["ours"]["cpu"] / r["clusters"] for r in rows], "o-", label="CPU s per cluster")
    left.plot(xs, [r["ours"]["wall"] / r["clusters"] for r in rows], "s--", label="wall s per cluster")
    left.set(title="no-op reconcile, ansible-playbook -f N", xlabel="clusters", ylabel="seconds per cluster")
    right.plot(xs, [r["ours"]["requests"] / r["clusters"] for r in rows], "o-", label="requests per cluster")
    right.set(title="no-op reconcile: AWS requests per cluster", xlabel="clusters", ylabel="requests")
    for ax in (left, right):
        ax.legend()
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def targets(results: dict[str, Any]) -> list[str]:
    rows = ["| target | measured | met |", "|---|---|---|"]
    runs = results.get("phases", [])
    if runs:
        req = _med([_ratio(r["noop"]["ours"]["requests"], r["noop"]["peer"]["requests"]) for r in runs])
        mut = max(r["noop"]["ours"]["mutating"] for r in runs)
        wall = _med([_ratio(r["noop"]["ours"]["wall"], r["noop"]["peer"]["wall"]) for r in runs])
        create = [(r["create"]["ours"]["requests"], r["create"]["peer"]["requests"]) for r in runs]
        phases = f"phase runs (demo with mp-0 + demo-eks), median of {len(runs)}"
        rows.append(f"| no-op: requests ≤ 1/5 of the peer's ({phases}) | ours/peer = {req} | {_yes(req <= 0.2)} |")
        rows.append(f"| no-op: no mutating request | at most {mut} in {len(runs)} runs | {_yes(mut == 0)} |")
        rows.append(f"| no-op: wall ≤ 1/2 of the peer's ({phases}) | ours/peer = {wall} | {_yes(wall <= 0.5)} |")
        fewer = all(o < p for o, p in create)
        pairs = ", ".join(f"{o} vs {p}" for o, p in create)
        rows.append(f"| create: fewer requests than the peer | {pairs} | {_yes(fewer)} |")
    workers = results.get("workers", [])
    if workers:
        # The self-managed demo cluster alone (no pool, no EKS), measured once per worker count.
        req_ratios = [_ratio(r["ours"]["requests"], r["peer"]["requests"]) for r in workers]
        wall_ratios = [_ratio(r["ours"]["wall"], r["peer"]["wall"]) for r in workers]
        sizes = "/".join(str(r["workers"]) for r in workers)
        where = f"self-managed demo cluster, worker series {sizes}"
        rows.append(
            f"| no-op: requests ≤ 1/5 of the peer's ({where}) | ours/peer = {', '.join(map(str, req_ratios))} | "
            f"{_yes(max(req_ratios) <= 0.2)} |"
        )
        rows.append(
            f"| no-op: wall ≤ 1/2 of the peer's ({where}) | ours/peer = {', '.join(map(str, wall_ratios))} | "
            f"{_yes(max(wall_ratios) <= 0.5)} |"
        )
        counts = {r["workers"]: r["ours"]["requests"] for r in workers}
        text = ", ".join(f"{n}: {c}" for n, c in counts.items())
        growth = page_growth(workers[0]["ours"]["operations"], workers[-1]["ours"]["operations"])
        only_pages = all(op in PAGINATED for op in growth)
        if growth:
            extra = ", ".join(f"+{n} {op}" for op, n in sorted(growth.items()))
            text += f" (from {workers[0]['workers']} to {workers[-1]['workers']}: {extra})"
        verdict = _yes(only_pages) + (" (pagination aside, as the target says)" if growth and only_pages else "")
        if 200 not in counts:
            verdict = f"not measured at 200; {verdict}"
        rows.append(f"| no-op requests equal for 2 and 200 workers (pagination aside) | {text} | {verdict} |")
    clusters = results.get("clusters", [])
    if len(clusters) > 1:
        one = clusters[0]["ours"]["cpu"] / clusters[0]["clusters"]
        last = clusters[-1]
        per = last["ours"]["cpu"] / last["clusters"]
        factor = round(per / one, 2)
        rows.append(
            f"| CPU per cluster with {last['clusters']} in parallel ≤ 1.5× of one | "
            f"{per:.2f} s vs {one:.2f} s = {factor}× | {_yes(factor <= 1.5)} |"
        )
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
        "Our playbooks (`playbooks/site.yml` / `delete.yml` on `bench/inventory-ours.yml`: the demo cluster without "
        "machine pools) against a peer playbook written with amazon.aws modules only (`bench/peer/site.yml` / "
        "`delete.yml`) that builds the same topology, on the embedded moto endpoint. Every figure is one "
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
            results.get("runs_note", f"{len(runs)} runs.")
            + " Each run starts from an empty moto and interleaves the sides (create ours, create "
            "peer, no-op ours, no-op peer, check ours, check peer, delete ours, delete peer). Figures are medians "
            "over the runs; the ratio is computed within each run, then the median taken.",
            "",
        ]
        out += phase_rows(runs)
        source = results.get("operations_from", "run 1")
        for phase in ("noop", "create"):
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
            "One run per size: the cluster is created with N md-0 workers (the peer: `exact_count` per private "
            "subnet, three `ec2_instance` loop items whatever N), then a no-op reconcile is measured.",
            "",
            "| workers | ours requests | peer requests | ours wall s | peer wall s | ours CPU s | peer CPU s | "
            "ours mutating | peer mutating |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in workers:
            o, p = r["ours"], r["peer"]
            out.append(
                f"| {r['workers']} | {o['requests']} | {p['requests']} | {o['wall']} | {p['wall']} | {o['cpu']} | "
                f"{p['cpu']} | {o['mutating']} | {p['mutating']} |"
            )
        out += ["", "![no-op reconcile by worker count](docs/bench-workers.png)", ""]
    clusters = results.get("clusters", [])
    if clusters:
        plot_clusters(clusters, docs / "bench-clusters.png")
        out += [
            "## Scale: clusters reconciled by one `ansible-playbook -f N` (ours, no-op reconcile)",
            "",
            "One run per size: N demo clusters (2 workers each) are created in one run, then a no-op reconcile of "
            "all of them is measured.",
            "",
            "| clusters | wall s | CPU s | CPU s/cluster | wall s/cluster | requests | mutating | peak RSS MB |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in clusters:
            o, k = r["ours"], r["clusters"]
            out.append(
                f"| {k} | {o['wall']} | {o['cpu']} | {o['cpu'] / k:.2f} | {o['wall'] / k:.2f} | {o['requests']} | "
                f"{o['mutating']} | {o['maxrss_mb']} |"
            )
        out += ["", "![no-op reconcile by cluster count](docs/bench-clusters.png)", ""]
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
