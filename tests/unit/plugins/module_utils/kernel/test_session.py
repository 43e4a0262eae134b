# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The session: its retrying clients (throttling, eventual consistency on writes only, pagination, the call
recorder) and AwsSession.assume - the AssumeRole requests of an identity chain (botocore Stubber: moto does not
report the session name or duration it was asked for) and the refusal message."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import session as _connection
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import (
    ApiCallRecorder,
    RetryingClient,
    is_read_operation,
)

EXPIRY = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)


def stubbed_ec2() -> tuple[RetryingClient, Stubber, ApiCallRecorder]:
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    recorder = ApiCallRecorder()
    recorder.attach(session)
    raw = session.client("ec2")
    return RetryingClient(raw, retries=3), Stubber(raw), recorder


def credentials(n: int) -> dict:
    return {
        "Credentials": {
            "AccessKeyId": f"ASIA{n:016d}",
            "SecretAccessKey": "secret",
            "SessionToken": f"token-{n}",
            "Expiration": EXPIRY,
        }
    }


def session() -> _connection.AwsSession:
    return _connection.AwsSession("us-east-1", None, {"aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": "x"})


def test_chain_assumes_source_first_with_each_links_parameters(monkeypatch):
    identity = {
        "role_arn": "arn:aws:iam::222222222222:role/target",
        "external_id": "ext-b",
        "session_name": None,
        "duration_seconds": 1800,
        "source_identity": {
            "role_arn": "arn:aws:iam::111111111111:role/hop",
            "external_id": "ext-hop",
            "session_name": "hop-session",
            "duration_seconds": 900,
        },
    }
    aws = session()
    expected = [
        {
            "RoleArn": "arn:aws:iam::111111111111:role/hop",
            "RoleSessionName": "hop-session",
            "DurationSeconds": 900,
            "ExternalId": "ext-hop",
        },
        {
            "RoleArn": "arn:aws:iam::222222222222:role/target",
            "RoleSessionName": "capa-c1",
            "DurationSeconds": 1800,
            "ExternalId": "ext-b",
        },
    ]
    seen = []
    original = aws.client

    def client(service, region=None):
        wrapped = original(service, region)
        if service == "sts" and not getattr(wrapped.raw, "_capa_stubbed", False):
            stubber = Stubber(wrapped.raw)
            n = len(seen)
            stubber.add_response("assume_role", credentials(n), expected[n])
            stubber.activate()
            wrapped.raw._capa_stubbed = True
            seen.append(stubber)
        return wrapped

    monkeypatch.setattr(aws, "client", client)
    aws.assume(identity, default_session_name="capa-c1")
    assert len(seen) == 2
    for stubber in seen:
        stubber.assert_no_pending_responses()
    assert aws.credentials().token == "token-1"  # the last link's credentials sign everything after


def test_refusal_names_the_role_and_the_trust_policy():
    aws = session()
    sts = aws.client("sts")
    stubber = Stubber(sts.raw)
    stubber.add_client_error(
        "assume_role",
        service_error_code="AccessDenied",
        service_message="User: arn:aws:iam::123456789012:user/ops is not authorized to perform: sts:AssumeRole",
        http_status_code=403,
    )
    stubber.activate()
    role = {"role_arn": "arn:aws:iam::111111111111:role/team-a", "external_id": "guess", "duration_seconds": 900}
    with pytest.raises(_connection.IdentityRefused) as refused:
        aws.assume(role, default_session_name="capa-c1")
    message = str(refused.value)
    assert refused.value.role_arn == role["role_arn"] and refused.value.code == "AccessDenied"
    assert message.startswith("could not assume role arn:aws:iam::111111111111:role/team-a (with an external id)")
    assert "AccessDenied" in message and "trust policy" in message and "external id" in message


KEYS = {"aws_access_key_id": "ASIAJOB", "aws_secret_access_key": "s", "aws_session_token": None}


