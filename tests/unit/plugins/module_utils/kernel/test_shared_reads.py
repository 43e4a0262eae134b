# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Reads handed from one module run to the next (kernel/shared_reads.py), on a real boto3 session.

AWS's side is a fake at the HTTP layer (botocore's ``before-send`` event): it answers EC2's XML for the few
operations used here and records every request that actually went out, so "answered without a request" is what
the wire saw. (botocore's Stubber cannot show it: it checks every call before any handler may answer it.)
"""

from __future__ import annotations

import datetime
import json
import urllib.parse

import pytest
from botocore.awsrequest import AWSResponse

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel import shared_reads as sr
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

OWNED = [{"Name": "tag:sigs.k8s.io/cluster-api-provider-aws/cluster/c1", "Values": ["owned"]}]
LAUNCHED = datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.timezone.utc)
XML = {
    "DescribeInstances": "<reservationSet><item><reservationId>r-1</reservationId><instancesSet><item>"
    "<instanceId>i-1</instanceId><launchTime>2026-12-01T10:00:00.000Z</launchTime></item></instancesSet>"
    "</item></reservationSet>",
    "DescribeImages": "<imagesSet><item><imageId>ami-1</imageId></item></imagesSet>",
    "CreateTags": "<return>true</return>",
    "DescribeVpcs": "<vpcSet><item><vpcId>vpc-1</vpcId><cidrBlock>10.0.0.0/16</cidrBlock></item>"
    "<item><vpcId>vpc-2</vpcId><cidrBlock>10.1.0.0/16</cidrBlock></item></vpcSet>",
}


class Wire:
    """EC2 behind the session: answers from :data:`XML`, and keeps the Action of every request sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, request, **_kw):
        body = request.body if isinstance(request.body, str) else request.body.decode()
        action = urllib.parse.parse_qs(body)["Action"][0]
        self.sent.append(action)
        body = f'<{action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">{XML[action]}</{action}Response>'
        return AWSResponse(request.url, 200, {}, _Raw(body.encode()))


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_kw):
        yield self.body


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run(given, clock, scope="us-east-1|"):
    """One module run's session, sharing reads, its EC2 client and the wire it sends on."""
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": "x"})
    session.share_reads(sr.SharedReads(given, scope=scope, clock=clock))
    client = session.client("ec2")
    wire = Wire()
    client.raw.meta.events.register("before-send", wire)
    return session, client, wire


def test_a_no_op_run_hands_its_reads_on_and_the_next_run_asks_aws_nothing_it_asked_already():
    clock = Clock()
    first, ec2, wire = run({}, clock)
    ec2.describe_instances(Filters=OWNED)
    # What travels is JSON (a host fact), datetimes tagged
    handed = json.loads(json.dumps(first.shared.handed_forward(planned_change=False)))
    assert [entry["call"] for entry in handed.values()] == ["ec2:DescribeInstances"]

    clock.now += 30
    second, ec2, wire = run(handed, clock)
    answer = ec2.describe_instances(Filters=OWNED)
    assert wire.sent == []
    assert answer["Reservations"][0]["Instances"][0]["LaunchTime"] == LAUNCHED
    assert second.recorder.as_dict() == {}
    assert dict(second.shared.served) == {"ec2:DescribeInstances": 1}
    # The same request again in one run is a poll: it goes to AWS
    ec2.describe_instances(Filters=OWNED)
    assert wire.sent == ["DescribeInstances"]
    assert second.recorder.as_dict() == {"ec2:DescribeInstances": 1}


def test_another_request_or_another_scope_is_another_read():
    clock = Clock()
    first, ec2, wire = run({}, clock)
    ec2.describe_instances(Filters=OWNED)
    handed = first.shared.handed_forward(False)
    second, ec2, wire = run(handed, clock)
    ec2.describe_instances(Filters=OWNED, MaxResults=1000)
    assert wire.sent == ["DescribeInstances"]
    # against another region, endpoint or identity the same request is another read too
    third, ec2, wire = run(handed, clock, scope="eu-west-1|")
    ec2.describe_instances(Filters=OWNED)
    assert wire.sent == ["DescribeInstances"]


def test_reads_older_than_max_age_are_not_used():
    clock = Clock()
    first, ec2, wire = run({}, clock)
    ec2.describe_instances(Filters=OWNED)
    clock.now += sr.MAX_AGE + 1
    second, ec2, wire = run(first.shared.handed_forward(False), clock)
    ec2.describe_instances(Filters=OWNED)
    assert wire.sent == ["DescribeInstances"]


