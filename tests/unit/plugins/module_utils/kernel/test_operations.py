# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one gate for a mutation: refusals that are answers, retries on a condition, local files, placeholders.

The AWS side runs against botocore's Stubber (it checks each request against AWS's service model).
"""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils import capa
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import (
    Operations,
    is_placeholder,
    placeholder,
    placeholders_in,
)
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import ApiCallRecorder, RetryingClient


def stubbed(service: str) -> tuple[RetryingClient, Stubber]:
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    raw = session.client(service)
    return RetryingClient(raw, retries=1), Stubber(raw)


def stubbed_ec2() -> tuple[RetryingClient, Stubber, ApiCallRecorder]:
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    recorder = ApiCallRecorder()
    recorder.attach(session)
    raw = session.client("ec2")
    return RetryingClient(raw, retries=3), Stubber(raw), recorder


def test_placeholders_are_found_with_their_option_path():
    params = {
        "vpc_id": "vpc-1",
        "subnets": [{"id": "subnet-1"}, {"id": "planned:subnet:demo-subnet-public-us-east-1a"}],
        "bootstrap": {"endpoint_host": "planned:dns:demo-apiserver"},
    }
    assert list(placeholders_in(params)) == [
        ("subnets[1].id", "planned:subnet:demo-subnet-public-us-east-1a"),
        ("bootstrap.endpoint_host", "planned:dns:demo-apiserver"),
    ]


def test_the_runner_refuses_placeholders_outside_check_mode_naming_the_option():
    with pytest.raises(SpecError) as refused:
        capa._refuse_placeholders({"security_group_ids": ["sg-1", "planned:sg:demo-node"]})
    assert refused.value.field == "security_group_ids[1]"
    assert "planned:sg:demo-node" in str(refused.value)
    capa._refuse_placeholders({"security_group_ids": ["sg-1"]})  # real ids pass


def test_a_refusal_that_is_an_answer_leaves_the_plan():
    client, stub = stubbed("secretsmanager")
    stub.add_client_error("create_secret", "ResourceExistsException", "exists")
    ops = Operations(check_mode=False)
    with stub:
        answer = ops.call_unless_refused(
            client, "create_secret", "s", "missing", refused=("ResourceExistsException",), Name="s", SecretString="x"
        )
    assert answer is None
    assert ops.plan == [] and not ops.changed


def test_other_refusals_still_fail_and_stay_in_the_plan():
    client, stub = stubbed("secretsmanager")
    stub.add_client_error("create_secret", "AccessDeniedException", "no")
    ops = Operations(check_mode=False)
    with stub, pytest.raises(Exception, match="AccessDenied"):
        ops.call_unless_refused(
            client, "create_secret", "s", "missing", refused=("ResourceExistsException",), Name="s", SecretString="x"
        )
    assert [p.call for p in ops.plan] == ["secretsmanager:CreateSecret"]


def test_a_call_retried_on_a_condition_is_planned_once():
    client, stub = stubbed("eks")
    request = {"name": "c", "roleArn": "arn:aws:iam::123456789012:role/r", "resourcesVpcConfig": {}}
    for _attempt in range(2):
        stub.add_client_error("create_cluster", "InvalidParameterException", "Role cannot be assumed")
    stub.add_response("create_cluster", {"cluster": {"name": "c"}}, request)
    paused: list[float] = []
    ops = Operations(check_mode=False, remaining=lambda: 100.0, sleep=paused.append)
    with stub:
        answer = ops.call(
            client,
            "create_cluster",
            "c",
            "missing",
            retry_if=lambda e: "role" in str(e).lower(),
            retry_delay=3.0,
            **request,
        )
    assert answer == {"cluster": {"name": "c"}}
    assert [p.call for p in ops.plan] == ["eks:CreateCluster"]
    assert paused == [3.0, 3.0]  # on the run's clock (the context's sleep), not time.sleep


def test_the_retry_stops_when_the_budget_is_spent():
    client, stub = stubbed("eks")
    stub.add_client_error("create_cluster", "InvalidParameterException", "Role cannot be assumed")
    ops = Operations(check_mode=False, remaining=lambda: 1.0)
    with stub, pytest.raises(Exception, match="cannot be assumed"):
        ops.call(
            client,
            "create_cluster",
            "c",
            "missing",
            retry_if=lambda e: True,
            retry_delay=5.0,
            name="c",
            roleArn="arn:aws:iam::123456789012:role/r",
            resourcesVpcConfig={},
        )


def test_a_file_with_the_same_content_is_no_change(tmp_path: Path):
    path = tmp_path / "out" / "kubeconfig"
    ops = Operations(check_mode=False)
    assert ops.write_file(path, "a", "kubeconfig") is True
    assert path.read_text() == "a" and oct(path.stat().st_mode & 0o777) == "0o600"
    assert ops.write_file(path, "a", "kubeconfig") is False
    assert [(p.call, p.reason) for p in ops.plan] == [("file:WriteFile", "kubeconfig missing")]
    assert ops.write_file(path, "b", "kubeconfig") is True
    assert ops.plan[-1].reason == "kubeconfig differs"
    assert ops.write_file(path, "c", "kubeconfig", reason="client certificate expires soon") is True
    assert ops.plan[-1].reason == "client certificate expires soon"
    assert ops.write_file(path, "c", "kubeconfig", reason="client certificate expires soon") is False


def test_check_mode_plans_file_writes_and_deletes_without_touching_the_disk(tmp_path: Path):
    path = tmp_path / "kubeconfig"
    ops = Operations(check_mode=True)
    assert ops.write_file(path, "a", "kubeconfig") is True
    assert not path.exists()
    path.write_text("x")
    assert ops.delete_file(path, "state absent") is True
    assert path.exists()
    ops.write_output(path, "token")
    assert path.read_text() == "x"
    assert [p.call for p in ops.plan] == ["file:WriteFile", "file:DeleteFile"]


class TestOperations:
    def test_check_mode_plans_and_returns_the_prediction_without_calling(self):
        ec2, stubber, recorder = stubbed_ec2()
        ops = Operations(check_mode=True)
        with stubber:  # no response queued: any real call would fail
            result = ops.call(
                ec2,
                "create_vpc",
                resource="demo-vpc",
                reason="missing",
                predicted={"Vpc": {"VpcId": placeholder("vpc", "demo-vpc")}},
                CidrBlock="10.0.0.0/16",
            )
        assert is_placeholder(result["Vpc"]["VpcId"])
        assert ops.plan_as_list() == [{"call": "ec2:CreateVpc", "resource": "demo-vpc", "reason": "missing"}]
        assert recorder.as_dict() == {}
        assert ops.changed

    def test_apply_makes_the_call_and_records_it(self):
        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_response("create_vpc", {"Vpc": {"VpcId": "vpc-12345678"}}, {"CidrBlock": "10.0.0.0/16"})
        ops = Operations(check_mode=False)
        with stubber:
            result = ops.call(ec2, "create_vpc", resource="demo-vpc", reason="missing", CidrBlock="10.0.0.0/16")
        assert result["Vpc"]["VpcId"] == "vpc-12345678"
        assert recorder.as_dict() == {"ec2:CreateVpc": 1}
        assert recorder.mutating() == {"ec2:CreateVpc": 1}

    def test_no_call_no_change(self):
        assert not Operations(check_mode=False).changed
