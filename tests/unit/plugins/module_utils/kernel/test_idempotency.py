"""Writes whose answer was lost: resent by token, adopted by tags, or taken as done by an "already" answer.

A lost answer is a botocore connection error, which ``botocore.stub.Stubber`` cannot produce; these tests drive
``Operations.call`` with a scripted client (same surface as RetryingClient) and check botocore's own retries with a real
client whose sends are dropped by an event hook.
"""

from __future__ import annotations

from types import SimpleNamespace

import boto3
import botocore.endpoint
import botocore.exceptions
import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import idempotency as idem
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import (
    RetryingClient,
    _client_config,
    guard_writes,
    is_lost_response,
)

LOST = botocore.exceptions.ConnectionClosedError(endpoint_url="http://aws")
OWNED = "sigs.k8s.io/cluster-api-provider-aws/cluster/demo"
VPC_TAGS = [{"Key": "Name", "Value": "demo-vpc"}, {"Key": OWNED, "Value": "owned"}]


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(idem, "LOST_RESPONSE_PAUSE", 0.0)


def client_error(code: str) -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError({"Error": {"Code": code, "Message": code}}, "Op")


class Scripted(RetryingClient):
    """A client whose write answers (or raises) from a script and whose describes answer from ``found``.

    A RetryingClient to ``Operations`` (which sends boto3 calls through the lost-answer resolver and other
    endpoints straight), with none of its own behaviour.
    """

    def __init__(self, service: str, operation: str, script: list, found: dict | None = None) -> None:
        self.raw = SimpleNamespace(meta=SimpleNamespace(service_model=SimpleNamespace(service_name=service)))
        self.operation = operation
        self.script = list(script)
        self.found = found or {}
        self.sent: list[dict] = []
        self.described: list[tuple[str, dict]] = []

    def api_name(self, method: str) -> str:
        return self.operation if not method.startswith("describe") else method

    def paginate(self, method: str, **params):
        self.described.append((method, params))
        return self.found

    def without_consistency_retry(self, method: str):
        return getattr(self, method)

    def __getattr__(self, method: str):
        def call(**params):
            self.sent.append(params)
            step = self.script.pop(0)
            if isinstance(step, BaseException):
                raise step
            return step

        return call


@pytest.mark.parametrize(
    "operation, code, done",
    [
        ("DeleteVpc", "InvalidVpcID.NotFound", True),
        ("TerminateInstances", "InvalidInstanceID.NotFound", True),
        ("DeleteSecret", "ResourceNotFoundException", True),
        ("DetachInternetGateway", "Gateway.NotAttached", True),
        ("RevokeSecurityGroupIngress", "InvalidPermission.NotFound", True),
        ("AuthorizeSecurityGroupIngress", "InvalidPermission.Duplicate", True),
        ("AttachInternetGateway", "Resource.AlreadyAssociated", True),
        ("CreateRoute", "RouteAlreadyExists", True),
        ("CreateAutoScalingGroup", "AlreadyExists", True),
        ("CreateRole", "EntityAlreadyExists", True),
        ("CreateVpc", "VpcLimitExceeded", False),
        ("AuthorizeSecurityGroupIngress", "InvalidGroup.NotFound", False),
        ("ModifyVpcAttribute", "InvalidParameterValue", False),
    ],
)
def test_done_already(operation, code, done):
    assert idem.done_already(operation, code) is done


@pytest.mark.parametrize(
    "params, token",
    [
        ({"ClientToken": "t"}, True),
        ({"clientRequestToken": "t"}, True),
        ({"ClientRequestToken": "t"}, True),
        ({"ClientToken": ""}, False),
        ({"CidrBlock": "10.0.0.0/16"}, False),
    ],
)
def test_carries_token(params, token):
    assert idem.carries_token(params) is token


def test_tag_lookup_uses_every_tag_of_the_create():
    params = {"TagSpecifications": [{"ResourceType": "vpc", "Tags": VPC_TAGS}]}
    method, list_key, answer_key, id_key, filters = idem.tag_lookup("ec2", params)
    assert (method, list_key, answer_key, id_key) == ("describe_vpcs", "Vpcs", "Vpc", "VpcId")
    assert filters == [
        {"Name": "tag:Name", "Values": ["demo-vpc"]},
        {"Name": f"tag:{OWNED}", "Values": ["owned"]},
    ]
    assert idem.tag_lookup("elb", params) is None
    assert idem.tag_lookup("ec2", {"TagSpecifications": [{"ResourceType": "natgateway", "Tags": VPC_TAGS}]}) is None
    assert idem.answer_from({"GroupId": "sg-1"}, None) == {"GroupId": "sg-1"}