def test_after_a_write_only_static_reads_are_served_and_handed_on():
    clock = Clock()
    first, ec2, wire = run({}, clock)
    ec2.describe_instances(Filters=OWNED)
    ec2.describe_images(ImageIds=["ami-1"])
    # A planned change (check mode) hands on the static reads alone
    assert {e["call"] for e in first.shared.handed_forward(True).values()} == {"ec2:DescribeImages"}

    second, ec2, wire = run(first.shared.handed_forward(False), clock)
    ec2.create_tags(Resources=["i-1"], Tags=[{"Key": "a", "Value": "b"}])
    # The write may have changed the instance: asked again; the image it cannot have changed is not
    ec2.describe_instances(Filters=OWNED)
    ec2.describe_images(ImageIds=["ami-1"])
    assert wire.sent == ["CreateTags", "DescribeInstances"]
    assert {e["call"] for e in second.shared.handed_forward(False).values()} == {"ec2:DescribeImages"}


def test_a_read_by_id_is_answered_from_the_items_an_earlier_read_returned_whole():
    """capa_vpc finds the VPC by its owner tag, capa_subnet asks for it by id: the second read needs no request."""
    clock = Clock()
    first, ec2, wire = run({}, clock)
    ec2.describe_vpcs(Filters=OWNED)
    ec2.describe_images(Owners=["self"])
    handed = json.loads(json.dumps(first.shared.handed_forward(planned_change=False)))

    second, ec2, wire = run(handed, clock)
    assert ec2.describe_vpcs(VpcIds=["vpc-2"])["Vpcs"] == [{"VpcId": "vpc-2", "CidrBlock": "10.1.0.0/16"}]
    assert [v["VpcId"] for v in ec2.describe_vpcs(VpcIds=["vpc-2", "vpc-1"])["Vpcs"]] == ["vpc-2", "vpc-1"]
    assert wire.sent == [] and dict(second.shared.served) == {"ec2:DescribeVpcs": 2}
    # An id the earlier reads did not return, an id with a filter, the same read again (a poll): asked
    ec2.describe_vpcs(VpcIds=["vpc-3"])
    ec2.describe_vpcs(VpcIds=["vpc-1"], Filters=[{"Name": "state", "Values": ["available"]}])
    ec2.describe_vpcs(VpcIds=["vpc-2"])
    assert wire.sent == ["DescribeVpcs"] * 3
    # ... and against another region the items are another region's
    third, ec2, wire = run(handed, clock, scope="eu-west-1|")
    ec2.describe_vpcs(VpcIds=["vpc-1"])
    assert wire.sent == ["DescribeVpcs"]

    # After a write only the static items answer: the image, not the VPC the write may have changed
    fourth, ec2, wire = run(handed, clock)
    ec2.create_tags(Resources=["vpc-1"], Tags=[{"Key": "a", "Value": "b"}])
    ec2.describe_vpcs(VpcIds=["vpc-1"])
    assert ec2.describe_images(ImageIds=["ami-1"])["Images"] == [{"ImageId": "ami-1"}]
    assert wire.sent == ["CreateTags", "DescribeVpcs"]


def test_a_run_given_nothing_hands_nothing_on():
    session, ec2, wire = run(None, Clock())
    ec2.describe_instances(Filters=OWNED)
    assert session.shared.handed_forward(False) is None
    assert session.recorder.as_dict() == {"ec2:DescribeInstances": 1} and wire.sent == ["DescribeInstances"]


@pytest.mark.parametrize(
    "service, operation, shared",
    [
        ("ec2", "DescribeSubnets", True),
        ("ec2", "DescribeLaunchTemplateVersions", False),  # user data
        ("ec2", "DescribeInstanceAttribute", False),  # user data
        ("secretsmanager", "ListSecrets", True),
        ("secretsmanager", "GetSecretValue", False),
        ("ssm", "GetParameter", False),
        ("resourcegroupstaggingapi", "GetResources", True),
        ("elb", "DescribeLoadBalancers", True),
        ("iam", "GetRole", False),
    ],
)
def test_only_descriptions_of_infrastructure_travel(service, operation, shared):
    assert sr.shareable(service, operation) is shared


def test_encoding_keeps_datetimes_and_bytes_and_drops_response_metadata():
    value = {"When": LAUNCHED, "Blob": b"\x00\x01", "ResponseMetadata": {"RequestId": "r"}, "List": [LAUNCHED]}
    encoded = json.loads(json.dumps(sr.encode(value)))
    assert sr.decode(encoded) == {"When": LAUNCHED, "Blob": b"\x00\x01", "List": [LAUNCHED]}


