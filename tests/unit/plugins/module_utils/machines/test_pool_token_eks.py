"""An EKS pool's access for its Node wait (machines/pool_token.py ``PoolToken.node_access``): the cluster's API only
when the cluster maps the pool's role; otherwise no access and why, for the warning - or, in mode required, an
error when the API does not answer. DescribeCluster, the API client and the mapping check are replaced here (they are
tested in tests/unit/plugins/module_utils/workload/test_access.py and, end to end, by
tests/integration/test_eks_status_on_simulator.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fake_time import FakeTime

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, RemoteError
from ansible_collections.clusterapi.aws.plugins.module_utils.machines import node_bootstrap, pool_token
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.access import KubernetesApiSettings
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.kube import UNREACHABLE

ACTIVE = {"status": "ACTIVE", "endpoint": "https://ABC.gr7.us-east-1.eks.amazonaws.com"}


# What DescribeCluster answers (the run's NodeBootstrap.eks_cluster reads it; the eks fixture sets it).
FOUND = SimpleNamespace(cluster=ACTIVE, mapped=True)


def token(mode: str = "auto", profile: str | None = "nodes") -> pool_token.PoolToken:
    bootstrap = SimpleNamespace(type="eks", eks_cluster_name="demo", token_ttl=86400, endpoint_host=None)
    machine = SimpleNamespace(bootstrap=bootstrap, iam_instance_profile=profile)
    # The run's NodeBootstrap as the pool sees it: no cluster PKI (an EKS pool has none), the cluster FOUND.
    boot = SimpleNamespace(
        ctx=FakeTime().context(), machine=machine, eks_name="demo", pki=lambda: None, eks_cluster=lambda: FOUND.cluster
    )
    return pool_token.PoolToken(boot, "pool-0", KubernetesApiSettings(mode=mode))  # type: ignore[arg-type]


@pytest.fixture
def eks(monkeypatch):
    """The cluster DescribeCluster answers, and what the mapping check finds (a bool, or an exception to raise)."""
    found = FOUND
    found.cluster, found.mapped = ACTIVE, True

    def mapped(_api, _cluster, _role, _entries):
        if isinstance(found.mapped, Exception):
            raise found.mapped
        return found.mapped

    monkeypatch.setattr(pool_token, "eks_kube_api", lambda _ctx, _settings, _name, _cluster: "api")
    monkeypatch.setattr(pool_token, "eks_role_mapped", mapped)
    return found


def test_a_mapped_pools_nodes_are_read_through_the_clusters_api(eks):
    access, why = token().node_access()
    assert access is not None and access.api == "api" and why == ""


@pytest.mark.parametrize(
    ("mode", "profile", "cluster", "mapped", "reason"),
    [
        ("none", "nodes", ACTIVE, True, "kubernetes_api.mode is none"),
        ("auto", None, ACTIVE, True, "the pool has no iam_instance_profile"),
        ("auto", "nodes", {"status": "CREATING"}, True, "EKS cluster demo is not active"),
        ("auto", "nodes", ACTIVE, False, "the role nodes of its instance profile is not mapped in EKS cluster demo"),
        ("auto", "nodes", ACTIVE, RemoteError(UNREACHABLE, "no route"), "the EKS API does not answer: no route"),
    ],
)
def test_a_pool_whose_nodes_cannot_join_or_be_read_gets_no_access_and_a_reason(
    eks, mode, profile, cluster, mapped, reason
):
    eks.cluster, eks.mapped = cluster, mapped
    access, why = token(mode, profile).node_access()
    assert access is None and why.startswith(reason), why


def test_in_mode_required_an_eks_api_that_does_not_answer_fails_the_run(eks):
    eks.mapped = RemoteError(UNREACHABLE, "no route")
    with pytest.raises(ReconcileError, match="mode is required but the EKS API does not answer: no route"):
        token("required").node_access()


def test_the_cluster_the_run_already_read_is_not_asked_again(eks, monkeypatch):
    """The pool's run reads the EKS cluster once (NodeBootstrap.eks_cluster, for its nodeadm document): its Node wait
    uses that answer instead of a second DescribeCluster."""
    asked: list[str] = []

    def describe(_ctx, name):
        asked.append(name)
        return ACTIVE

    monkeypatch.setattr(node_bootstrap, "describe_cluster", describe)
    bootstrap = SimpleNamespace(type="eks", eks_cluster_name="demo", token_ttl=86400, endpoint_host=None)
    machine = SimpleNamespace(bootstrap=bootstrap, iam_instance_profile="nodes")
    ctx = FakeTime().context()
    boot = node_bootstrap.NodeBootstrap(ctx, machine)  # type: ignore[arg-type]
    assert boot.eks_cluster() == ACTIVE  # the document's read
    settings = KubernetesApiSettings(mode="auto")
    read = pool_token.PoolToken(boot, "pool-0", settings)
    access, why = read.node_access()
    assert access is not None and access.api == "api" and why == ""
    assert asked == ["demo"]
