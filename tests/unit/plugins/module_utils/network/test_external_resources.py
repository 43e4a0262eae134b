# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The external resource GC's pure decisions: what the in-cluster cloud provider made, and the rules that must go
before its security groups can."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.network.external_resources import (
    ExternalResourcesTier,
    classify,
    revocations,
)

CLUSTER = "demo"
CAPA = {
    "sigs.k8s.io/cluster-api-provider-aws/cluster/demo": "owned",
    "sigs.k8s.io/cluster-api-provider-aws/role": "node",
}
CCM = {"kubernetes.io/cluster/demo": "owned", "kubernetes.io/service-name": "default/web"}


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012"


def test_classify_keeps_only_the_cloud_providers_own():
    mappings = [
        {"ResourceARN": f"{ARN}:loadbalancer/net/k8s-web/0123", "Tags": tag_list(CCM)},
        {"ResourceARN": f"{ARN}:loadbalancer/app/demo-apiserver/0456", "Tags": tag_list({**CCM, **CAPA})},
        {"ResourceARN": f"{ARN}:loadbalancer/a1b2c3", "Tags": tag_list(CCM)},  # classic: from the ELB API
        {"ResourceARN": f"{ARN}:targetgroup/k8s-web-tg/0789", "Tags": tag_list(CCM)},
        {"ResourceARN": "arn:aws:ec2:us-east-1:123456789012:security-group/sg-1", "Tags": tag_list(CCM)},
        {"ResourceARN": "arn:aws:ec2:us-east-1:123456789012:security-group/sg-2", "Tags": tag_list({**CCM, **CAPA})},
    ]
    found = classify(mappings, CLUSTER)
    assert found.v2 == [{"arn": f"{ARN}:loadbalancer/net/k8s-web/0123", "name": "k8s-web", "type": "network"}]
    assert found.target_groups == [{"arn": f"{ARN}:targetgroup/k8s-web-tg/0789", "name": "k8s-web-tg"}]
    assert found.groups == [{"id": "sg-1"}]
    assert [r["kind"] for r in found.view()] == ["network_load_balancer", "target_group", "security_group"]


def test_revocations_change_only_our_groups_and_the_doomed():
    def group(group_id: str, tags: dict[str, str], refs: list[str]) -> dict[str, Any]:
        return {
            "GroupId": group_id,
            "Tags": tag_list(tags),
            "IpPermissions": [
                {"IpProtocol": "tcp", "FromPort": 30080, "ToPort": 30080, "UserIdGroupPairs": [{"GroupId": r}]}
                for r in refs
            ],
        }

    groups = [
        group("sg-node", CAPA, ["sg-ccm", "sg-bastion"]),
        group("sg-ccm2", CCM, ["sg-ccm"]),
        group("sg-team-b", {"team": "b"}, ["sg-ccm"]),
    ]
    changes = revocations(groups, {"sg-ccm", "sg-ccm2"}, CLUSTER)
    assert [c["group"] for c in changes] == ["sg-node", "sg-ccm2"]
    assert changes[0]["permissions"] == [
        {"IpProtocol": "tcp", "FromPort": 30080, "ToPort": 30080, "UserIdGroupPairs": [{"GroupId": "sg-ccm"}]}
    ]


def test_gc_tasks_are_validated_before_any_call():
    with pytest.raises(SpecError) as e:
        tier = ExternalResourcesTier()
        tier.validate(tier.parse({"state": "absent", "tasks": ["load-balancer", "volumes"]}), "us-east-1")
    assert e.value.field == "tasks[1]"


def reconciled(tier: Any, ctx: Any, params: Any) -> tuple[Any, Any]:
    """``(before, after)`` of a tier run on module parameters, as capa.run_tier runs it: parse, validate, reconcile."""
    spec = tier.parse(params)
    tier.validate(spec, "us-east-1")
    outcome = tier.reconcile(ctx, spec)
    return outcome.before, outcome.after
