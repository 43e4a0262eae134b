# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bootstrap tokens that expire, end to end at both wires: a machine group's and a pool's runs (capa_instance's and
capa_asg's tiers as the modules run them, against in-process moto) with the cluster's Kubernetes API played by
``kube_double`` - reached over HTTPS through ``kubernetes_api.server`` with the client the modules use.

What is shown: each machine gets its own token Secret, created before its launch, with an expiry, and only that
token is in its bootstrap document; tokens are renewed while their machine has not joined and deleted once it has
(and when it goes); the token that releases before 0.2.0 minted without an expiry is deleted; a pool has one token,
rotated into a new launch template version (no instance refresh) when less than half of it is left, the superseded
one deleted once it lapses; without the API a join or a pool is refused before anything changes.
"""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import re
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest
from moto import mock_aws
from test_golden_machines import CLUSTER, CREDENTIALS, REGION, Account, machine_args, pool_args, run_tier

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import bootstrap_tokens as tokens
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.bootstrap_data import BOOTSTRAP_TAG
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.machine_spec import BootstrapRef
from ansible_collections.clusterapi.aws.plugins.module_utils.machines.pool_token import TOKEN_ID_TAG

IN_TEXT = re.compile(r"\b([a-z0-9]{6})\.([a-z0-9]{16})\b")  # a bootstrap token inside a document
MUTATING_AWS = ("ec2:RunInstances", "ec2:TerminateInstances", "ec2:CreateLaunchTemplate")


@pytest.fixture
def account(tmp_path: Path) -> Iterator[Account]:
    with mock_aws(), Account(tmp_path) as account:
        yield account


def run(module: str, args: dict[str, Any]) -> tuple[list[str], dict[str, Any], list[str]]:
    """(the plan's calls in order - but the bootstrap entries' - the result, the AWS calls that reached the wire)."""
    sent: list[str] = []
    ctx, result = run_tier(module, args, record=lambda call, _params: sent.append(call))
    plan = [p.call for p in ctx.ops.plan if not p.call.startswith(("secretsmanager:", "ssm:"))]
    return plan, result, sent


def tokens_of(account: Account) -> dict[str, tokens.JoinToken]:
    found = (tokens.parse_token_secret(s) for s in account.kube.secrets.values())
    return {t.id: t for t in found if t is not None}


def documents(tags: dict[str, str]) -> str:
    ref = BootstrapRef.from_tag(tags[BOOTSTRAP_TAG])
    assert ref is not None
    sm = boto3.client("secretsmanager", region_name=REGION, **CREDENTIALS)
    data = b"".join(sm.get_secret_value(SecretId=name)["SecretBinary"] for name in ref.entry_names())
    return gzip.decompress(data).decode()


def instance_tags(account: Account) -> dict[str, dict[str, str]]:
    return {
        i["InstanceId"]: {t["Key"]: t["Value"] for t in i.get("Tags", [])}
        for i in account.instances()
        if i["State"]["Name"] == "running"
    }


def expire_in(account: Account, token_id: str, seconds: float) -> None:
    """Move a token's expiry, as time passing would."""
    when = tokens.utc_now() + datetime.timedelta(seconds=seconds)
    secret = account.kube.secrets[f"bootstrap-token-{token_id}"]
    secret["data"]["expiration"] = base64.b64encode(tokens.rfc3339(when).encode()).decode()


# machine groups ------------------------------------------------------------------------------------------------
def test_each_machine_joins_with_its_own_expiring_token_which_goes_once_it_joined(account):
    plan, result, _sent = run("capa_instance", machine_args(account, name="md-0", replicas=2))
    # A token Secret before each launch; both machines joined within the run, so their tokens are gone again.
    assert plan == ["k8s:CreateSecret", "ec2:RunInstances"] * 2 + ["k8s:DeleteSecret"] * 2, plan
    assert result["replicas"]["ready"] == 2 and tokens_of(account) == {}
    # One token per document, each machine's own (the double keeps no deleted Secret: the documents say it).
    found = [IN_TEXT.findall(documents(tags)) for tags in instance_tags(account).values()]
    assert [len(f) for f in found] == [1, 1] and found[0] != found[1]

    # A second run reads the tokens once and writes nothing, to AWS or to the cluster.
    account.kube.requests.clear()
    plan, _result, sent = run("capa_instance", machine_args(account, name="md-0", replicas=2))
    assert plan == [] and not [c for c in sent if c in MUTATING_AWS]
    assert account.kube.writes() == []
    assert [r for r in account.kube.requests if "secrets" in r[1]] == [
        ("GET", "/api/v1/namespaces/kube-system/secrets")
    ]


