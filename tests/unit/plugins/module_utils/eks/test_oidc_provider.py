# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/oidc_provider.py: an owned provider of the issuer gets its client id, thumbprint and tags; a thumbprint that
cannot be fetched is a clear error.

moto lacks AddClientIDToOpenIDConnectProvider, UpdateOpenIDConnectProviderThumbprint and
TagOpenIDConnectProvider, so those run against botocore's Stubber (requests checked against AWS's service model).
"""

from __future__ import annotations

import pytest
from botocore.stub import ANY

from ansible_collections.clusterapi.aws.plugins.module_utils.eks.oidc_provider import fetch_root_ca_thumbprint
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError

from .eks_stubs import CLUSTER, ISSUER, OWNER, PROVIDER_ARN, described, params, run


def test_owned_oidc_provider_gets_client_id_thumbprint_and_tags(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    issuer = "https://oidc.eks.us-east-1.amazonaws.com/id/ABC"
    arn = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC"
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    iam.add_response(
        "list_open_id_connect_providers",
        {"OpenIDConnectProviderList": [{"Arn": arn}, {"Arn": arn.replace("ABC", "OTHER")}]},
        {},
    )
    iam.add_response(
        "get_open_id_connect_provider",
        {"Url": issuer, "ClientIDList": [], "ThumbprintList": ["0" * 40], "Tags": [{"Key": OWNER, "Value": "owned"}]},
        {"OpenIDConnectProviderArn": arn},
    )
    iam.add_response(
        "add_client_id_to_open_id_connect_provider",
        {},
        {"OpenIDConnectProviderArn": arn, "ClientID": "sts.amazonaws.com"},
    )
    iam.add_response(
        "update_open_id_connect_provider_thumbprint",
        {},
        {"OpenIDConnectProviderArn": arn, "ThumbprintList": ["a" * 40]},
    )
    iam.add_response("tag_open_id_connect_provider", {}, {"OpenIDConnectProviderArn": arn, "Tags": ANY})
    ctx, after = run(session, params(tmp_path, associate_oidc_provider=True, oidc_thumbprint="A" * 40))
    iam.assert_no_pending_responses()
    assert after["cluster"]["oidc"]["provider_arn"] == arn


def test_thumbprint_fetch_failure_is_a_clear_error():
    with pytest.raises(ReconcileError, match="oidc_thumbprint"):
        fetch_root_ca_thumbprint("https://127.0.0.1:9/id/x", timeout=2)


def test_a_provider_we_do_not_own_is_used_as_it_is(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    iam.add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": PROVIDER_ARN}]}, {})
    iam.add_response(
        "get_open_id_connect_provider",
        {"Url": ISSUER, "ClientIDList": [], "ThumbprintList": ["0" * 40], "Tags": []},
        {"OpenIDConnectProviderArn": PROVIDER_ARN},
    )
    ctx, after = run(session, params(tmp_path, associate_oidc_provider=True, oidc_thumbprint="a" * 40))
    iam.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("iam:")] == []
    assert after["cluster"]["oidc"]["provider_arn"] == PROVIDER_ARN
    assert after["cluster"]["oidc"]["trust_policy_template"]["Statement"][0]["Principal"] == {"Federated": PROVIDER_ARN}
