# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/eks_cluster.py, the tier as a whole: the order of its pieces in a run, a cluster without our ownership tag
used as it is, check mode from nothing, and deletion (cluster, OIDC providers, role, files; or, with wait off,
the cluster only).

Its AWS side runs against botocore's Stubber (every request checked against AWS's service model, in order).
"""

from __future__ import annotations

from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster_spec import EksClusterSpec

from .eks_stubs import CLUSTER, NODE_ROLE, OWNER, PROVIDER_ARN, aws_calls, described, params, run


def test_foreign_cluster_is_used_as_it_is(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described("1.29", tags={}), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, addons=[{"name": "x", "conflict_resolution": "overwrite"}]))
    eks.assert_no_pending_responses()
    assert aws_calls(ctx) == []
    assert any("without the ownership tag" in w for w in ctx.warnings)
    assert list(after["conditions"]) == [
        "IAMControlPlaneRolesReady",
        "EKSControlPlaneReady",
        "IAMAuthenticatorConfigured",
    ]
    assert after["kubeconfig"]["user_kubeconfig"] is not None  # kubeconfigs are written for a foreign cluster too


def test_check_mode_from_nothing_plans_the_cluster_and_its_kubeconfig(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    ctx, after = run(session, params(tmp_path, node_role_arns=[NODE_ROLE]), check=True)
    eks.assert_no_pending_responses()
    out = tmp_path / "out" / CLUSTER
    assert [(p.call, p.resource, p.reason) for p in ctx.ops.plan] == [
        ("eks:CreateCluster", CLUSTER, "missing"),
        ("file:WriteFile", str(out / "aws-auth.yaml"), "aws-auth mappings missing"),
        # ... and applied in the cluster once it is active (the node role must be mapped before nodes join).
        ("k8s:Apply", "ConfigMap kube-system/aws-auth", "iam_authenticator"),
        ("file:WriteFile", str(out / "user-kubeconfig"), "kubeconfig missing"),
    ]
    assert after["cluster"]["arn"] == f"planned:eks:{CLUSTER}" and after["cluster"]["endpoint"] is None
    assert after["kubeconfig"] == {"path": None, "user_kubeconfig": None}
    assert after["conditions"]["EKSControlPlaneReady"]["reason"] == "EKSControlPlaneCreating"
    assert not (tmp_path / "out").exists()
    assert session.recorder.mutating() == {}


def test_delete_takes_cluster_owned_oidc_provider_role_and_files(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    p = params(tmp_path, state="absent")
    for path in EksClusterSpec.from_params(p).paths.all():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old")
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": CLUSTER})
    eks.add_response("list_fargate_profiles", {"fargateProfileNames": []}, {"clusterName": CLUSTER})
    eks.add_response("delete_cluster", described(status="DELETING"), {"name": CLUSTER})
    eks.add_response("describe_cluster", described(status="DELETING"), {"name": CLUSTER})
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    iam.add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": [{"Arn": PROVIDER_ARN}]}, {})
    iam.add_response(
        "get_open_id_connect_provider",
        {"Url": "x", "Tags": [{"Key": OWNER, "Value": "owned"}]},
        {"OpenIDConnectProviderArn": PROVIDER_ARN},
    )
    iam.add_response("delete_open_id_connect_provider", {}, {"OpenIDConnectProviderArn": PROVIDER_ARN})
    iam.add_client_error("get_role", "NoSuchEntity", http_status_code=404)  # the default role was never made
    ctx, after = run(session, p)
    eks.assert_no_pending_responses()
    iam.assert_no_pending_responses()
    assert aws_calls(ctx) == ["eks:DeleteCluster", "iam:DeleteOpenIDConnectProvider"]
    assert [p.reason for p in ctx.ops.plan if p.call == "file:DeleteFile"] == ["state absent"] * 3
    assert after == {
        "cluster": None,
        "addons": {"installed": [], "other": []},
        "kubeconfig": None,
        "aws_auth": None,
        "conditions": {},
    }
    assert not (tmp_path / "out" / CLUSTER / "kubeconfig").exists()


def test_delete_without_wait_leaves_role_and_provider_for_a_later_run(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    eks.add_response("list_nodegroups", {"nodegroups": []}, {"clusterName": CLUSTER})
    eks.add_response("list_fargate_profiles", {"fargateProfileNames": []}, {"clusterName": CLUSTER})
    eks.add_response("delete_cluster", described(status="DELETING"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, state="absent"), wait=False)
    eks.assert_no_pending_responses()
    iam.assert_no_pending_responses()
    assert aws_calls(ctx) == ["eks:DeleteCluster"]
    # What the caller asked for (the cluster role waits in a later task of the same run): no warning, the condition
    # says Deleting.
    assert ctx.warnings == []
    assert after["conditions"]["EKSControlPlaneReady"]["reason"] == "Deleting"


def test_a_deletion_already_asked_is_waited_for_without_asking_or_listing_again(aws_stub, tmp_path):
    session, eks, iam = aws_stub
    eks.add_response("describe_cluster", described(status="DELETING"), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, state="absent"), wait=False)
    eks.assert_no_pending_responses()
    assert aws_calls(ctx) == [] and after["conditions"]["EKSControlPlaneReady"]["reason"] == "Deleting"


def test_a_foreign_cluster_is_never_deleted(aws_stub, tmp_path):
    session, eks, _iam_stub = aws_stub
    eks.add_response("describe_cluster", described(tags={}), {"name": CLUSTER})
    ctx, after = run(session, params(tmp_path, state="absent"))
    eks.assert_no_pending_responses()
    assert ctx.ops.plan == [] and after["cluster"] is None
    assert any("not owned" in w for w in ctx.warnings)


def test_create_without_wait_asks_for_the_cluster_alone(aws_stub, tmp_path):
    """wait=false (the cluster role asks for a new cluster, then settles the network while EKS creates it): the
    create is asked and nothing that needs the cluster ACTIVE - addons, OIDC provider, aws-auth, kubeconfigs - is
    tried; no warning, the condition says Creating. The run that waits does the rest."""
    session, eks, iam = aws_stub
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    eks.add_response("create_cluster", described(status="CREATING"), None)
    p = params(
        tmp_path,
        addons=[{"name": "vpc-cni", "conflict_resolution": "overwrite"}],
        associate_oidc_provider=True,
        node_role_arns=[NODE_ROLE],
    )
    ctx, after = run(session, p, wait=False)
    eks.assert_no_pending_responses()
    iam.assert_no_pending_responses()
    assert aws_calls(ctx) == ["eks:CreateCluster"] and ctx.warnings == []
    assert after["cluster"]["status"] == "CREATING" and after["kubeconfig"] is None
    assert list(after["conditions"]) == ["IAMControlPlaneRolesReady", "EKSControlPlaneReady"]
    assert after["conditions"]["EKSControlPlaneReady"]["reason"] == "EKSControlPlaneCreating"
    assert not (tmp_path / "out").exists()


def test_a_cluster_found_creating_is_waited_for_before_what_needs_it_active(aws_stub, tmp_path):
    """The run after a create asked without a wait (the cluster role's next step but one) finds the cluster CREATING
    with nothing to update: it waits until ACTIVE, then reconciles the OIDC provider; it returned CREATING before."""
    session, eks, iam = aws_stub
    eks.add_response("describe_cluster", described(status="CREATING"), {"name": CLUSTER})
    eks.add_response("describe_cluster", described(status="CREATING"), {"name": CLUSTER})
    eks.add_response("describe_cluster", described(), {"name": CLUSTER})
    iam.add_response("list_open_id_connect_providers", {"OpenIDConnectProviderList": []}, {})
    iam.add_response("create_open_id_connect_provider", {"OpenIDConnectProviderArn": PROVIDER_ARN}, None)
    p = params(tmp_path, associate_oidc_provider=True, oidc_thumbprint="9e99a48a9960b14926bb7f3b02e22da2b0ab7280")
    ctx, after = run(session, p, sleep=lambda _seconds: None)
    eks.assert_no_pending_responses()
    iam.assert_no_pending_responses()
    assert aws_calls(ctx) == ["iam:CreateOpenIDConnectProvider"]
    assert after["cluster"]["status"] == "ACTIVE" and after["conditions"]["EKSControlPlaneReady"]["status"] is True
