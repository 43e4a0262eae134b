# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The classic ELB and ELBv2 wrappers: not-found is ``None`` (or nothing) here and nowhere else, DescribeTags goes
in chunks of 20, and a by-name describe of several v2 load balancers falls back to one request per name only when
one of them is missing (botocore Stubber checks each request against the service's model)."""

from __future__ import annotations

import functools

from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.aws import elb, elbv2
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession

ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net"


@functools.lru_cache(maxsize=1)
def session() -> AwsSession:
    return AwsSession("us-east-1", None, {"aws_access_key_id": "a", "aws_secret_access_key": "b"})


def stubbed(service: str) -> tuple[Context, Stubber]:
    ctx = Context(session=session(), cluster="demo", check_mode=False, wait=False)
    return ctx, Stubber(ctx.client(service).raw)


def v2(name: str) -> dict:
    return {"LoadBalancerName": name, "LoadBalancerArn": f"{ARN}/{name}/0123"}


def test_chunks_of_twenty():
    assert [len(c) for c in elb.chunks(list(range(45)))] == [20, 20, 5]
    assert elb.chunks([]) == []


def test_a_missing_classic_load_balancer_and_its_attributes_are_none():
    ctx, stub = stubbed("elb")
    stub.add_client_error(
        "describe_load_balancers", "LoadBalancerNotFound", expected_params={"LoadBalancerNames": ["x"]}
    )
    stub.add_client_error("describe_load_balancer_attributes", "LoadBalancerNotFound")
    stub.add_response(
        "describe_load_balancers",
        {"LoadBalancerDescriptions": [{"LoadBalancerName": "y"}]},
        {"LoadBalancerNames": ["y"]},
    )
    with stub:
        assert elb.describe_load_balancer(ctx, "x") is None
        assert elb.describe_attributes(ctx, "x") is None
        assert elb.describe_load_balancer(ctx, "y") == {"LoadBalancerName": "y"}
        stub.assert_no_pending_responses()


def test_classic_tags_are_read_twenty_names_at_a_time():
    ctx, stub = stubbed("elb")
    names = [f"lb-{i}" for i in range(21)]
    for chunk in (names[:20], names[20:]):
        answer = {"TagDescriptions": [{"LoadBalancerName": n, "Tags": [{"Key": "k", "Value": n}]} for n in chunk]}
        stub.add_response("describe_tags", answer, {"LoadBalancerNames": chunk})
    with stub:
        tags = elb.describe_tags(ctx, names)
        stub.assert_no_pending_responses()
    assert tags["lb-20"] == {"k": "lb-20"} and len(tags) == 21


def test_v2_by_name_is_one_request_when_all_exist():
    ctx, stub = stubbed("elbv2")
    stub.add_response("describe_load_balancers", {"LoadBalancers": [v2("a"), v2("b")]}, {"Names": ["a", "b"]})
    with stub:
        assert sorted(elbv2.describe_load_balancers_by_name(ctx, ["a", "b"])) == ["a", "b"]
        assert elbv2.describe_load_balancers_by_name(ctx, []) == {}
        stub.assert_no_pending_responses()


def test_v2_by_name_asks_one_by_one_only_when_one_is_missing():
    ctx, stub = stubbed("elbv2")
    stub.add_client_error("describe_load_balancers", "LoadBalancerNotFound", expected_params={"Names": ["a", "b"]})
    stub.add_response("describe_load_balancers", {"LoadBalancers": [v2("a")]}, {"Names": ["a"]})
    stub.add_client_error("describe_load_balancers", "LoadBalancerNotFound", expected_params={"Names": ["b"]})
    with stub:
        assert list(elbv2.describe_load_balancers_by_name(ctx, ["a", "b"])) == ["a"]
        stub.assert_no_pending_responses()


def test_existing_arns_and_gone_target_groups():
    ctx, stub = stubbed("elbv2")
    a, b = v2("a")["LoadBalancerArn"], v2("b")["LoadBalancerArn"]
    stub.add_client_error(
        "describe_load_balancers", "LoadBalancerNotFound", expected_params={"LoadBalancerArns": [a, b]}
    )
    stub.add_response("describe_load_balancers", {"LoadBalancers": [v2("a")]}, {"LoadBalancerArns": [a]})
    stub.add_client_error("describe_load_balancers", "LoadBalancerNotFound", expected_params={"LoadBalancerArns": [b]})
    stub.add_client_error("describe_target_groups", "TargetGroupNotFound")
    with stub:
        assert elbv2.existing_load_balancer_arns(ctx, [a, b]) == [a]
        assert elbv2.describe_target_groups(ctx, [f"{ARN}/tg/1"]) == []
        stub.assert_no_pending_responses()


def test_v2_tags_skip_placeholders():
    ctx, stub = stubbed("elbv2")
    arn = v2("a")["LoadBalancerArn"]
    answer = {"TagDescriptions": [{"ResourceArn": arn, "Tags": [{"Key": "k", "Value": "v"}]}]}
    stub.add_response("describe_tags", answer, {"ResourceArns": [arn]})
    with stub:
        assert elbv2.describe_tags(ctx, [arn, "planned:lb:b"]) == {arn: {"k": "v"}}
        assert elbv2.describe_tags(ctx, ["planned:lb:b"]) == {}
        stub.assert_no_pending_responses()