def call(client, method="do", **params):
    ops = Operations(check_mode=False)
    return ops.call(client, method, resource="r", reason="test", **params), ops


def test_a_tokened_create_is_resent_unchanged_after_a_lost_answer():
    client = Scripted("ec2", "RunInstances", [LOST, {"Instances": [{"InstanceId": "i-1"}]}])
    answer, ops = call(client, ClientToken="capa-1", MinCount=1, MaxCount=1)
    assert answer == {"Instances": [{"InstanceId": "i-1"}]}
    assert client.sent == [{"ClientToken": "capa-1", "MinCount": 1, "MaxCount": 1}] * 2
    assert client.described == [] and ops.lost_responses == ["RunInstances"]


def test_an_untokened_create_that_landed_is_adopted_by_its_tags_not_resent():
    vpc = {"VpcId": "vpc-1", "Tags": VPC_TAGS}
    client = Scripted("ec2", "CreateVpc", [LOST], found={"Vpcs": [vpc]})
    spec = [{"ResourceType": "vpc", "Tags": VPC_TAGS}]
    answer, _ops = call(client, CidrBlock="10.0.0.0/16", TagSpecifications=spec)
    assert answer == {"Vpc": vpc}
    assert len(client.sent) == 1
    assert client.described == [("describe_vpcs", {"Filters": idem.tag_lookup("ec2", {"TagSpecifications": spec})[4]})]


def test_an_untokened_create_that_did_not_land_is_resent():
    client = Scripted("ec2", "AllocateAddress", [LOST, {"AllocationId": "eipalloc-1"}], found={"Addresses": []})
    spec = [{"ResourceType": "elastic-ip", "Tags": VPC_TAGS}]
    answer, _ops = call(client, Domain="vpc", TagSpecifications=spec)
    assert answer == {"AllocationId": "eipalloc-1"} and len(client.sent) == 2


def test_a_lost_address_is_not_taken_for_one_the_run_holds_or_one_in_use():
    spec = [{"ResourceType": "elastic-ip", "Tags": VPC_TAGS}]
    held = {"AllocationId": "eipalloc-1"}
    in_use = {"AllocationId": "eipalloc-0", "AssociationId": "eipassoc-0"}
    landed = {"AllocationId": "eipalloc-2"}
    client = Scripted("ec2", "AllocateAddress", [held, LOST], found={"Addresses": [in_use, held, landed]})
    ops = Operations(check_mode=False)
    first = ops.call(client, "allocate_address", resource="eip", reason="a", Domain="vpc", TagSpecifications=spec)
    second = ops.call(client, "allocate_address", resource="eip", reason="b", Domain="vpc", TagSpecifications=spec)
    assert (first, second) == (held, landed)
    assert ops.claimed == {"eipalloc-1", "eipalloc-2"} and len(client.sent) == 2


@pytest.mark.parametrize(
    "state, adopted",
    [
        ("available", True),
        ("pending", True),
        ("deleting", False),
        ("deleted", False),
        ("failed", False),
        ({"Name": "terminated"}, False),
        ({"Name": "shutting-down"}, False),
        ({"Name": "running"}, True),
    ],
)
def test_a_resource_on_its_way_out_is_never_adopted(state, adopted):
    found = [{"SubnetId": "subnet-old", "State": state}]
    assert (idem.pick_landed(found, "SubnetId", set()) is not None) is adopted


@pytest.mark.parametrize(
    "operation, code",
    [("DeleteSubnet", "InvalidSubnetID.NotFound"), ("AuthorizeSecurityGroupIngress", "InvalidPermission.Duplicate")],
)
def test_an_already_done_answer_to_a_resend_is_success(operation, code):
    client = Scripted("ec2", operation, [LOST, client_error(code)])
    answer, _ops = call(client, GroupId="sg-1")
    assert answer == {} and len(client.sent) == 2


def test_an_already_done_answer_without_a_lost_attempt_is_an_error():
    client = Scripted("ec2", "AuthorizeSecurityGroupIngress", [client_error("InvalidPermission.Duplicate")])
    with pytest.raises(botocore.exceptions.ClientError):
        call(client, GroupId="sg-1")


