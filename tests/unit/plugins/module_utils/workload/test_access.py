# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The kubernetes_api option: declared once, documented from the declaration, validated before any request."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.doc_fragments.kubernetes_api import ModuleDocFragment
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import argument_spec, documentation
from ansible_collections.clusterapi.aws.plugins.module_utils.workload import access
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.access import (
    KUBERNETES_API,
    KubernetesApiSettings,
)


def test_the_doc_fragment_says_what_the_declaration_says():
    assert yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"] == documentation([KUBERNETES_API])
    assert argument_spec([KUBERNETES_API])["kubernetes_api"]["options"]["mode"]["default"] == "auto"


@pytest.mark.parametrize(
    "value, field",
    [
        ({"mode": "sometimes"}, "kubernetes_api.mode"),
        ({"server": "http://127.0.0.1:6443"}, "kubernetes_api.server"),
        ({"proxy": "socks5://127.0.0.1:1080"}, "kubernetes_api.proxy"),
        ({"timeout": 0}, "kubernetes_api.timeout"),
    ],
)
def test_bad_settings_name_the_field(value, field):
    with pytest.raises(SpecError) as refused:
        KubernetesApiSettings.from_params(value).validate()
    assert refused.value.field == field


def test_defaults():
    settings = KubernetesApiSettings.from_params(None)
    assert (settings.mode, settings.server, settings.timeout) == ("auto", None, 10)
    settings.validate()


class _AwsAuth:
    """An EKS API serving kube-system/aws-auth with ``map_roles`` (None: no ConfigMap)."""

    def __init__(self, map_roles: str | None) -> None:
        self.map_roles = map_roles
        self.asked: list[str] = []

    def get(self, path: str, name: str) -> dict | None:
        self.asked.append(path)
        return None if self.map_roles is None else {"data": {"mapRoles": self.map_roles}}


NODES_ROLE = "arn:aws:iam::123456789012:role/nodes.cluster-api-provider-aws.sigs.k8s.io"
MAPPED = f"- rolearn: {NODES_ROLE}\n  username: system:node:{{{{EC2PrivateDNSName}}}}\n  groups: [system:nodes]\n"


@pytest.mark.parametrize(
    ("mode", "map_roles", "entries", "mapped", "asked_entries"),
    [
        (None, MAPPED, [], True, False),  # CONFIG_MAP (EKS's default): aws-auth alone
        ("CONFIG_MAP", "- rolearn: arn:aws:iam::123456789012:role/other\n", [NODES_ROLE], False, False),
        ("CONFIG_MAP", None, [NODES_ROLE], False, False),
        ("API_AND_CONFIG_MAP", None, [NODES_ROLE], True, True),
        ("API", MAPPED, [], False, True),  # API mode reads no aws-auth
        ("API", None, [NODES_ROLE.replace("role/", "role/team/")], True, True),  # a role of any path
    ],
)
def test_an_eks_pools_role_counts_as_mapped_only_where_the_clusters_mode_reads_it(
    mode, map_roles, entries, mapped, asked_entries
):
    api, asked = _AwsAuth(map_roles), []

    def access_entries() -> list[str]:
        asked.append(True)
        return entries

    cluster = {"accessConfig": {"authenticationMode": mode}} if mode else {}
    name = "nodes.cluster-api-provider-aws.sigs.k8s.io"
    assert access.eks_role_mapped(api, cluster, name, access_entries) is mapped  # type: ignore[arg-type]
    assert bool(asked) is asked_entries
    assert api.asked == ([] if mode == "API" else [access.AWS_AUTH_PATH])
