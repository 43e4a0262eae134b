# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Self-healing machine groups: capa_instance against the moto server, with machines stopped or terminated behind
the module's back (boto3, between runs).

moto always reports a running instance's status checks as ``ok``; the ``impaired`` path is covered with
botocore's Stubber in tests/unit/plugins/module_utils/test_self_healing.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from cluster_helpers import module_network

CLUSTER = "heal-it"
MODULE = "clusterapi.aws.capa_instance"
GROUP_TAG = "clusterapi.aws/machine-group"


def _instances(aws, group: str, states=("pending", "running", "stopping", "stopped")) -> list[dict[str, Any]]:
    reservations = aws.client("ec2").describe_instances(
        Filters=[
            {"Name": f"tag:{GROUP_TAG}", "Values": [group]},
            {"Name": "instance-state-name", "Values": list(states)},
        ]
    )["Reservations"]
    return [i for r in reservations for i in r["Instances"]]


def _args(network: dict[str, Any], group: str, **extra: Any) -> dict[str, Any]:
    base = {
        "cluster_name": CLUSTER,
        "name": group,
        "role": "node",
        "replicas": 3,
        "kubernetes_version": "v1.31.2",
        "instance_type": "t3.large",
        "subnets": network["subnets"],
        "security_group_ids": [network["groups"]["node"]["id"]],
        "bootstrap": {"type": "none"},
        "wait_timeout": 30,
    }
    base.update(extra)
    return base


def _ok(run_module, module_args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = run_module(MODULE, module_args, **kw)
    assert not result.get("failed"), result
    return result


def _calls(result: dict[str, Any]) -> list[str]:
    return [p["call"] for p in result["plan"]]


@pytest.fixture(scope="module")
def shared(moto_server, tmp_path_factory):
    """One moto state and one network for the whole file (each test uses its own machine group)."""
    # The harness (tests/conftest.py) is not importable by name next to tests/integration/conftest.py; its
    # helpers are reached through the module that defines the session's moto server.
    harness = SimpleNamespace(**type(moto_server).__init__.__globals__)
    moto_server.reset()
    tmp = tmp_path_factory.mktemp("heal")
    env = {"AWS_ENDPOINT_URL": moto_server.url, **harness.AWS_TEST_ENV}
    env["AWS_CONFIG_FILE"] = str(tmp / "aws-config-absent")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp / "aws-credentials-absent")
    with pytest.MonkeyPatch.context() as patch:
        for name in harness.AWS_ENV_TO_CLEAR:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        yield harness.AwsEnv(server=moto_server, env=env), module_network(harness.run_module_cmd, CLUSTER)


def test_stopped_worker_is_replaced_and_check_mode_only_plans_it(shared, run_module):
    aws, network = shared
    group = "md-stop"
    _ok(run_module, _args(network, group))
    victim = sorted(i["InstanceId"] for i in _instances(aws, group))[0]
    aws.client("ec2").stop_instances(InstanceIds=[victim])

    aws.reset_requests()
    planned = _ok(run_module, _args(network, group), check=True)
    assert aws.mutating_requests() == []
    assert planned["changed"] and _calls(planned) == ["ec2:TerminateInstances", "ec2:RunInstances"]
    assert planned["plan"][0]["reason"].startswith("unhealthy: ") and "instance stopped" in planned["plan"][0]["reason"]
    assert planned["health"]["unhealthy"] == [
        {"id": victim, "name": planned["health"]["unhealthy"][0]["name"], "reason": "instance stopped"}
    ]
    assert planned["health"]["allowed"] and len(planned["health"]["remediated"]) == 1

    aws.reset_requests()
    healed = _ok(run_module, _args(network, group))
    calls = healed["api_calls"]
    print(f"healing run: plan {_calls(healed)}, requests {calls}")
    assert _calls(healed) == ["ec2:TerminateInstances", "ec2:RunInstances"]
    # The health read is one DescribeInstanceStatus for the whole group.
    assert calls["ec2:DescribeInstanceStatus"] == 1, calls
    running = _instances(aws, group, states=("pending", "running"))
    assert len(running) == 3 and victim not in {i["InstanceId"] for i in running}
    assert _instances(aws, group, states=("stopped",)) == []
    assert healed["replicas"]["ready"] == 3

    again = _ok(run_module, _args(network, group))
    print(f"no-op run after healing: requests {again['api_calls']}")
    assert not again["changed"] and again["plan"] == [] and again["health"]["unhealthy"] == []


def test_terminated_worker_is_simply_replaced(shared, run_module):
    aws, network = shared
    group = "md-term"
    _ok(run_module, _args(network, group, replicas=2))
    victim = sorted(i["InstanceId"] for i in _instances(aws, group))[0]
    aws.client("ec2").terminate_instances(InstanceIds=[victim])

    planned = _ok(run_module, _args(network, group, replicas=2), check=True)
    assert _calls(planned) == ["ec2:RunInstances"]
    healed = _ok(run_module, _args(network, group, replicas=2))
    assert _calls(healed) == ["ec2:RunInstances"]
    running = _instances(aws, group, states=("pending", "running"))
    assert len(running) == 2 and victim not in {i["InstanceId"] for i in running}


def test_max_unhealthy_holds_remediation_back_and_says_why(shared, run_module):
    aws, network = shared
    group = "md-guard"
    _ok(run_module, _args(network, group))
    victims = sorted(i["InstanceId"] for i in _instances(aws, group))[:2]
    aws.client("ec2").stop_instances(InstanceIds=victims)

    aws.reset_requests()
    held = _ok(run_module, _args(network, group, max_unhealthy=1))
    assert aws.mutating_requests() == []
    assert not held["changed"] and held["plan"] == []
    health = held["health"]
    assert not health["allowed"] and health["remediated"] == []
    assert sorted(u["id"] for u in health["unhealthy"]) == victims
    assert health["skipped_reason"] == (
        "2 of 3 machines are unhealthy, more than max_unhealthy 1 (1): remediation is held back"
    )
    assert any("remediation is held back" in w for w in held.get("warnings", [])), held.get("warnings")
    assert len(_instances(aws, group, states=("stopped",))) == 2

    # The same two with the default guard (100%) are both replaced.
    healed = _ok(run_module, _args(network, group))
    assert sorted(healed["health"]["remediated"]) == sorted(u["name"] for u in health["unhealthy"])
    assert _instances(aws, group, states=("stopped",)) == []
    assert len(_instances(aws, group, states=("pending", "running"))) == 3
