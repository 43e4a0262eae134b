# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The kubernetes_api option: declared once, documented from the declaration, validated before any request."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.doc_fragments.kubernetes_api import ModuleDocFragment
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.options import argument_spec, documentation
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