def test_packed_reads_are_one_string_that_unpacks_to_the_same_entries():
    """The host fact's form (capa_step): one string, so Ansible's per-task copies of a host's facts cost nothing."""
    entries = {"k": {"call": "ec2:DescribeVpcs", "taken": 1.5, "response": {"Vpcs": [{"VpcId": "vpc-1"}]}}}
    packed = sr.pack(entries)
    assert isinstance(packed, str) and packed.startswith(sr.PACKED_PREFIX) and "vpc-1" not in packed
    assert sr.unpack(packed) == entries
    assert sr.unpack(entries) == entries  # a registered result's shared_reads, as it is
    for nothing in (None, "", "not packed", sr.PACKED_PREFIX + "!!", sr.PACKED_PREFIX + sr.pack([])[-8:], 3):
        assert sr.unpack(nothing) == {}
    assert sr.is_packed(packed) and not any(sr.is_packed(other) for other in (None, "", "not packed", entries, 3))


@pytest.mark.parametrize("secret", ["s3cr3t-key", 'with "quotes" and \\', "clé-ü"])
def test_a_result_packs_its_reads_unless_a_no_log_value_is_among_them(secret):
    """A module's result carries its reads packed (exit_json does not walk every answer), and a packed string cannot
    be masked: reads that carry one of the run's no_log values, as written or as JSON escapes them, are not handed
    on. Empty values (an option left unset) withhold nothing."""
    entries = {"k": {"call": "ec2:DescribeVpcs", "taken": 1.0, "response": {"Vpcs": [{"VpcId": "vpc-1"}]}}}
    assert sr.unpack(sr.pack_withholding(entries, ["", "not-there"])) == entries
    assert sr.pack_withholding(entries, []) == sr.pack(entries)
    tagged = {"k": {**entries["k"], "response": {"Vpcs": [{"VpcId": "vpc-1", "Tags": [{"Value": f"x{secret}y"}]}]}}}
    packed = sr.pack_withholding(tagged, ["", secret])
    assert sr.is_packed(packed) and sr.unpack(packed) == {}


def test_an_unreachable_api_server_is_known_to_the_next_runs_while_nothing_changes_and_for_max_age():
    clock = Clock()
    first = sr.SharedReads({}, scope="us-east-1|", clock=clock)
    first.note_unreachable("https://api:6443", "cannot reach the Kubernetes API at https://api:6443: refused")
    handed = first.handed_forward(planned_change=False)
    second = sr.SharedReads(handed, scope="us-east-1|", clock=clock)
    assert second.unreachable("https://api:6443", "k8s:ListNodes").endswith("refused")
    assert second.unreachable("https://api:6443", "k8s:ListSecrets") is not None  # every request, not once
    assert second.unreachable("https://other:6443", "k8s:ListNodes") is None
    assert dict(second.served) == {"k8s:ListNodes": 1, "k8s:ListSecrets": 1}
    assert second.handed_forward(planned_change=False) == handed  # a no-op passes it on
    assert sr.SharedReads(handed, scope="eu-west-1|", clock=clock).unreachable("https://api:6443", "x") is None
    second.note_write()
    assert second.unreachable("https://api:6443", "k8s:ListNodes") is None  # the run changed something: try again
    assert second.handed_forward(planned_change=False) == {}  # and it is not handed on
    clock.now += sr.MAX_AGE + 1
    assert sr.SharedReads(handed, scope="us-east-1|", clock=clock).unreachable("https://api:6443", "x") is None


class ElbWire:
    """The classic and v2 ELB APIs behind a session: ``DescribeTags`` answers with one tag per resource asked (so an
    answer from the wire and one from the tagging API differ), and every request sent is kept."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, request, **_kw):
        body = urllib.parse.parse_qs(request.body if isinstance(request.body, str) else request.body.decode())
        action = body["Action"][0]
        self.sent.append(action)
        classic = "LoadBalancerNames.member.1" in body
        member, field = ("LoadBalancerNames", "LoadBalancerName") if classic else ("ResourceArns", "ResourceArn")
        asked = [v[0] for k, v in sorted(body.items()) if k.startswith(f"{member}.member.")]
        items = "".join(
            f"<member><{field}>{name}</{field}><Tags><member><Key>from</Key><Value>wire</Value></member></Tags>"
            f"</member>"
            for name in asked
        )
        version = "2012-06-01" if classic else "2015-12-01"
        namespace = f"http://elasticloadbalancing.amazonaws.com/doc/{version}/"
        text = (
            f'<{action}Response xmlns="{namespace}"><{action}Result><TagDescriptions>{items}</TagDescriptions>'
            f"</{action}Result></{action}Response>"
        )
        return AWSResponse(request.url, 200, {}, _Raw(text.encode()))


def _tagging_answer(clock, scope="us-east-1|"):
    """What the preflight's GetResources handed on: a classic and a v2 load balancer with all their tags."""
    owned = {"Key": "sigs.k8s.io/cluster-api-provider-aws/cluster/c1", "Value": "owned"}
    listed = [
        {"ResourceARN": "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/c1-apiserver", "Tags": [owned]},
        {"ResourceARN": "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/c1-nlb/abc", "Tags": [owned]},
        {"ResourceARN": "arn:aws:ec2:us-east-1:1:vpc/vpc-1", "Tags": [owned]},
    ]
    key = f"{scope}|{sr.TAGGING_CALL}|{{}}"
    return {key: {"taken": clock(), "call": sr.TAGGING_CALL, "response": {"ResourceTagMappingList": listed}}}


