"""The make demo HA cluster converges under injected faults, with exactly the resources its spec asks for.

tools/moto_server.py's fault injector answers a seeded share of the modules' requests with throttling errors (in
each protocol's own format), HTTP 500/503, or forwards them to moto and drops the connection without an answer
(applied, never heard). site.yml must converge within two runs and leave no duplicate; a fault-free run after it
must change nothing; delete.yml under the same faults must leave nothing tagged for the cluster.
"""

from __future__ import annotations

import time

import boto3
import botocore.config
import botocore.exceptions
import pytest
from cluster_helpers import write_inventory
from reliability import (
    DELETE,
    SITE,
    SMALL_EXPECTED,
    Faults,
    census,
    counts,
    demo_spec,
    small_spec,
    tagged_anywhere,
    write_figures,
)

SEED = 20261129
RATES = {"throttle": 0.10, "error": 0.03, "drop": 0.03}

# What the demo spec (examples/inventory.yml, host demo) asks for, by kind: 3 AZs with a public and a private
# subnet each, a NAT gateway (and its EIP) per AZ, a route table per subnet, the five role security groups, the
# classic API load balancer, 3 control-plane machines, a bastion, md-0 with 2 workers, the ASG pool mp-0 (2) with
# its launch template, the fleet pool fp-0 (2) with its launch template (moto's fleet instances carry the owned
# tag but not the machine-group tag: "other"), and the owned secrets: the PKI, kubeadm init's token (the joins of
# this build without the Kubernetes API use it) and the bootstrap data (one per machine but the bastion's, one per
# launch template version): 12.
DEMO_EXPECTED = {
    "auto_scaling_group": 1,
    "classic_elb": 1,
    "eip": 3,
    "fleet": 1,
    "instance": 10,
    "instance:bastion": 1,
    "instance:control-plane": 3,
    "instance:md-0": 2,
    "instance:mp-0": 2,
    "instance:other": 2,
    "internet_gateway": 1,
    "launch_template": 2,
    "nat_gateway": 3,
    "route_table": 6,
    "secret": 12,
    "security_group": 5,
    "subnet": 6,
    "vpc": 1,
}


@pytest.mark.parametrize(
    "service, call, code, status",
    [
        ("ec2", lambda c: c.describe_vpcs(), "RequestLimitExceeded", 503),
        ("elb", lambda c: c.describe_load_balancers(), "Throttling", 400),
        ("autoscaling", lambda c: c.describe_auto_scaling_groups(), "Throttling", 400),
        ("sts", lambda c: c.get_caller_identity(), "Throttling", 400),
        ("secretsmanager", lambda c: c.list_secrets(), "ThrottlingException", 400),
        ("eks", lambda c: c.list_clusters(), "ThrottlingException", 429),
    ],
)
def test_injected_throttling_speaks_each_protocol(aws, service, call, code, status):
    """Every request of a client that says clusterapi.aws is throttled at rate 1; others pass."""
    faults = Faults(aws.url)
    faults.configure(seed=1, throttle=1.0)
    try:
        client = boto3.client(
            service,
            endpoint_url=aws.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=botocore.config.Config(user_agent_extra="clusterapi.aws", retries={"total_max_attempts": 1}),
        )
        with pytest.raises(botocore.exceptions.ClientError) as caught:
            call(client)
        assert caught.value.response["Error"]["Code"] == code
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
        call(aws.client(service))  # the test's own client is never faulted
        assert faults.status()["injected"]["throttle"] == 1
    finally:
        faults.off()


def test_a_dropped_answer_was_applied(aws):
    faults = Faults(aws.url)
    faults.configure(seed=1, drop=1.0)
    try:
        client = boto3.client(
            "ec2",
            endpoint_url=aws.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=botocore.config.Config(user_agent_extra="clusterapi.aws", retries={"total_max_attempts": 1}),
        )
        with pytest.raises(botocore.exceptions.ConnectionClosedError):
            client.create_vpc(CidrBlock="10.9.0.0/16")
        assert [v["CidrBlock"] for v in aws.client("ec2").describe_vpcs()["Vpcs"] if not v["IsDefault"]] == [
            "10.9.0.0/16"
        ]
        assert faults.status()["by_operation"] == {
            "ec2:CreateVpc": {"drop": 1, "error500": 0, "error503": 0, "throttle": 0}
        }
    finally:
        faults.off()


