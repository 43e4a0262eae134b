# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One generated cluster PKI (and a second one) for the kubeadm tests: RSA key generation is slow."""

from __future__ import annotations

import pytest

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as k


@pytest.fixture(scope="session")
def pki() -> k.ClusterPki:
    return k.generate_pki()


@pytest.fixture(scope="session")
def other_pki() -> k.ClusterPki:
    return k.generate_pki()
