# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_kubeadm tier's own decisions: where the kubeconfig goes (nowhere with output_dir ""), and the PKI
secret's version token - derived from the content, the one exception to new_client_token."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.kubeadm import (
    kubeconfig_path,
    secret_version_token,
)


def test_the_secret_version_token_is_stable_per_content():
    assert secret_version_token("n", "a") == secret_version_token("n", "a") != secret_version_token("n", "b")
    assert secret_version_token("n", "a") != secret_version_token("m", "a")
    assert 32 <= len(secret_version_token("n", "a")) <= 64


def test_an_empty_output_dir_means_no_local_file():
    assert kubeconfig_path("", "demo") is None
    assert kubeconfig_path("/tmp/out", "demo") == Path("/tmp/out/demo/kubeconfig")
