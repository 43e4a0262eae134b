"""The report `make test` writes (.build/test-report.md): each target's time, the slowest tests, coverage per package.

Usage: tools/test_report.py --logs DIR --coverage coverage.json --total SECONDS --out REPORT

``DIR`` holds the lanes' ``*.times`` files (``name status seconds`` per line) and each target's log; the slowest tests
come from pytest's ``--durations`` section in the integration and unit logs. Coverage is coverage.py's JSON report
of the combined data, summed per package: ``plugins/module_utils/<package>``, ``plugins/modules``, ``plugins/<type>``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

DURATION = re.compile(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+)")


def minutes(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def targets(logs: Path) -> list[tuple[str, str, str, int]]:
    rows = []
    for lane_file in sorted(logs.glob("*.times")):
        for line in lane_file.read_text().splitlines():
            name, status, seconds = line.split()
            rows.append((lane_file.stem, name, status, int(seconds)))
    return rows


def slowest(logs: Path, count: int = 20) -> list[tuple[float, str]]:
    """The slowest test phases (setup, call, teardown) of the unit and integration runs, by pytest's durations."""
    found: dict[str, float] = defaultdict(float)
    for log in ("integration.log", "unit.log"):
        path = logs / log
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            match = DURATION.match(line.strip())
            if match:
                found[match.group(3)] += float(match.group(1))
    return sorted(((seconds, test) for test, seconds in found.items()), reverse=True)[:count]


def package_of(path: str) -> str:
    parts = Path(path).parts
    if len(parts) >= 3 and parts[1] == "module_utils" and len(parts) > 3:
        return "/".join(parts[:3])
    if len(parts) >= 2 and parts[0] == "plugins":
        return "/".join(parts[:2]) if parts[1] != "module_utils" else "plugins/module_utils (capa.py)"
    return parts[0]


def coverage_rows(report: Path) -> list[tuple[str, int, int, int, int]]:
    """(package, statements, covered, branches, covered branches) per package, and the total last."""
    data = json.loads(report.read_text())
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path, info in data["files"].items():
        summary = info["summary"]
        row = sums[package_of(path)]
        row[0] += summary["num_statements"]
        row[1] += summary["covered_lines"]
        row[2] += summary.get("num_branches", 0)
        row[3] += summary.get("covered_branches", 0)
    rows = [(name, *values) for name, values in sorted(sums.items())]
    totals = [sum(r[i] for r in rows) for i in range(1, 5)]
    return rows + [("total", *totals)]


def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--coverage", type=Path, required=True)
    parser.add_argument("--total", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--coverage-of", default="unit + integration + the processes they start")
    args = parser.parse_args()

    lines = [
        f"# make test: {minutes(args.total)} in all",
        "",
        "| lane | target | result | time |",
        "|---|---|---|---:|",
    ]
    lines += [
        f"| {lane} | {name} | {status} | {minutes(seconds)} |" for lane, name, status, seconds in targets(args.logs)
    ]
    lines += ["", "## The 20 slowest tests (setup + call + teardown)", "", "| time | test |", "|---:|---|"]
    lines += [f"| {seconds:.1f}s | `{test}` |" for seconds, test in slowest(args.logs)]
    if args.coverage.is_file():
        lines += [
            "",
            f"## Coverage of plugins/ ({args.coverage_of})",
            "",
            "| package | lines | branches | combined |",
            "|---|---:|---:|---:|",
        ]
        for name, statements, covered, branches, branches_covered in coverage_rows(args.coverage):
            combined = percent(covered + branches_covered, statements + branches)
            label = f"**{name}**" if name == "total" else f"`{name}`"
            lines.append(
                f"| {label} | {percent(covered, statements)} ({covered}/{statements}) | "
                f"{percent(branches_covered, branches)} ({branches_covered}/{branches}) | {combined} |"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