def test_a_token_is_renewed_while_its_machine_has_not_joined_and_deleted_once_it_has(account):
    args = machine_args(account, name="md-0", replicas=1, wait=False)
    account.kube.joining = False  # the node boots slowly: no Node during the run
    plan, _result, _sent = run("capa_instance", args)
    account.kube.joining, account.kube.booting = True, set(instance_tags(account))
    assert plan == ["k8s:CreateSecret", "ec2:RunInstances"]
    [token] = tokens_of(account).values()
    assert token.group == "md-0" and token.holder.startswith(f"{CLUSTER}-md-0-")
    left = token.remaining(tokens.utc_now())
    assert left is not None and 880 < left <= 900  # bootstrap.token_ttl: 15 minutes by default

    # Not joined, more than half of its life left: kept as it is.
    plan, _result, _sent = run("capa_instance", args)
    assert plan == [] and tokens_of(account)[token.id].expires == token.expires

    # Not joined, less than half left: renewed (CABPK's refresh), the same token.
    expire_in(account, token.id, 300)
    plan, _result, _sent = run("capa_instance", args)
    assert plan == ["k8s:PatchSecret"]
    renewed = tokens_of(account)[token.id]
    assert renewed.remaining(tokens.utc_now()) > 880

    # Joined: the next run deletes it.
    account.kube.booting = set()
    plan, _result, _sent = run("capa_instance", args)
    assert plan == ["k8s:DeleteSecret"] and tokens_of(account) == {}


def test_tokens_of_machines_that_went_and_the_token_that_never_expires_are_deleted(account):
    legacy = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": tokens.TOKEN_TYPE,
        "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
        "data": {
            key: base64.b64encode(value.encode()).decode()
            for key, value in {
                "token-id": "abcdef",
                "token-secret": "0123456789abcdef",
                "usage-bootstrap-authentication": "true",
                "description": f"clusterapi.aws bootstrap token of cluster {CLUSTER}",
            }.items()
        },
    }
    someone_elses = json.loads(json.dumps(legacy))
    someone_elses["metadata"]["name"] = "bootstrap-token-zzzzzz"
    someone_elses["data"]["token-id"] = base64.b64encode(b"zzzzzz").decode()
    someone_elses["data"]["description"] = base64.b64encode(b"kubeadm token create by an admin").decode()
    account.kube.secrets.update({"bootstrap-token-abcdef": legacy, "bootstrap-token-zzzzzz": someone_elses})
    args = machine_args(account, name="md-0", replicas=1, wait=False)
    account.kube.joining = False
    run("capa_instance", args)
    account.kube.joining, account.kube.booting = True, set(instance_tags(account))
    # The never-expiring token of this collection went; a token an admin made is not ours and stays; the new
    # machine's (it has not joined) is there.
    found = tokens_of(account)
    assert "abcdef" not in found and "zzzzzz" in found and len(found) == 2

    plan, _result, _sent = run("capa_instance", {**args, "state": "absent"})
    assert "ec2:TerminateInstances" in plan and plan[-1] == "k8s:DeleteSecret"
    assert set(tokens_of(account)) == {"zzzzzz"}


def test_without_the_api_a_join_is_refused_before_anything_changes(account):
    args = machine_args(account, name="md-0", replicas=1)
    del args["kubernetes_api"]  # the endpoint's name does not resolve here: no API to mint a token in
    with pytest.raises(Exception, match="refused: launching .*bootstrap token minted in the cluster"):
        run("capa_instance", args)
    assert instance_tags(account) == {} and account.kube.writes() == []


# pools ---------------------------------------------------------------------------------------------------------
def latest_version(name: str) -> dict[str, Any]:
    ec2 = boto3.client("ec2", region_name=REGION, **CREDENTIALS)
    versions = ec2.describe_launch_template_versions(LaunchTemplateName=name)["LaunchTemplateVersions"]
    return max(versions, key=lambda v: v["VersionNumber"])


def version_tags(version: dict[str, Any]) -> dict[str, str]:
    for spec in version["LaunchTemplateData"].get("TagSpecifications", []):
        if spec["ResourceType"] == "instance":
            return {t["Key"]: t["Value"] for t in spec["Tags"]}
    return {}


