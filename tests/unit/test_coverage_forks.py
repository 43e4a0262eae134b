"""tools/coverage_forks.py: what a forked multiprocessing worker runs is measured, as make test relies on for
Ansible's task workers, and nothing measures it without the hook (so the test can fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "tools" / "coverage_forks.py"
PTH = REPO / "tools" / "coverage_forks.pth"

MEASURED = """
def in_the_worker(n):
    total = 0
    for i in range(n):
        total += i
    return total


def in_the_parent():
    return "parent"
"""

PROGRAM = """
import multiprocessing
import measured

def work():
    measured.in_the_worker(3)

if __name__ == "__main__":
    measured.in_the_parent()
    for _ in range(3):  # three workers, each forked, each ending in os._exit as Ansible's do
        worker = multiprocessing.get_context("fork").Process(target=work)
        worker.start()
        worker.join()
        assert worker.exitcode == 0
"""


def covered_lines(tmp_path: Path, with_hook: bool) -> dict[str, list[int]]:
    (tmp_path / "measured.py").write_text(MEASURED)
    (tmp_path / "program.py").write_text(PROGRAM)
    (tmp_path / "coverage.ini").write_text(f"[run]\nbranch = True\nparallel = True\ninclude = {tmp_path}/measured.py\n")
    # The pth file as the venv has it, run here by hand so that the test does not depend on make venv's copy.
    loader = PTH.read_text()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    env.pop("CAPA_COVERAGE_FORKS", None)
    if with_hook:
        env["CAPA_COVERAGE_FORKS"] = str(HOOK)
    run = [
        sys.executable,
        "-c",
        f"{loader}\nimport sys; sys.argv = ['program.py']; import coverage.cmdline; "
        "sys.exit(coverage.cmdline.main(['run', '--rcfile=coverage.ini', 'program.py']))",
    ]
    subprocess.run(run, cwd=tmp_path, env=env, check=True, capture_output=True, text=True, timeout=120)
    files = sorted(p.name for p in tmp_path.glob(".coverage.*"))
    assert files, "no data file written"
    for command in (["combine", "--rcfile=coverage.ini"], ["json", "--rcfile=coverage.ini", "-o", "cov.json"]):
        subprocess.run(
            [sys.executable, "-m", "coverage", *command],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
    report = json.loads((tmp_path / "cov.json").read_text())
    return {name: data["executed_lines"] for name, data in report["files"].items()}


def worker_lines(lines: dict[str, list[int]]) -> set[int]:
    [executed] = lines.values()
    return {n for n in executed if 3 <= n <= 6}  # in_the_worker's body


def test_the_workers_lines_are_measured_with_the_hook(tmp_path):
    assert worker_lines(covered_lines(tmp_path, with_hook=True)) == {3, 4, 5, 6}


def test_without_the_hook_the_workers_lines_are_lost(tmp_path):
    lines = covered_lines(tmp_path, with_hook=False)
    assert worker_lines(lines) == set()
    [executed] = lines.values()
    assert 10 in executed  # the parent's own line is there either way
