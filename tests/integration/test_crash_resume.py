"""ansible-playbook killed with SIGKILL at seeded points of site.yml and delete.yml; re-running converges.

The moto server's fault injector sends SIGKILL to the playbook's process group right after moto applied the N-th
mutating request of the run (the change landed, nobody heard), N drawn from a seeded generator. Kill points are
chained to keep the time bounded: each resumed run is killed again N writes past where the last one died, so the
points walk through the playbook. After every kill the resources tagged for the cluster are counted by kind: never
more of a kind than the spec asks for (no duplicate, nothing unexplained). A run that gets past its kill point
finishes the playbook: after site.yml the cluster must be exactly the spec, after delete.yml nothing may be tagged
for the cluster; then the other playbook's chain starts (site, delete, site, ...) until the test's kill points are
used up, and a last full site.yml and delete.yml close the test.
"""

from __future__ import annotations

import random
import time

import pytest
from cluster_helpers import write_inventory
from reliability import (
    DELETE,
    SITE,
    SMALL_EXPECTED,
    Faults,
    ansible_env,
    census,
    counts,
    run_killable,
    small_spec,
    tagged_anywhere,
    write_figures,
)

KILLS_PER_TEST = 10
# A resumed run dies after 1..16 of its writes: a small cluster's site.yml or delete.yml makes ~40, so each
# playbook is killed about five times before a run gets through it.
MAX_WRITES_PER_STEP = 16


def over_spec(found: dict[str, list[str]], limit: dict[str, int]) -> dict[str, int]:
    """Kinds with more resources than ``limit`` allows (duplicates or leftovers)."""
    return {k: v for k, v in counts(found).items() if v > limit.get(k, 0)}


def check_converged(aws, cluster, phase):
    if phase == "site":
        found = counts(census(aws, cluster))
        assert found == SMALL_EXPECTED, f"site.yml finished but the cluster is not the spec: {found}"
    else:
        left, tagged = census(aws, cluster), tagged_anywhere(aws, cluster)
        assert left == {} and tagged == [], f"delete.yml finished but left {counts(left)} {tagged}"


def kill_cycle(aws, inventory, cluster, seed, kills):
    """site.yml and delete.yml in turn, each run killed at a seeded write, until ``kills`` kills happened."""
    rng = random.Random(seed)
    faults = Faults(aws.url)
    env = ansible_env(aws.env)
    phase, figures = "site", {"kill_points": [], "killed_at": [], "runs": 0, "requests": 0, "converged": []}
    while len(figures["kill_points"]) < kills and figures["runs"] < kills * 3:
        point = rng.randint(1, MAX_WRITES_PER_STEP)
        playbook = SITE if phase == "site" else DELETE
        rc, status, output = run_killable(
            playbook, inventory, env, faults, [point], seed=seed + figures["runs"], kill_mutating=True, timeout=900
        )
        figures["runs"] += 1
        figures["requests"] += status["requests"]
        if status["kills"]:
            assert rc == -9, output
            figures["kill_points"].append(f"{phase}:{point}")
            figures["killed_at"].append(status["kills"][0]["operation"])
            extra = over_spec(census(aws, cluster), SMALL_EXPECTED)
            assert extra == {}, f"after kill {len(figures['kill_points'])} ({figures['killed_at'][-1]}): {extra}"
            continue
        assert rc == 0, output  # the run got past its kill point: it must have finished the playbook
        check_converged(aws, cluster, phase)
        figures["converged"].append(f"{phase} after {len(figures['kill_points'])} kills")
        phase = "delete" if phase == "site" else "site"
    assert len(figures["kill_points"]) == kills, figures
    # Whatever the last kill interrupted: a full site.yml gives the spec, a full delete.yml leaves nothing.
    for phase, playbook in (("site", SITE), ("delete", DELETE)):
        rc, status, output = run_killable(playbook, inventory, env, faults, [], seed=seed, timeout=900)
        assert rc == 0, output
        check_converged(aws, cluster, phase)
        figures["runs"] += 1
        figures["requests"] += status["requests"]
    figures["converged"].append("site and delete at the end")
    return figures


@pytest.mark.parametrize("seed", [20261129, 20261130])
def test_kills_in_site_and_delete_then_resume(aws, tmp_path, seed):
    started = time.monotonic()
    cluster = f"crash-{seed % 100}"
    inventory = write_inventory(tmp_path, small_spec(cluster))
    figures = kill_cycle(aws, inventory, cluster, seed, KILLS_PER_TEST)
    # Every kill point was followed by runs that converged (the cycle checks it): the seeds' counts add up to the
    # issue's "at least 20 kill points survived".
    figures["kill_points_survived"] = len(figures["kill_points"])
    figures["seconds"] = round(time.monotonic() - started, 1)
    write_figures(f"crash_{seed}", figures)
