# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/control_plane.py: create (retried while IAM propagates the role), version upgrades one minor at a time, config
and encryption updates each awaited, refusals before any mutating request, deletion refused while members remain.

moto lacks UpdateClusterVersion, DescribeUpdate and AssociateEncryptionConfig, so these paths run against botocore's
Stubber: every request is checked (operation, parameters, order) against AWS's service model, and
``assert_no_pending_responses`` proves each expected one was made.
"""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import control_plane
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError

from .eks_stubs import CLUSTER, KEY, OTHER_KEY, described, params, run, update


def test_upgrade_129_to_131_is_two_version_updates_each_waited_for(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    eks.add_response("update_cluster_version", update("u1"), {"name": CLUSTER, "version": "1.30"})
    eks.add_response("describe_update", update("u1"), {"name": CLUSTER, "updateId": "u1"})
    eks.add_response("describe_update", update("u1", "Successful"), {"name": CLUSTER, "updateId": "u1"})
    eks.add_response("update_cluster_version", update("u2"), {"name": CLUSTER, "version": "1.31"})
    eks.add_response("describe_update", update("u2", "Successful"), {"name": CLUSTER, "updateId": "u2"})
    eks.add_response("describe_cluster", described("1.31"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path))
    eks.assert_no_pending_responses()
    assert [(p.call, p.resource, p.reason) for p in ctx.ops.plan] == [
        ("eks:UpdateClusterVersion", CLUSTER, "version 1.30"),
        ("eks:UpdateClusterVersion", CLUSTER, "version 1.31"),
        ("file:WriteFile", str(tmp_path / "out" / CLUSTER / "user-kubeconfig"), "kubeconfig missing"),
    ]
    assert after["cluster"]["version"] == "1.31"
    # Both kubeconfigs written; the token one is not in the plan.
    assert (tmp_path / "out" / CLUSTER / "kubeconfig").is_file()
    assert [p.call for p in ctx.ops.plan].count("file:WriteFile") == 1


def test_failed_version_update_stops_the_run(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    eks.add_response("update_cluster_version", update("u1"), {"name": CLUSTER, "version": "1.30"})
    failed = update("u1", "Failed")
    failed["update"]["errors"] = [{"errorMessage": "insufficient free IPs"}]
    eks.add_response("describe_update", failed, {"name": CLUSTER, "updateId": "u1"})
    with pytest.raises(ReconcileError, match="insufficient free IPs"):
        run(session, params(tmp_path))
    eks.assert_no_pending_responses()


def test_without_wait_only_the_first_step_is_made(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    eks.add_response("update_cluster_version", update("u1"), {"name": CLUSTER, "version": "1.30"})
    eks.add_response("describe_cluster", described("1.29", "UPDATING"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path), wait=False)
    eks.assert_no_pending_responses()
    assert [p.call for p in ctx.ops.plan if p.call.startswith("eks:")] == ["eks:UpdateClusterVersion"]
    assert any("version 1.31" in w for w in ctx.warnings)


def test_downgrade_is_refused_before_any_mutating_request(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.31"), {"name": CLUSTER})
    with pytest.raises(SpecError, match="cannot be downgraded"):
        run(session, params(tmp_path, version="1.30"))
    eks.assert_no_pending_responses()
    assert session.recorder.mutating() == {}


def test_check_mode_plans_every_step_without_requests(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path), check=True)
    eks.assert_no_pending_responses()
    assert [p.call for p in ctx.ops.plan if p.call.startswith("eks:")] == ["eks:UpdateClusterVersion"] * 2
    assert after["cluster"]["version"] == "1.31"
    assert not (tmp_path / "out").exists()


def test_encryption_is_associated_and_waited_for(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    encryption = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    eks.add_response(
        "associate_encryption_config",
        update("e1", kind="AssociateEncryptionConfig"),
        {"clusterName": CLUSTER, "encryptionConfig": encryption},
    )
    eks.add_response("describe_update", update("e1", "Successful"), {"name": CLUSTER, "updateId": "e1"})
    eks.add_response("describe_cluster", described(encryptionConfig=encryption), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, encryption_config={"provider": KEY, "resources": ["secrets"]}))
    eks.assert_no_pending_responses()
    assert after["cluster"]["encryption"] == {"provider": KEY, "resources": ["secrets"]}


def test_encryption_change_is_an_error_before_any_mutating_request(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    encryption = [{"resources": ["secrets"], "provider": {"keyArn": KEY}}]
    eks.add_response("describe_cluster", described(encryptionConfig=encryption), {"name": CLUSTER})
    with pytest.raises(ReconcileError, match="cannot be changed"):
        run(session, params(tmp_path, encryption_config={"provider": OTHER_KEY, "resources": ["secrets"]}))
    assert session.recorder.mutating() == {}


def test_create_retries_while_iam_propagates_the_new_role(aws_stub, tmp_path, monkeypatch):
    monkeypatch.setattr(control_plane, "ROLE_PROPAGATION_RETRY", 0)
    session, eks, _iam_stub = aws_stub
    eks.add_client_error("describe_cluster", "ResourceNotFoundException")
    eks.add_client_error(
        "create_cluster",
        "InvalidParameterException",
        "Role with arn: given, could not be assumed because it does not exist",
    )
    eks.add_response("create_cluster", described(status="CREATING"), None)
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path))
    eks.assert_no_pending_responses()
    assert [c.call for c in ctx.ops.plan if c.call.startswith("eks:")] == ["eks:CreateCluster"]
    assert after["cluster"]["status"] == "ACTIVE"


def test_delete_refuses_while_fargate_profiles_remain(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": CLUSTER})
    eks.add_response("list_fargate_profiles", {"fargateProfileNames": ["fp-default"]}, {"clusterName": CLUSTER})
    with pytest.raises(ReconcileError, match="Fargate profiles fp-default"):
        run(session, params(tmp_path, state="absent"))
    assert session.recorder.mutating() == {}
