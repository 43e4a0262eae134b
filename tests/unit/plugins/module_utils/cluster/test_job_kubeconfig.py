# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The kubeconfig a job builds in memory (cluster/job_kubeconfig.py, the capa_kubeconfig lookup's work): which kind a
request is, what it refuses before any request, the requests each kind makes (botocore Stubber: an unexpected call
fails the test) and what the kubeconfig holds. The whole path against a server and a simulated cluster is
tests/integration/test_kubeconfig_lookup.py's subject."""

from __future__ import annotations

import base64
import datetime
import urllib.parse
from typing import Any

import pytest
from botocore.stub import Stubber
from cryptography import x509

from ansible_collections.clusterapi.aws.plugins.module_utils.cluster import job_kubeconfig as jk
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.context import Context
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.errors import ReconcileError, SpecError
from ansible_collections.clusterapi.aws.plugins.module_utils.kernel.session import AwsSession
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as k

HOST = "demo-apiserver-1.eu-west-1.elb.amazonaws.com"
EKS_ENDPOINT = "https://0123456789ABCDEF0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com"


@pytest.fixture(scope="module")
def pki() -> k.ClusterPki:
    return k.generate_pki()


def context() -> Context:
    session = AwsSession("eu-west-1", None, {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret"})
    return Context(session=session, cluster="demo", check_mode=True)


def stubbed(ctx: Context, service: str) -> Stubber:
    stubber = Stubber(ctx.client(service).raw)
    stubber.activate()
    return stubber


def described(name: str = "demo-eks", **overrides: Any) -> dict[str, Any]:
    cluster = {
        "name": name,
        "arn": f"arn:aws:eks:eu-west-1:123456789012:cluster/{name}",
        "status": "ACTIVE",
        "endpoint": EKS_ENDPOINT,
        "certificateAuthority": {"data": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n...").decode()},
    }
    cluster.update(overrides)
    return cluster


def decoded_token(bearer: str) -> urllib.parse.ParseResult:
    assert bearer.startswith("k8s-aws-v1.")
    body = bearer.removeprefix("k8s-aws-v1.")
    return urllib.parse.urlparse(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode())


# --- the kind, and what is refused before any request -------------------------------------------------------------
@pytest.mark.parametrize(
    "request_, kind",
    [
        (jk.KubeconfigRequest("demo", host=HOST), jk.SELF_MANAGED),  # host means self-managed
        (jk.KubeconfigRequest("demo"), None),  # only DescribeCluster can tell
        (jk.KubeconfigRequest("demo", kind=jk.EKS, host=HOST), jk.EKS),  # asked for: host is ignored
        (jk.KubeconfigRequest("demo", kind=jk.SELF_MANAGED, host=HOST), jk.SELF_MANAGED),
    ],
)
def test_the_kind_known_before_any_request(request_, kind):
    assert request_.kind_without_asking == kind


@pytest.mark.parametrize(
    "request_, field, reason",
    [
        (jk.KubeconfigRequest("demo", kind=jk.SELF_MANAGED), "host", "is required for a self-managed cluster"),
        (jk.KubeconfigRequest("demo", kind="weird"), "kind", "'weird' is not one of auto, self-managed, eks"),
        # A self-managed name follows CAPA's cluster_name rule; an EKS name EKS's (upper case and '_' allowed).
        (jk.KubeconfigRequest("Demo_1", host=HOST), "cluster name", "must be lower-case letters"),
        (jk.KubeconfigRequest("-demo"), "cluster name", "must be 1-100 letters, digits"),
        (jk.KubeconfigRequest("demo", host=HOST, port=0), "port", "0 is not a port number"),
        (
            jk.KubeconfigRequest("demo", host=HOST, validity=datetime.timedelta(minutes=4)),
            "validity_minutes",
            "4 is not between 5 and 10080",
        ),
        (
            jk.KubeconfigRequest("demo", host=HOST, validity=datetime.timedelta(days=7, minutes=1)),
            "validity_minutes",
            "10081 is not between 5 and 10080",
        ),
    ],
)
def test_a_request_that_cannot_succeed_is_refused(request_, field, reason):
    with pytest.raises(SpecError) as refused:
        jk.check_request(request_)
    assert refused.value.field == field and reason in refused.value.reason


def test_an_eks_name_with_capitals_is_accepted():
    jk.check_request(jk.KubeconfigRequest("Team_A-eks", kind=jk.EKS))
    jk.check_request(jk.KubeconfigRequest("Team_A-eks"))


# --- EKS --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", [jk.AUTO, jk.EKS])
def test_an_eks_cluster_gets_a_token_for_it_alone_signed_without_a_request(kind):
    ctx = context()
    eks = stubbed(ctx, "eks")
    eks.add_response("describe_cluster", {"cluster": described()}, {"name": "demo-eks"})
    config = jk.job_kubeconfig(ctx, jk.KubeconfigRequest("demo-eks", kind=kind))
    eks.assert_no_pending_responses()
    assert config["apiVersion"] == "v1" and config["kind"] == "Config" and config["current-context"] == "demo-eks"
    [cluster], [user], [context_] = config["clusters"], config["users"], config["contexts"]
    assert cluster == {
        "name": "demo-eks",
        "cluster": {"server": EKS_ENDPOINT, "certificate-authority-data": described()["certificateAuthority"]["data"]},
    }
    assert context_ == {"name": "demo-eks", "context": {"cluster": "demo-eks", "user": "demo-eks"}}
    # aws-iam-authenticator's token: a presigned GetCallerIdentity of the session's key, for the region's STS,
    # with the cluster's name signed in (x-k8s-aws-id), so it works for this cluster only.
    url = decoded_token(user["user"]["token"])
    query = urllib.parse.parse_qs(url.query)
    assert url.netloc == "sts.eu-west-1.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"] and query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/") and "/eu-west-1/sts/" in query["X-Amz-Credential"][0]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert set(user["user"]) == {"token"}


def test_an_eks_cluster_still_being_created_has_no_kubeconfig_yet():
    ctx = context()
    eks = stubbed(ctx, "eks")
    creating = described(status="CREATING")
    del creating["endpoint"]
    eks.add_response("describe_cluster", {"cluster": creating}, {"name": "demo-eks"})
    with pytest.raises(ReconcileError, match="EKS cluster demo-eks has no endpoint yet \\(status CREATING\\)"):
        jk.job_kubeconfig(ctx, jk.KubeconfigRequest("demo-eks"))


@pytest.mark.parametrize(
    "kind, message",
    [
        (jk.EKS, "no EKS cluster named demo in eu-west-1$"),
        (jk.AUTO, "no EKS cluster named demo in eu-west-1; for a self-managed cluster give host"),
    ],
)
def test_no_eks_cluster_by_that_name(kind, message):
    ctx = context()
    eks = stubbed(ctx, "eks")
    eks.add_client_error("describe_cluster", "ResourceNotFoundException", "No cluster found for name: demo.", 404)
    with pytest.raises(ReconcileError, match=message):
        jk.job_kubeconfig(ctx, jk.KubeconfigRequest("demo", kind=kind))


# --- self-managed -----------------------------------------------------------------------------------------------
def test_a_self_managed_cluster_gets_a_client_certificate_from_its_pki_secret_only(pki):
    ctx = context()
    secrets = stubbed(ctx, "secretsmanager")
    stubbed(ctx, "eks")  # no response queued: a DescribeCluster would fail the test
    secrets.add_response(
        "get_secret_value",
        {"Name": k.secret_name("demo"), "SecretString": pki.to_secret_string()},
        {"SecretId": k.secret_name("demo")},
    )
    request = jk.KubeconfigRequest("demo", host=HOST, port=443, validity=datetime.timedelta(minutes=10))
    now = datetime.datetime.now(datetime.timezone.utc)
    config = jk.job_kubeconfig(ctx, request)
    secrets.assert_no_pending_responses()
    [cluster], [user] = config["clusters"], config["users"]
    assert cluster["cluster"]["server"] == f"https://{HOST}:443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]).decode() == pki.cluster_ca_cert
    certificate = x509.load_pem_x509_certificate(base64.b64decode(user["user"]["client-certificate-data"]))
    certificate.verify_directly_issued_by(x509.load_pem_x509_certificate(pki.cluster_ca_cert.encode()))
    assert datetime.timedelta(minutes=9) < k.not_after(certificate) - now <= datetime.timedelta(minutes=10)
    assert user["user"]["client-key-data"]


def test_a_self_managed_cluster_without_pki_names_the_secret():
    ctx = context()
    secrets = stubbed(ctx, "secretsmanager")
    secrets.add_client_error("get_secret_value", "ResourceNotFoundException", "Secrets Manager can't find it.", 400)
    with pytest.raises(ReconcileError, match="secret clusterapi.aws/demo/pki not found"):
        jk.job_kubeconfig(ctx, jk.KubeconfigRequest("demo", host=HOST))
