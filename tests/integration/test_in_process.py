"""A module of the collection on a local target runs in the controller's worker, and answers as a module process does.

plugins/plugin_utils/in_process.py runs a module's ``main()`` in the worker Ansible forked for the task when the
target is local and its Python is the controller's; anything else (here: the host variable ``capa_in_process: false``)
runs the module as a process. The same tasks run both ways against the same account must give the same results -
check mode with its plan and diff, a real create, a no-op with its exact reads and its warning, a refusal of bad
input - and the ``-vvv`` output names the way each ran. The task's ``environment`` reaches the module in the worker
as it would reach a module process, and only for that task.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

MODULE = "clusterapi.aws.capa_vpc"
IN_PROCESS = "in the controller's worker process"
AS_PROCESS = "a module process (capa_in_process is false)"


def play(tasks: list[dict], in_process: bool) -> dict:
    return {
        "name": "in process" if in_process else "as a process",
        "hosts": "localhost",
        "gather_facts": False,
        "vars": {"capa_in_process": in_process},
        "tasks": tasks,
    }


def vpc_task(name: str, check: bool = False, **args) -> dict:
    return {
        "name": name,
        MODULE: {"cluster_name": "inproc", "additional_tags": {"team": "a"}, **args},
        "check_mode": check,
        "diff": True,
        "ignore_errors": True,
    }


def run(run_playbook, tmp_path: Path, plays: list[dict]) -> tuple[dict[tuple[str, str], dict], str]:
    """Run the plays with -vvv; (play, task) -> result, and the verbose output (it says how each module ran)."""
    playbook = tmp_path / "plays.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    output = run_playbook(playbook, cwd=tmp_path, args=["-vvv"]).stdout
    # The json callback prints its document last, after the verbose lines.
    start = output.rfind("\n{\n")
    assert start >= 0, output[-3000:]
    document = json.loads(output[start:])
    results = {}
    for p in document["plays"]:
        for task in p["tasks"]:
            results[(p["play"]["name"], task["task"]["name"])] = task["hosts"]["localhost"]
    return results, output[:start]


def comparable(result: dict) -> dict:
    """What a module answers; the controller's own keys about the task (its duration, the action) aside."""
    return {k: v for k, v in result.items() if k not in ("_ansible_no_log", "action", "invocation")}


def test_both_ways_answer_the_same(aws, run_playbook, tmp_path):
    steps = [
        vpc_task("plan", check=True),
        vpc_task("refused", cidr_block="10.0.0.0/33"),
    ]
    plays = [play(steps, True), play(steps, False)]
    plays.append(play([vpc_task("create", secondary_cidr_blocks=["10.1.0.0/16"])], True))
    # The no-ops leave out the secondary block: kept (add-only), with a warning.
    plays += [play([vpc_task("no-op")], True), play([vpc_task("no-op")], False)]
    results, verbose = run(run_playbook, tmp_path, plays)

    for name in ("plan", "refused", "no-op"):
        ours, theirs = results[("in process", name)], results[("as a process", name)]
        assert comparable(ours) == comparable(theirs), name
        assert ours["invocation"] == theirs["invocation"], name
    plan = results[("in process", "plan")]
    assert plan["changed"] is True and plan["plan"][0]["call"] == "ec2:CreateVpc"
    assert plan["diff"]["before"] is None and plan["diff"]["after"]["cidr_block"] == "10.0.0.0/16"
    refused = results[("in process", "refused")]
    assert refused["failed"] is True and refused["field"] == "cidr_block", refused
    created = results[("in process", "create")]
    assert created["changed"] is True and created["vpc"]["id"].startswith("vpc-")
    noop = results[("in process", "no-op")]
    assert noop["changed"] is False and noop["plan"] == [] and noop["vpc"]["id"] == created["vpc"]["id"]
    # The warning is the module's result, both ways, once: no deprecation of a `warnings` key handed to exit_json
    # (ansible-core 2.19 and amazon.aws 10 gave one with every warning: capa._warn, in_process.module_side).
    assert [w for w in noop["warnings"] if "10.1.0.0/16" in w] == noop["warnings"] != [], noop.get("warnings")
    assert "deprecations" not in noop, noop["deprecations"]
    assert "DEPRECATION" not in verbose, verbose[verbose.find("DEPRECATION") - 300 :][:900]
    assert noop["api_calls"] == {
        "ec2:DescribeInternetGateways": 1,
        "ec2:DescribeVpcAttribute": 2,
        "ec2:DescribeVpcs": 1,
    }
    # Each way ran as it says: four tasks in the worker, three as module processes.
    assert verbose.count(IN_PROCESS) == 4 and verbose.count(AS_PROCESS) == 3, re.findall(r"capa_vpc: .*", verbose)
    [vpc] = aws.client("ec2").describe_vpcs(Filters=[{"Name": "tag:Name", "Values": ["inproc-vpc"]}])["Vpcs"]
    assert vpc["VpcId"] == created["vpc"]["id"]


def test_the_tasks_environment_reaches_the_module_for_that_task_only(aws, run_playbook, tmp_path):
    """AWS_REGION from the task's environment: the VPC is made in eu-west-1; the next task, without it, reads
    us-east-1 (the controller's environment) and finds none there."""
    tasks = [
        {**vpc_task("in eu-west-1"), "environment": {"AWS_REGION": "eu-west-1"}},
        vpc_task("read us-east-1", check=True),
    ]
    results, verbose = run(run_playbook, tmp_path, [play(tasks, True)])
    assert verbose.count(IN_PROCESS) == 2
    made = results[("in process", "in eu-west-1")]
    assert made["changed"] is True, made
    [vpc] = aws.client("ec2", region="eu-west-1").describe_vpcs(
        Filters=[{"Name": "tag:Name", "Values": ["inproc-vpc"]}]
    )["Vpcs"]
    assert vpc["VpcId"] == made["vpc"]["id"]
    assert results[("in process", "read us-east-1")]["diff"]["before"] is None