def test_answers_lost_every_time_end_in_the_error():
    client = Scripted("ec2", "ModifyVpcAttribute", [LOST] * idem.LOST_RESPONSE_ATTEMPTS)
    with pytest.raises(botocore.exceptions.ConnectionClosedError):
        call(client, VpcId="vpc-1")
    assert len(client.sent) == idem.LOST_RESPONSE_ATTEMPTS


def test_check_mode_sends_nothing():
    client = Scripted("ec2", "CreateVpc", [])
    ops = Operations(check_mode=True)
    assert ops.call(client, "create_vpc", resource="r", reason="x", predicted={"Vpc": {}}) == {"Vpc": {}}
    assert client.sent == []


def test_lost_response_errors():
    assert is_lost_response(LOST)
    assert is_lost_response(botocore.exceptions.ReadTimeoutError(endpoint_url="http://aws"))
    assert not is_lost_response(botocore.exceptions.EndpointConnectionError(endpoint_url="http://aws"))
    assert not is_lost_response(client_error("Throttling"))


@pytest.mark.parametrize("operation, attempts", [("create_vpc", 1), ("describe_vpcs", 5)])
def test_botocore_resends_a_read_but_not_a_write_whose_answer_was_lost(monkeypatch, operation, attempts):
    """A real client with the session's retry config: a dropped connection on every attempt."""
    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda seconds: None)
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    client = guard_writes(session.client("ec2", config=_client_config("clusterapi.aws", None)))
    sent = []

    def drop(request, **kwargs):
        sent.append(request.url)
        raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)

    client.meta.events.register("before-send.ec2", drop)
    params = {"CidrBlock": "10.0.0.0/16"} if operation == "create_vpc" else {}
    with pytest.raises(botocore.exceptions.ConnectionClosedError):
        getattr(client, operation)(**params)
    assert len(sent) == attempts


def test_other_failures_of_a_write_are_still_retried_by_botocore(monkeypatch):
    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda seconds: None)
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    client = guard_writes(session.client("ec2", config=_client_config("clusterapi.aws", None)))
    sent = []

    def refuse(request, **kwargs):
        sent.append(request.url)
        raise botocore.exceptions.EndpointConnectionError(endpoint_url=request.url)  # never reached AWS

    client.meta.events.register("before-send.ec2", refuse)
    with pytest.raises(botocore.exceptions.EndpointConnectionError):
        client.create_vpc(CidrBlock="10.0.0.0/16")
    assert len(sent) == 5


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **kwargs):
        yield self.data


def test_a_delete_resent_after_a_lost_answer_takes_not_found_at_once(monkeypatch):
    """Real RetryingClient: the first DeleteSubnet's answer is lost, the resend hears InvalidSubnetID.NotFound.

    NotFound is an eventual-consistency code for writes; retrying it on the resend would only resend the delete
    again and again (each resend a new chance to lose the answer, botocore retries times our attempts).
    """
    import botocore.awsrequest

    from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient

    monkeypatch.setattr(botocore.endpoint.time, "sleep", lambda seconds: None)
    session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
    client = RetryingClient(guard_writes(session.client("ec2", config=_client_config("clusterapi.aws", None))))
    sent = []
    not_found = (
        b"<Response><Errors><Error><Code>InvalidSubnetID.NotFound</Code><Message>gone</Message></Error></Errors>"
        b"<RequestID>1</RequestID></Response>"
    )

    def answer(request, **kwargs):
        sent.append(request.url)
        if len(sent) == 1:
            raise botocore.exceptions.ConnectionClosedError(endpoint_url=request.url)
        return botocore.awsrequest.AWSResponse(request.url, 400, {}, _Body(not_found))

    client.meta.events.register("before-send.ec2", answer)
    ops = Operations(check_mode=False)
    assert ops.call(client, "delete_subnet", resource="subnet-1", reason="test", SubnetId="subnet-1") == {}
    assert len(sent) == 2 and ops.lost_responses == ["DeleteSubnet"]


def test_a_client_token_is_new_for_each_create_and_short():
    """A NAT gateway re-created in the same subnet with the same EIP after a delete must not get the deleted
    gateway back: AWS answers a known token with the first resource it made."""
    token = idem.new_client_token()
    assert len(token) <= 64 and token.isascii()
    assert token != idem.new_client_token()
