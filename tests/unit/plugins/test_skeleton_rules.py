# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Rules of the tier skeleton that a reviewer would otherwise have to remember (docs/architecture.md).

* A tier reads parameters as its argument spec validated them: ``params.get(x) or default`` re-decides a default
  the spec already filled in, and the two drift apart (``total_target_capacity`` defaulted to 1 in capa_fleet's spec
  and to 0 in its typed spec). Unset is spelled once (``kernel.options.given``/``filled``).
* Every wait is the kernel's (``kernel.waiting``: paced, reported, bounded by the run's budget): no ``time.sleep``
  and no botocore waiter outside the kernel. The exception is the termination watcher's script, which runs on the
  machines, not in a module run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

MODULE_UTILS = Path(__file__).resolve().parents[3] / "plugins" / "module_utils"
SOURCES = sorted(MODULE_UTILS.rglob("*.py"))
RE_DEFAULT = re.compile(r"params\.get\(.*\) or")
SLEEP = re.compile(r"\btime\.sleep\(|\.waiter\(|\.get_waiter\(")
ON_THE_MACHINES = {"machines/termination_assets.py"}


def relative(path: Path) -> str:
    return path.relative_to(MODULE_UTILS).as_posix()


@pytest.mark.parametrize("path", SOURCES, ids=relative)
def test_no_tier_re_defaults_what_its_argument_spec_filled_in(path: Path):
    found = [
        f"{relative(path)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if RE_DEFAULT.search(line)
    ]
    assert found == []


@pytest.mark.parametrize("path", SOURCES, ids=relative)
def test_every_wait_is_the_kernels(path: Path):
    if relative(path).startswith("kernel/") or relative(path) in ON_THE_MACHINES:
        return
    found = [
        f"{relative(path)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SLEEP.search(line)
    ]
    assert found == []


def test_the_rules_see_what_they_forbid(tmp_path: Path):
    assert RE_DEFAULT.search('        x = params.get("subnets") or []')
    assert not RE_DEFAULT.search('        x = params["subnets"] or [ctx.region]')
    assert SLEEP.search("        time.sleep(5)") and SLEEP.search('        ec2.waiter("vpc_available").wait()')
