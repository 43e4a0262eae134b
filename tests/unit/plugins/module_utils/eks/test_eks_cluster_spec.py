# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/eks_cluster_spec.py: the typed spec of capa_eks_cluster, built once from the module's parameters."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster_spec import EksClusterSpec, OutputPaths

from .eks_stubs import CLUSTER, NODE_ROLE, ROLE_ARN, params


def test_defaults_the_module_resolves(tmp_path):
    spec = EksClusterSpec.from_params(params(tmp_path, role_arn=None, version="", oidc_thumbprint=""))
    assert spec.name == CLUSTER  # no name: the cluster's
    assert spec.role_arn is None and spec.role_name == f"{CLUSTER}-iam-service-role"
    assert spec.version is None and spec.oidc_thumbprint is None
    assert spec.addons is None  # not given: addons are not managed
    assert spec.authentication_mode == "CONFIG_MAP" and spec.bootstrap_cluster_creator_admin_permissions is True


def test_given_values_are_kept(tmp_path):
    spec = EksClusterSpec.from_params(
        params(
            tmp_path,
            name="other-eks",
            role_name="my-role",
            addons=[],
            node_role_arns=[NODE_ROLE],
            iam_authenticator={"map_roles": [{"rolearn": ROLE_ARN}], "map_users": []},
        )
    )
    assert spec.name == "other-eks" and spec.role_name == "my-role"
    assert spec.addons == []  # an empty list manages addons: ours are deleted
    assert spec.node_role_arns == [NODE_ROLE] and spec.map_roles == [{"rolearn": ROLE_ARN}] and spec.map_users == []


def test_output_paths_are_per_cluster_and_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = EksClusterSpec.from_params(params(tmp_path, output_dir=".capa")).paths
    base = tmp_path / ".capa" / CLUSTER
    assert paths == OutputPaths(base / "kubeconfig", base / "user-kubeconfig", base / "aws-auth.yaml")
    assert paths.all() == (base / "kubeconfig", base / "user-kubeconfig", base / "aws-auth.yaml")
    assert OutputPaths.under("~/out", "c").kubeconfig == Path("~/out").expanduser() / "c" / "kubeconfig"
