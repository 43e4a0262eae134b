"""ansible-playbook killed with SIGKILL at seeded points of site.yml and delete.yml; re-running converges.

The moto server's fault injector sends SIGKILL to the playbook's process group right after moto applied the N-th
mutating request of the run (the change landed, nobody heard), N drawn from a seeded generator. Kill points are
chained to keep the time bounded: each resumed run is killed again a few writes past where the last one died, so
the points walk through the whole playbook. After every kill the resources tagged for the cluster are counted by
kind: never more of a kind than the spec asks for (no duplicate, nothing unexplained). At the end of each chain a
full run must succeed and leave exactly the spec (site.yml) or nothing tagged for the cluster (delete.yml).
"""

from __future__ import annotations

import random
import time
from typing import Any

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
    write_inventory,
)

KILLS_PER_CHAIN = 10
MAX_WRITES_PER_STEP = 6  # a resumed run dies after 1..6 of its writes


def over_spec(found: dict[str, list[str]], limit: dict[str, int]) -> dict[str, int]:
    """Kinds with more resources than ``limit`` allows (duplicates or leftovers)."""
    return {k: v for k, v in counts(found).items() if v > limit.get(k, 0)}


def kill_chain(aws, playbook, inventory, cluster, seed, limit) -> dict[str, Any]:
    """Run ``playbook`` again and again, each run killed at a seeded write, until KILLS_PER_CHAIN kills happened
    (a run that finished before its kill point still counts as a run). Checks ``limit`` after every kill."""
    rng = random.Random(seed)
    faults = Faults(aws.url)
    env = ansible_env(aws.env)
    points, operations, runs, requests = [], [], 0, 0
    while len(points) < KILLS_PER_CHAIN and runs < KILLS_PER_CHAIN * 2:
        point = rng.randint(1, MAX_WRITES_PER_STEP)
        rc, status, output = run_killable(
            playbook, inventory, env, faults, [point], seed=seed + runs, kill_mutating=True, timeout=600
        )
        runs += 1
        requests += status["requests"]
        if status["kills"]:
            assert rc == -9, output
            points.append(point)
            operations.append(status["kills"][0]["operation"])
        else:
            assert rc == 0, output  # finished before the kill point: it must have succeeded
        extra = over_spec(census(aws, cluster), limit)
        assert extra == {}, f"after kill {len(points)} at write {point} ({operations[-1:]}): {extra}"
    return {"kill_points": points, "killed_at": operations, "runs": runs, "requests": requests}


def test_site_survives_kills_and_converges(aws, run_playbook, tmp_path):
    started = time.monotonic()
    inventory = write_inventory(tmp_path, small_spec("crash-site"))
    chain = kill_chain(aws, SITE, inventory, "crash-site", 20261129, SMALL_EXPECTED)
    run_playbook(SITE, inventory=inventory)
    assert counts(census(aws, "crash-site")) == SMALL_EXPECTED
    write_figures(
        "crash_site",
        chain | {"converged": True, "resources": SMALL_EXPECTED, "seconds": round(time.monotonic() - started, 1)},
    )


def test_delete_survives_kills_and_leaves_nothing(aws, run_playbook, tmp_path):
    started = time.monotonic()
    inventory = write_inventory(tmp_path, small_spec("crash-delete"))
    run_playbook(SITE, inventory=inventory)
    assert counts(census(aws, "crash-delete")) == SMALL_EXPECTED
    chain = kill_chain(aws, DELETE, inventory, "crash-delete", 20261130, SMALL_EXPECTED)
    run_playbook(DELETE, inventory=inventory)
    left = census(aws, "crash-delete")
    tagged = tagged_anywhere(aws, "crash-delete")
    write_figures(
        "crash_delete",
        chain
        | {"resources_left": counts(left), "tagged_left": tagged, "seconds": round(time.monotonic() - started, 1)},
    )
    assert left == {} and tagged == []