def _elb_run(given, clock, service):
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIAEXAMPLE", "aws_secret_access_key": "x"})
    session.share_reads(sr.SharedReads(given, scope="us-east-1|", clock=clock))
    client = session.client(service)
    wire = ElbWire()
    client.raw.meta.events.register("before-send", wire)
    return session, client, wire


def test_a_load_balancers_tags_are_answered_from_the_tagging_apis_answer_that_lists_it():
    """capa_elb checks its load balancer's owner tag: the preflight's GetResources already listed it with every tag
    it has, so a run that changes nothing asks ELB's DescribeTags no more."""
    clock = Clock()
    given = _tagging_answer(clock)
    owned = [{"Key": "sigs.k8s.io/cluster-api-provider-aws/cluster/c1", "Value": "owned"}]

    session, elb, wire = _elb_run(given, clock, "elb")
    answer = elb.describe_tags(LoadBalancerNames=["c1-apiserver"])
    assert answer["TagDescriptions"] == [{"LoadBalancerName": "c1-apiserver", "Tags": owned}]
    assert wire.sent == [] and session.recorder.as_dict() == {}
    assert dict(session.shared.served) == {"elb:DescribeTags": 1}
    # The same read again (a poll), a name the tagging API did not list, a name with another: asked
    elb.describe_tags(LoadBalancerNames=["c1-apiserver"])
    elb.describe_tags(LoadBalancerNames=["other"])
    assert elb.describe_tags(LoadBalancerNames=["c1-apiserver", "other"])["TagDescriptions"][0]["Tags"] == [
        {"Key": "from", "Value": "wire"}
    ]
    assert wire.sent == ["DescribeTags"] * 3

    session, elbv2, wire = _elb_run(given, clock, "elbv2")
    arn = "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/c1-nlb/abc"
    assert elbv2.describe_tags(ResourceArns=[arn])["TagDescriptions"] == [{"ResourceArn": arn, "Tags": owned}]
    assert wire.sent == []
    # A v2 ARN is not a classic name: the classic API's read of "net/c1-nlb/abc" is asked
    session, elb, wire = _elb_run(given, clock, "elb")
    elb.describe_tags(LoadBalancerNames=["net"])
    assert wire.sent == ["DescribeTags"]


def test_tags_are_not_answered_from_the_tagging_api_after_a_write_or_in_another_region():
    clock = Clock()
    session, elb, wire = _elb_run(_tagging_answer(clock, scope="eu-west-1|"), clock, "elb")
    elb.describe_tags(LoadBalancerNames=["c1-apiserver"])
    assert wire.sent == ["DescribeTags"]

    session, elb, wire = _elb_run(_tagging_answer(clock), clock, "elb")
    session.shared.note_write()  # e.g. the tier just tagged it
    elb.describe_tags(LoadBalancerNames=["c1-apiserver"])
    assert wire.sent == ["DescribeTags"]


def test_a_read_asked_of_the_shared_reads_alone_is_answered_from_them_or_not_sent_at_all():
    """A pool's architecture from the cluster's instances a machine group described: only if one did."""
    clock = Clock()
    first, ec2, wire = run({}, clock)
    ec2.describe_instances(Filters=OWNED)
    handed = first.shared.handed_forward(False)

    second, ec2, wire = run(handed, clock)
    with second.shared.only_served():
        answer = ec2.describe_instances(Filters=OWNED)
    assert answer["Reservations"][0]["Instances"][0]["InstanceId"] == "i-1"
    with pytest.raises(sr.NotShared), second.shared.only_served():
        ec2.describe_instances(Filters=OWNED)  # served once per run: the second time it is not there
    with pytest.raises(sr.NotShared), second.shared.only_served():
        ec2.describe_vpcs(Filters=OWNED)  # never read before
    with pytest.raises(sr.NotShared), second.shared.only_served():
        ec2.create_tags(Resources=["i-1"], Tags=[{"Key": "a", "Value": "b"}])  # nor is a write sent
    assert wire.sent == [] and second.recorder.as_dict() == {} and not second.shared.wrote
    assert dict(second.shared.served) == {"ec2:DescribeInstances": 1}
    # Outside the block, reads go to AWS as always
    ec2.describe_vpcs(Filters=OWNED)
    assert wire.sent == ["DescribeVpcs"] and second.recorder.as_dict() == {"ec2:DescribeVpcs": 1}