def dropped(status):
    """The operations whose answers the injector dropped (after moto applied them)."""
    return sorted(op for op, kinds in status["by_operation"].items() for _n in range(kinds["drop"]))


def test_demo_cluster_converges_under_faults(aws, run_playbook, tmp_path):
    spec = demo_spec("demo")
    inventory = write_inventory(tmp_path, spec)
    faults = Faults(aws.url)
    figures = {"cluster": "demo", "seed": SEED, "rates": RATES}
    started = time.monotonic()

    runs, status = converge(run_playbook, SITE, inventory, faults, seed=SEED, **RATES)
    figures["site"] = {
        "runs_to_converge": runs,
        "requests": status["requests"],
        "faults": status["injected"],
        "faulted_operations": len(status["by_operation"]),
        "dropped": dropped(status),
        "failures": status["failures"],
    }
    assert sum(status["injected"].values()) > 0

    found = census(aws, "demo")
    figures["resources"] = counts(found)
    duplicates = {k: v - DEMO_EXPECTED.get(k, 0) for k, v in counts(found).items() if v != DEMO_EXPECTED.get(k, 0)}
    figures["duplicates"] = duplicates
    assert counts(found) == DEMO_EXPECTED, duplicates

    # Converged means a fault-free run has nothing left to do.
    aws.reset_requests()
    again = run_playbook(SITE, inventory=inventory)
    assert again.changed == 0, [t.name for t in again.changed_tasks]
    assert aws.mutating_requests() == []

    runs, status = converge(run_playbook, DELETE, inventory, faults, seed=SEED + 1, **RATES)
    left = census(aws, "demo")
    figures["delete"] = {
        "runs_to_converge": runs,
        "requests": status["requests"],
        "faults": status["injected"],
        "dropped": dropped(status),
        "failures": status["failures"],
        "resources_left": sum(len(v) for k, v in left.items() if not k.startswith("instance:")),
        "tagged_left": tagged_anywhere(aws, "demo"),
    }
    figures["seconds"] = round(time.monotonic() - started, 1)
    write_figures("faults", figures)
    assert left == {} and figures["delete"]["tagged_left"] == []


def converge(run_playbook, playbook, inventory, faults, **config):
    """Run ``playbook`` under ``config`` faults until it succeeds, twice at most; (runs, injector status).

    The status carries ``failures``: the message of each failed task of a run that did not succeed."""
    faults.configure(**config)
    try:
        runs, failures = [], []
        for _attempt in range(2):
            result = run_playbook(playbook, inventory=inventory, expect_rc=None)
            runs.append(result.rc)
            if result.rc == 0:
                break
            failures += [f"{t.name}: {str(t.result.get('msg'))[:300]}" for t in result.tasks if t.failed]
        status = faults.status() | {"failures": failures}
    finally:
        faults.off()
    assert runs[-1] == 0, f"{playbook.name} did not converge in {len(runs)} runs under faults\n{result.describe()}"
    return len(runs), status


def test_lost_answers_to_a_third_of_the_writes_make_no_duplicate(aws, run_playbook, tmp_path):
    """Every tier's creates, attaches and deletes lose their answer often: tokens, tags and "already done"
    answers (Operations.call) must keep the result exact."""
    started = time.monotonic()
    inventory = write_inventory(tmp_path, small_spec("lost"))
    faults = Faults(aws.url)
    runs, status = converge(run_playbook, SITE, inventory, faults, seed=SEED, drop_writes=0.33)
    found = counts(census(aws, "lost"))
    figures = {
        "cluster": "small (1 AZ)",
        "site": {
            "runs_to_converge": runs,
            "requests": status["requests"],
            "writes": status["mutating"],
            "failures": status["failures"],
        },
        "site_dropped": dropped(status),
        "resources": found,
    }
    assert found == SMALL_EXPECTED
    runs, status = converge(run_playbook, DELETE, inventory, faults, seed=SEED + 1, drop_writes=0.33)
    figures["delete"] = {
        "runs_to_converge": runs,
        "requests": status["requests"],
        "writes": status["mutating"],
        "failures": status["failures"],
    }
    figures["delete_dropped"] = dropped(status)
    figures["resources_left"] = counts(census(aws, "lost"))
    figures["tagged_left"] = tagged_anywhere(aws, "lost")
    figures["seconds"] = round(time.monotonic() - started, 1)
    write_figures("lost_writes", figures)
    assert figures["resources_left"] == {} and figures["tagged_left"] == []