@pytest.mark.parametrize(
    "params, environ, token",
    [
        # AWX injects AWS_SECURITY_TOKEN beside the keys: it is their token.
        (KEYS, {"AWS_ACCESS_KEY_ID": "ASIAJOB", "AWS_SECURITY_TOKEN": "t-awx"}, "t-awx"),
        (KEYS, {"AWS_ACCESS_KEY_ID": "ASIAJOB", "EC2_SECURITY_TOKEN": "t-ec2"}, "t-ec2"),
        # AWS_SESSION_TOKEN set, even empty, decides.
        (KEYS, {"AWS_ACCESS_KEY_ID": "ASIAJOB", "AWS_SESSION_TOKEN": "", "AWS_SECURITY_TOKEN": "t-awx"}, None),
        # Keys given as options (not the environment's) never get the environment's token.
        (KEYS, {"AWS_ACCESS_KEY_ID": "AKIAOTHER", "AWS_SECURITY_TOKEN": "t-awx"}, None),
        (
            dict(KEYS, aws_session_token="t-option"),
            {"AWS_ACCESS_KEY_ID": "ASIAJOB", "AWS_SECURITY_TOKEN": "x"},
            "t-option",
        ),
        ({"profile_name": "p"}, {"AWS_SECURITY_TOKEN": "t-awx"}, None),
        (KEYS, {"AWS_ACCESS_KEY_ID": "ASIAJOB"}, None),
    ],
)
def test_legacy_session_token(params, environ, token):
    assert _connection.with_legacy_session_token(params, environ).get("aws_session_token") == token


class TestRetries:
    def test_throttling_is_retried_and_each_attempt_recorded(self):
        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_client_error("describe_vpcs", "RequestLimitExceeded", http_status_code=503)
        stubber.add_response("describe_vpcs", {"Vpcs": []})
        with stubber:
            assert ec2.describe_vpcs()["Vpcs"] == []
        assert recorder.as_dict() == {"ec2:DescribeVpcs": 2}

    def test_eventual_consistency_codes_are_retried_on_writes_only(self):
        ec2, stubber, _recorder = stubbed_ec2()
        stubber.add_client_error("create_subnet", "InvalidVpcID.NotFound")
        stubber.add_response("create_subnet", {"Subnet": {"SubnetId": "subnet-12345678"}})
        with stubber:
            assert ec2.create_subnet(VpcId="vpc-12345678", CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]

        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_client_error("describe_vpcs", "InvalidVpcID.NotFound")
        with stubber, pytest.raises(Exception, match="InvalidVpcID.NotFound"):
            ec2.describe_vpcs(VpcIds=["vpc-12345678"])  # a NotFound answer to a read is final
        assert recorder.as_dict() == {"ec2:DescribeVpcs": 1}

    def test_an_unreadable_answer_to_a_read_is_asked_again_and_to_a_write_is_not(self):
        """A server's HTML error page (moto's own 500 page, a proxy's) makes botocore raise ResponseParserError, which
        no retry of botocore's or AWSRetry's catches: a read takes it as a transient InternalError, a write (whose
        answer is lost) raises it as it came. The answers come through botocore's real parser (a before-send hook
        stands for the wire: Stubber hands over parsed answers)."""
        from botocore.awsrequest import AWSResponse

        class Raw:
            def __init__(self, body: bytes) -> None:
                self.body = body

            def stream(self, *_args, **_kwargs):
                yield self.body

        html = b"<!doctype html><title>500 Internal Server Error</title><h1>Internal Server Error</h1>"
        zones = (
            b'<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r'
            b"</requestId><availabilityZoneInfo><item><zoneName>us-east-1a</zoneName></item></availabilityZoneInfo>"
            b"</DescribeAvailabilityZonesResponse>"
        )
        answers = [(500, html), (500, html), (200, zones)]
        session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
        raw = session.client("ec2", config=_connection._client_config("test", None))
        sent: list[str] = []

        def wire(request, **_kwargs):
            sent.append(request.url)
            status, body = answers.pop(0) if answers else (500, html)
            return AWSResponse(request.url, status, {}, Raw(body))

        raw.meta.events.register("before-send.ec2", wire)
        ec2 = RetryingClient(raw, retries=3)
        assert [z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]] == ["us-east-1a"]
        assert len(sent) == 3
        with pytest.raises(Exception, match="ResponseParserError|Unable to parse"):
            ec2.create_vpc(CidrBlock="10.0.0.0/16")
        assert len(sent) == 4  # the write went once

    def test_paginate_merges_pages(self):
        ec2, stubber, recorder = stubbed_ec2()
        stubber.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-1"}], "NextToken": "t"})
        stubber.add_response("describe_subnets", {"Subnets": [{"SubnetId": "subnet-2"}]})
        with stubber:
            subnets = ec2.paginate("describe_subnets")["Subnets"]
        assert [s["SubnetId"] for s in subnets] == ["subnet-1", "subnet-2"]
        assert recorder.as_dict() == {"ec2:DescribeSubnets": 2}

    @pytest.mark.parametrize(
        "op, read",
        [
            ("DescribeVpcs", True),
            ("ListTags", True),
            ("GetParameter", True),
            ("HeadObject", True),
            ("CreateVpc", False),
            ("DeleteVpc", False),
            ("AuthorizeSecurityGroupIngress", False),
        ],
    )
    def test_read_operations(self, op, read):
        assert is_read_operation(op) is read
