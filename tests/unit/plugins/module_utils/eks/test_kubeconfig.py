# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""eks/kubeconfig.py: the IAM authenticator token (a presigned STS URL for the cluster) and the two kubeconfigs - the
exec one is state (planned when its content changes), the token one an output refreshed every run (never a change).
"""

from __future__ import annotations

import base64
import os
import stat
import urllib.parse

import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.eks import kubeconfig
from ansible_collections.clusterapi.aws.plugins.module_utils.eks.eks_cluster_spec import EksClusterSpec
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.workload.credentials import eks_token

from .eks_stubs import CLUSTER, described, params


def test_token_is_a_presigned_sts_url_for_the_cluster():
    session = AwsSession("eu-west-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    token = eks_token(session.credentials(), "eu-west-1", "my-eks")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    body = token[len("k8s-aws-v1.") :]
    url = urllib.parse.urlparse(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode())
    query = urllib.parse.parse_qs(url.query)
    assert (url.scheme, url.netloc, url.path) == ("https", "sts.eu-west-1.amazonaws.com", "/")
    assert query["Action"] == ["GetCallerIdentity"] and query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/") and "/eu-west-1/sts/" in query["X-Amz-Credential"][0]


def test_the_exec_kubeconfig_is_state_the_token_one_an_output(tmp_path):
    """A second run with the same cluster plans nothing, yet rewrites the token kubeconfig (a fresh token)."""
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    spec = EksClusterSpec.from_params(params(tmp_path))
    cluster = described()["cluster"]
    first = Context(session=session, cluster=CLUSTER, check_mode=False)
    paths = kubeconfig.write_kubeconfigs(first, spec, cluster)
    assert paths == {"path": str(spec.paths.kubeconfig), "user_kubeconfig": str(spec.paths.user_kubeconfig)}
    assert [(p.call, p.resource, p.reason) for p in first.ops.plan] == [
        ("file:WriteFile", str(spec.paths.user_kubeconfig), "kubeconfig missing")
    ]
    user = yaml.safe_load(spec.paths.user_kubeconfig.read_text())
    assert user["users"][0]["user"]["exec"]["args"][:4] == ["eks", "get-token", "--cluster-name", CLUSTER]
    spec.paths.kubeconfig.write_text("stale")
    again = Context(session=session, cluster=CLUSTER, check_mode=False)
    kubeconfig.write_kubeconfigs(again, spec, cluster)
    assert again.ops.plan == []
    token_config = yaml.safe_load(spec.paths.kubeconfig.read_text())
    assert token_config["users"][0]["user"]["token"].startswith("k8s-aws-v1.")
    assert stat.S_IMODE(os.stat(spec.paths.kubeconfig).st_mode) == 0o600


def test_without_an_endpoint_check_mode_plans_the_exec_kubeconfig_and_a_real_run_warns(tmp_path):
    session = AwsSession("us-east-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    spec = EksClusterSpec.from_params(params(tmp_path))
    creating = {"name": CLUSTER, "status": "CREATING"}
    check = Context(session=session, cluster=CLUSTER, check_mode=True)
    assert kubeconfig.write_kubeconfigs(check, spec, creating) == {"path": None, "user_kubeconfig": None}
    assert [(p.call, p.resource) for p in check.ops.plan] == [("file:WriteFile", str(spec.paths.user_kubeconfig))]
    real = Context(session=session, cluster=CLUSTER, check_mode=False, wait=False)
    assert kubeconfig.write_kubeconfigs(real, spec, creating) == {"path": None, "user_kubeconfig": None}
    assert real.ops.plan == [] and any("no endpoint yet" in w for w in real.warnings)
    assert not (tmp_path / "out").exists()
