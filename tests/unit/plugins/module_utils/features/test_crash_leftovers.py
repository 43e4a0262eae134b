"""What a killed run leaves behind and the next run sweeps: bootstrap entries no machine refers to.

botocore Stubber: the exact list of secrets around a kill cannot be produced on demand against moto (the
integration test test_crash_resume.py produces it by killing runs).
"""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.operations import Operations
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import RetryingClient
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import (
    delete_named,
    unreferenced_secrets,
)

OWNED_KEY = "sigs.k8s.io/cluster-api-provider-aws/cluster/demo"
GROUP = "clusterapi.aws/machine-group"


class _Ctx:
    def __init__(self, client) -> None:
        self._client = RetryingClient(client, retries=0)
        self.ops = Operations(check_mode=False)

    def client(self, service):
        return self._client


def secret(name, **tags):
    return {"Name": name, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}


def test_only_owned_entries_of_the_group_that_no_machine_refers_to_are_stray():
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    mine = {OWNED_KEY: "owned", GROUP: "md-0", "MachineName": "demo/demo-md-0-aaaaa"}
    listed = [
        secret("aws.cluster.x-k8s.io/kept-0", **mine),
        secret("aws.cluster.x-k8s.io/kept-1", **mine),
        secret("aws.cluster.x-k8s.io/stray-0", **mine),
        secret("aws.cluster.x-k8s.io/other-group-0", **{**mine, GROUP: "md-1"}),
        secret("aws.cluster.x-k8s.io/shared-0", **{**mine, OWNED_KEY: "shared"}),
        secret("aws.cluster.x-k8s.io/template-0", **{OWNED_KEY: "owned", GROUP: "md-0"}),  # no MachineName
    ]
    with Stubber(client) as stub:
        stub.add_response(
            "list_secrets", {"SecretList": listed}, {"Filters": [{"Key": "tag-key", "Values": [OWNED_KEY]}]}
        )
        stray = unreferenced_secrets(
            _Ctx(client), {OWNED_KEY: "owned", GROUP: "md-0"}, {"aws.cluster.x-k8s.io/kept"}, "MachineName"
        )
        stub.assert_no_pending_responses()
    assert stray == ["aws.cluster.x-k8s.io/stray-0"]


def test_deleting_an_entry_already_gone_is_fine():
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    ctx = _Ctx(client)
    with Stubber(client) as stub:
        stub.add_client_error("delete_secret", "ResourceNotFoundException")
        stub.add_response("delete_secret", {})
        delete_named(ctx, ["a-0", "b-0"], "stray")
        stub.assert_no_pending_responses()
    assert [p.resource for p in ctx.ops.plan] == ["a-0", "b-0"]


def test_a_pools_sweep_leaves_machine_entries_alone():
    client = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    pool = {OWNED_KEY: "owned", GROUP: "mp-0"}
    listed = [
        secret("aws.cluster.x-k8s.io/version-1-0", **pool),
        secret("aws.cluster.x-k8s.io/killed-0", **pool),
        secret("aws.cluster.x-k8s.io/machine-0", **pool, MachineName="demo/demo-mp-0-aaaaa"),
    ]
    with Stubber(client) as stub:
        stub.add_response("list_secrets", {"SecretList": listed})
        stray = unreferenced_secrets(_Ctx(client), pool, {"aws.cluster.x-k8s.io/version-1"}, unmarked="MachineName")
    assert stray == ["aws.cluster.x-k8s.io/killed-0"]
