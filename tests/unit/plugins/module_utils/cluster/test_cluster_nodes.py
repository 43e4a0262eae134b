# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A self-managed cluster's Nodes as the status reads them (cluster/cluster_nodes.py): the PKI secret is read, and a
client certificate minted, only when the Node list goes to the API server. Secrets Manager is a botocore Stubber (an
unexpected request fails the test); no API server answers here, so a list that went out would fail too - the path
against a simulated cluster is tests/integration/test_cluster.py's HA no-op (one GetSecretValue fewer)."""

from __future__ import annotations

from botocore.stub import Stubber

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster.cluster_nodes import read_self_managed_nodes
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.shared_reads import SharedReads
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm.pki import secret_name
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.access import KubernetesApiSettings

ENDPOINT = ("demo-apiserver-1.eu-west-1.elb.amazonaws.com", 6443)
NODE = {"metadata": {"name": "ip-10-0-1-10.ec2.internal", "labels": {}}, "spec": {}, "status": {"conditions": []}}


def context(handed: dict | None = None) -> Context:
    session = AwsSession("eu-west-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    session.share_reads(SharedReads(handed, scope="eu-west-1|"))
    return Context(session=session, cluster="demo", check_mode=False)


def node_list_handed_on() -> dict:
    """What an earlier step of the run hands on after it listed the Nodes at the same endpoint."""
    earlier = SharedReads({}, scope="eu-west-1|")
    url = f"https://{ENDPOINT[0]}:{ENDPOINT[1]}"
    key = earlier.key("k8s:ListNodes", {"url": url, "path": "/api/v1/nodes", "query": {"limit": "500"}})
    earlier.record("k8s:ListNodes", key, {"items": [NODE], "metadata": {}})
    return earlier.handed_forward(planned_change=False) or {}


def test_a_node_list_handed_on_needs_no_pki_read():
    ctx = context(node_list_handed_on())
    with Stubber(ctx.client("secretsmanager").raw) as secrets:  # no response queued: a GetSecretValue fails
        read = read_self_managed_nodes(ctx, KubernetesApiSettings(), "demo", ENDPOINT)
        secrets.assert_no_pending_responses()
    assert read.reason == "" and [n.name for n in read.nodes or ()] == [NODE["metadata"]["name"]]
    assert dict(ctx.session.shared.served) == {"k8s:ListNodes": 1}


def test_without_a_pki_secret_the_nodes_are_unread_and_nothing_goes_to_the_api():
    ctx = context()
    with Stubber(ctx.client("secretsmanager").raw) as secrets:
        secrets.add_client_error(
            "get_secret_value", "ResourceNotFoundException", expected_params={"SecretId": secret_name("demo")}
        )
        read = read_self_managed_nodes(ctx, KubernetesApiSettings(), "demo", ENDPOINT)
        secrets.assert_no_pending_responses()
    assert read.nodes is None and read.reason == "the cluster has no PKI secret yet"
    assert ctx.session.recorder.as_dict() == {"secretsmanager:GetSecretValue": 1}