def test_a_pool_token_is_rotated_into_a_new_version_without_an_instance_refresh(account):
    args = pool_args(account)
    plan, _result, _sent = run("capa_asg", args)
    assert plan.index("k8s:CreateSecret") < plan.index("ec2:CreateLaunchTemplate")
    first = version_tags(latest_version("mp-0"))
    [token] = tokens_of(account).values()
    assert first[TOKEN_ID_TAG] == token.id and token.group == token.holder == "mp-0"
    assert 86000 < token.remaining(tokens.utc_now()) <= 86400  # a pool's default: one day
    assert IN_TEXT.findall(documents(first)) == [(token.id, token.secret)]
    assert token.secret not in json.dumps(latest_version("mp-0"), default=str)  # no token in it, only its id

    plan, _result, _sent = run("capa_asg", args)
    assert plan == [] and account.kube.writes() == [("POST", "/api/v1/namespaces/kube-system/secrets")]

    # Less than half of its life left: a new token in a new version; the instances are not replaced.
    expire_in(account, token.id, 3600)
    plan, _result, sent = run("capa_asg", args)
    assert plan == ["k8s:CreateSecret", "ec2:CreateLaunchTemplateVersion"], plan
    assert "autoscaling:StartInstanceRefresh" not in sent
    second = version_tags(latest_version("mp-0"))
    assert second[TOKEN_ID_TAG] != token.id and set(tokens_of(account)) == {token.id, second[TOKEN_ID_TAG]}
    assert (
        second["sigs.k8s.io/cluster-api-provider-aws/bootstrap-data-hash"]
        == first["sigs.k8s.io/cluster-api-provider-aws/bootstrap-data-hash"]
    )

    # The superseded token lapses; the run after deletes it.
    expire_in(account, token.id, -1)
    plan, _result, _sent = run("capa_asg", args)
    assert plan == ["k8s:DeleteSecret"] and set(tokens_of(account)) == {second[TOKEN_ID_TAG]}

    plan, _result, _sent = run("capa_asg", {**args, "state": "absent"})
    assert plan[-1] == "k8s:DeleteSecret" and tokens_of(account) == {}


def test_without_the_api_a_pool_is_refused_before_anything_changes(account):
    args = pool_args(account)
    del args["kubernetes_api"]
    with pytest.raises(Exception, match="refused: pool mp-0 needs a launch template version"):
        run("capa_asg", args)
    ec2 = boto3.client("ec2", region_name=REGION, **CREDENTIALS)
    assert ec2.describe_launch_templates()["LaunchTemplates"] == []


def test_without_the_api_a_first_build_joins_with_kubeadm_inits_token_while_it_lasts(account):
    """A control plane and workers built from outside the cluster's network (no API): the first machine runs
    kubeadm init with its own token, kept on the controller's side (Secrets Manager, next to the PKI); the joins of
    that build use it while more than five minutes of it are left, and are refused after."""
    control_plane = machine_args(
        account, name="control-plane", role="control-plane", replicas=1, load_balancers=[], wait=False
    )
    del control_plane["kubernetes_api"]
    run("capa_instance", control_plane)
    sm = boto3.client("secretsmanager", region_name=REGION, **CREDENTIALS)
    stored = json.loads(sm.get_secret_value(SecretId=f"clusterapi.aws/{CLUSTER}/init-token")["SecretString"])
    [init_document] = [documents(tags) for tags in instance_tags(account).values()]
    assert IN_TEXT.findall(init_document) == [tuple(stored["token"].split("."))]
    assert "ttl: 900s" in init_document

    workers = machine_args(account, name="md-0", replicas=1, wait=False)
    del workers["kubernetes_api"]
    plan, _result, _sent = run("capa_instance", workers)
    assert plan == ["ec2:RunInstances"]  # no token to mint: the init token is in its document
    worker = [t for i, t in instance_tags(account).items() if t.get("Name", "").startswith(f"{CLUSTER}-md-0-")]
    assert IN_TEXT.findall(documents(worker[0])) == [tuple(stored["token"].split("."))]

    # Five minutes or less left: a join would not make it - refused before the launch.
    soon = tokens.rfc3339(tokens.utc_now() + datetime.timedelta(seconds=200))
    sm.put_secret_value(
        SecretId=f"clusterapi.aws/{CLUSTER}/init-token", SecretString=json.dumps({**stored, "expires": soon})
    )
    with pytest.raises(Exception, match="refused: launching .*kubeadm init's token has expired or is about to"):
        run("capa_instance", {**workers, "replicas": 2})
    assert len(instance_tags(account)) == 2
