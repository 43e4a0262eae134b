# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The capa_kubeconfig lookup's own part: its options read into a request and an identity (refused with the option's
name before any request), the identity assumed per cluster, AWS's and STS's refusals as lookup errors, and its
documentation matching what it takes. What it builds is tests/unit/plugins/module_utils/cluster/
test_job_kubeconfig.py's subject; a playbook with kubernetes.core against the simulator is
tests/integration/test_kubeconfig_lookup.py's.

The plugin's options are given as Ansible's configuration would have resolved them (``_options``): loading it
through Ansible's plugin loader needs the collection loader, which these unit tests do not install.
"""

from __future__ import annotations

import datetime
from typing import Any
from unittest import mock

import botocore.exceptions
import pytest
import yaml
from ansible.errors import AnsibleLookupError

from ansible_collections.clusterapi.aws.plugins.doc_fragments.common import ModuleDocFragment
from ansible_collections.clusterapi.aws.plugins.lookup import capa_kubeconfig
from ansible_collections.clusterapi.aws.plugins.module_utils.capa import identity_argument_spec
from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import job_kubeconfig as jk
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import IdentityRefused

ROLE = "arn:aws:iam::111111111111:role/capa-team-a"
DEFAULTS = {"kind": "auto", "host": None, "port": 6443, "validity_minutes": 60, "identity": None}


def lookup(**options: Any) -> capa_kubeconfig.LookupModule:
    plugin = capa_kubeconfig.LookupModule()
    plugin._options = {**DEFAULTS, **options}
    return plugin


def refusal(call: Any) -> str:
    with pytest.raises(AnsibleLookupError) as refused:
        call()
    return str(refused.value)


def test_the_options_make_the_request():
    request = lookup(host="api.example.com", port=443, validity_minutes=10)._request("demo")
    assert request == jk.KubeconfigRequest(
        "demo", kind="auto", host="api.example.com", port=443, validity=datetime.timedelta(minutes=10)
    )
    assert request.kind_without_asking == jk.SELF_MANAGED
    # An empty host (a variable that is not set yet) is no host.
    assert lookup(host="")._request("demo").host is None


@pytest.mark.parametrize(
    "options, cluster, message",
    [
        ({"kind": "self-managed"}, "demo", "capa_kubeconfig: host: is required for a self-managed cluster"),
        ({"host": "h", "port": 70000}, "demo", "capa_kubeconfig: port: 70000 is not a port number"),
        ({"host": "h", "validity_minutes": 1}, "demo", "capa_kubeconfig: validity_minutes: 1 is not between 5"),
        ({"host": "h"}, "Bad_Name", "capa_kubeconfig: cluster name: 'Bad_Name' must be lower-case"),
        ({}, "bad name", "capa_kubeconfig: cluster name: 'bad name' must be 1-100 letters"),
    ],
)
def test_a_bad_option_is_refused_naming_it(options, cluster, message):
    assert refusal(lambda: lookup(**options)._request(cluster)).startswith(message)


def test_no_identity_is_none_and_one_is_read_as_the_modules_read_it():
    assert lookup()._identity() is None
    identity = lookup(identity={"role_arn": ROLE, "external_id": "ext"})._identity()
    assert identity == {
        "role_arn": ROLE,
        "external_id": "ext",
        "session_name": None,
        "duration_seconds": 3600,
        "source_identity": None,
    }


@pytest.mark.parametrize(
    "identity, message",
    [
        ({"external_id": "x"}, "identity: missing required arguments: role_arn"),
        ({"role_arn": ROLE, "extern_id": "x"}, "identity: identity.extern_id. Supported parameters include"),
        ({"role_arn": "capa-team-a"}, "identity.role_arn: 'capa-team-a' is not a role ARN"),
        ({"role_arn": ROLE, "duration_seconds": 60}, "identity.duration_seconds: must be between 900 and 43200"),
        (
            {"role_arn": ROLE, "source_identity": {"role_arn": "hop"}},
            "identity.source_identity.role_arn: 'hop' is not a role ARN",
        ),
    ],
)
def test_a_bad_identity_is_refused_naming_the_field(identity, message):
    assert message in refusal(lambda: lookup(identity=identity)._identity())


def test_each_cluster_assumes_the_identity_with_a_session_named_after_it():
    session = mock.Mock()
    identity = {"role_arn": ROLE}
    with mock.patch.object(capa_kubeconfig, "job_kubeconfig", return_value={"kind": "Config"}) as build:
        config = lookup()._kubeconfig(session, jk.KubeconfigRequest("team-a"), identity)
    assert config == {"kind": "Config"}
    session.assume.assert_called_once_with(identity, default_session_name="capa-team-a")
    assert build.call_args.args[0].session is session and build.call_args.args[0].check_mode is True


@pytest.mark.parametrize(
    "raised, message",
    [
        (ReconcileError("cluster demo has no PKI"), "capa_kubeconfig: cluster demo has no PKI"),
        (
            botocore.exceptions.ClientError(
                {"Error": {"Code": "AccessDeniedException", "Message": "not allowed"}}, "DescribeCluster"
            ),
            "capa_kubeconfig: AWS request failed: An error occurred (AccessDeniedException)",
        ),
        (botocore.exceptions.NoCredentialsError(), "capa_kubeconfig: AWS request failed: Unable to locate"),
    ],
)
def test_what_goes_wrong_is_a_lookup_error(raised, message):
    with mock.patch.object(capa_kubeconfig, "job_kubeconfig", side_effect=raised):
        assert refusal(lambda: lookup()._kubeconfig(mock.Mock(), jk.KubeconfigRequest("demo"), None)).startswith(
            message
        )


def test_a_refused_identity_names_the_role_and_the_external_id():
    session = mock.Mock()
    denied = botocore.exceptions.ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "AssumeRole")
    session.assume.side_effect = IdentityRefused({"role_arn": ROLE, "external_id": "guess"}, denied)
    message = refusal(lambda: lookup()._kubeconfig(session, jk.KubeconfigRequest("demo"), {"role_arn": ROLE}))
    assert message.startswith(f"capa_kubeconfig: could not assume role {ROLE} (with an external id)")


def test_the_documented_identity_is_the_one_the_modules_take():
    """The lookup documents identity through the modules' fragment (clusterapi.aws.common.identity)."""
    assert (
        "clusterapi.aws.common.identity"
        in yaml.safe_load(capa_kubeconfig.DOCUMENTATION)["extends_documentation_fragment"]
    )
    documented = yaml.safe_load(ModuleDocFragment.IDENTITY)["options"]["identity"]["suboptions"]

    def shape(spec: dict[str, Any]) -> dict[str, Any]:
        return {
            name: (
                option["type"],
                option.get("required", False),
                option.get("default"),
                shape(option.get("options") or option.get("suboptions") or {}),
            )
            for name, option in spec.items()
        }

    assert shape(documented) == shape(identity_argument_spec())


def test_the_documented_kinds_are_the_ones_taken():
    documented = yaml.safe_load(capa_kubeconfig.DOCUMENTATION)["options"]["kind"]
    assert tuple(documented["choices"]) == jk.KINDS and documented["default"] == jk.AUTO
