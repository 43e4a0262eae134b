# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Per-cluster identity at playbook level, and static credentials from Ansible Vault or from AWX's environment.

* Two clusters in ONE site.yml run, each assuming a role of its own account (``capa_cluster.identity``: role ARN,
  external id, session name, duration; the second through a chained ``source_identity``): moto gives each
  assumed account its own backend, so every VPC, instance, load balancer and secret must be found in its
  cluster's account and nowhere else.
* A wrong external id fails before any mutating request, naming the role and the refusal. moto itself does
  not read a role's trust policy unless IAM enforcement is on (and then lets a missing ExternalId pass);
  tools/moto_server.py's fix 5 makes AssumeRole check the trust policy's ``sts:ExternalId`` condition as AWS
  does, so this is AWS's refusal, not ours.
* Static credentials: an inventory whose keys sit in an ansible-vault encrypted vars file (passed to the
  modules through the play's ``environment``, see docs/docsite/rst/getting_started.rst, "Credentials"), and the
  variables an AWX "Amazon Web Services" credential injects (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_SECURITY_TOKEN``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError
from cluster_helpers import write_inventory
from test_least_privilege import iam_enforced

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "playbooks/site.yml"
DELETE = REPO / "playbooks/delete.yml"
HOME = "123456789012"  # moto's default account: the caller's own
ACCOUNT_A, ACCOUNT_B = "111111111111", "222222222222"


def owner(cluster):
    return f"sigs.k8s.io/cluster-api-provider-aws/cluster/{cluster}"


def trust(external_id):
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{HOME}:root"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"sts:ExternalId": external_id}},
            }
        ],
    }


def trust_anyone():
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }


def in_account(aws, service, account):
    """A client of the administrator acting in ``account`` (moto's x-moto-account-id header)."""
    client = aws.client(service)
    client.meta.events.register(
        f"before-sign.{service}.*", lambda request, **kwargs: request.headers.add_header("x-moto-account-id", account)
    )
    return client


def create_role(aws, account, name, external_id):
    """A role in ``account`` (moto's x-moto-account-id header picks the account's backend), as its admin would."""
    iam = in_account(aws, "iam", account)
    return iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust(external_id)))["Role"]["Arn"]


def session_in(aws, role_arn, external_id):
    credentials = aws.client("sts").assume_role(RoleArn=role_arn, RoleSessionName="check", ExternalId=external_id)[
        "Credentials"
    ]
    return boto3.session.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name="us-east-1",
    )


def small_cluster(name, identity):
    return {
        "name": name,
        "region": "us-east-1",
        "identity": identity,
        "network": {"vpc": {"availability_zone_usage_limit": 1}, "nat_gateways": "none"},
        "control_plane": {"replicas": 1},
    }


def owned_in(session, cluster, url):
    """What ``cluster`` owns in the session's account: VPCs, live instances, classic ELBs, secrets."""
    key = owner(cluster)
    ec2 = session.client("ec2", endpoint_url=url)
    by_tag = [{"Name": f"tag:{key}", "Values": ["owned"]}]
    live = by_tag + [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    elb = session.client("elb", endpoint_url=url)
    names = [d["LoadBalancerName"] for d in elb.describe_load_balancers()["LoadBalancerDescriptions"]]
    descriptions = elb.describe_tags(LoadBalancerNames=names)["TagDescriptions"] if names else []
    secrets = session.client("secretsmanager", endpoint_url=url).list_secrets(
        Filters=[{"Key": "tag-key", "Values": [key]}]
    )["SecretList"]
    return {
        "vpc": len(ec2.describe_vpcs(Filters=by_tag)["Vpcs"]),
        "instance": sum(len(r["Instances"]) for r in ec2.describe_instances(Filters=live)["Reservations"]),
        "elb": sum(1 for d in descriptions if any(t["Key"] == key for t in d.get("Tags", []))),
        "secret": len(secrets),
    }


def test_two_clusters_in_one_run_each_in_its_own_account(aws, run_playbook, tmp_path):
    role_a = create_role(aws, ACCOUNT_A, "capa-team-a", "ext-a")
    hop = create_role(aws, ACCOUNT_A, "capa-hop", "ext-hop")
    role_b = create_role(aws, ACCOUNT_B, "capa-team-b", "ext-b")
    specs = [
        small_cluster(
            "id-a",
            {"role_arn": role_a, "external_id": "ext-a", "session_name": "capa-id-a", "duration_seconds": 900},
        ),
        # Chained: the caller assumes capa-hop (account A), whose credentials assume capa-team-b (account B).
        small_cluster(
            "id-b",
            {
                "role_arn": role_b,
                "external_id": "ext-b",
                "duration_seconds": 1800,
                "source_identity": {"role_arn": hop, "external_id": "ext-hop"},
            },
        ),
    ]
    inventory = write_inventory(tmp_path, *specs)
    aws.reset_requests()
    run_playbook(SITE, inventory=inventory)
    assume_calls = sum(1 for r in aws.requests() if r["operation"] == "AssumeRole")

    home = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    in_a = session_in(aws, role_a, "ext-a")
    in_b = session_in(aws, role_b, "ext-b")
    found = {
        account: {cluster: owned_in(session, cluster, aws.url) for cluster in ("id-a", "id-b")}
        for account, session in ((HOME, home), (ACCOUNT_A, in_a), (ACCOUNT_B, in_b))
    }
    print(f"per account after one site.yml run ({assume_calls} AssumeRole requests): {found}")
    nothing = {"vpc": 0, "instance": 0, "elb": 0, "secret": 0}
    expected = {"vpc": 1, "instance": 1, "elb": 1}
    assert found[HOME] == {"id-a": nothing, "id-b": nothing}
    assert found[ACCOUNT_A]["id-b"] == nothing and found[ACCOUNT_B]["id-a"] == nothing
    for account, cluster in ((ACCOUNT_A, "id-a"), (ACCOUNT_B, "id-b")):
        counts = found[account][cluster]
        assert {k: counts[k] for k in expected} == expected, (account, cluster, counts)
        assert counts["secret"] >= 2, (account, cluster, counts)  # PKI + the control plane's bootstrap data
    # Every module run of a cluster assumed its role (the chained one twice per run): one per module at least.
    assert assume_calls >= 2 * 6

    run_playbook(DELETE, inventory=inventory)
    for account, session in ((ACCOUNT_A, in_a), (ACCOUNT_B, in_b)):
        for cluster in ("id-a", "id-b"):
            assert owned_in(session, cluster, aws.url) == nothing, (account, cluster)


def test_a_wrong_external_id_fails_before_any_change(aws, run_playbook, tmp_path):
    role = create_role(aws, ACCOUNT_A, "capa-team-a", "ext-a")
    inventory = write_inventory(tmp_path, small_cluster("id-wrong", {"role_arn": role, "external_id": "guess"}))
    aws.reset_requests()
    result = run_playbook(SITE, inventory=inventory, expect_rc=None)
    assert result.rc != 0
    [failed] = [t for t in result.tasks if t.failed]
    message = failed.result["msg"]
    print(f"wrong external id: {message}")
    assert role in message
    assert "external id" in message and "trust policy" in message
    assert "AccessDenied" in message and "sts:AssumeRole" in message
    # Nothing but the refused STS call reached AWS's mutating side.
    assert {f"{r['service']}:{r['operation']}" for r in aws.mutating_requests()} == {"sts:AssumeRole"}
    assert len(aws.mutating_requests()) == 1
    # As on AWS, no external id at all is refused too (moto alone would let it pass).
    with pytest.raises(ClientError) as refused:
        aws.client("sts").assume_role(RoleArn=role, RoleSessionName="none")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    # The right external id works with the same role (the refusal was the external id, not the role).
    assert (
        session_in(aws, role, "ext-a").client("sts", endpoint_url=aws.url).get_caller_identity()["Account"] == ACCOUNT_A
    )


VAULT_PASSWORD = "correct horse battery staple"
ACCOUNT_VAULT, ACCOUNT_AWX = "333333333333", "444444444444"


def vpcs_in(aws, credentials, cluster):
    ec2 = boto3.client("ec2", endpoint_url=aws.url, region_name="us-east-1", **credentials)
    return ec2.describe_vpcs(Filters=[{"Name": f"tag:{owner(cluster)}", "Values": ["owned"]}])["Vpcs"]


def test_static_credentials_from_vault_and_from_awx_environment(aws, run_playbook, tmp_path):
    """Static keys reach every module and win over the controller's own, in one site.yml run of two clusters on
    a moto server enforcing IAM (which, like AWS, refuses a user's keys sent with a session token and a role
    session's keys sent without theirs): ``cred-vault`` takes the keys of a user of account 333333333333 from an
    ansible-vault encrypted host_vars file (``capa_aws_environment``, the play's environment); ``cred-awx``
    takes the temporary keys an AWX credential injects for the whole job (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SECURITY_TOKEN``), a role session's in account 444444444444. moto maps keys
    to their account, so a cluster's VPC lands in that account only if those keys signed its requests."""
    allow_all = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    )
    users = in_account(aws, "iam", ACCOUNT_VAULT)
    users.create_user(UserName="capa-static")
    users.put_user_policy(UserName="capa-static", PolicyName="all", PolicyDocument=allow_all)
    key = users.create_access_key(UserName="capa-static")["AccessKey"]
    roles = in_account(aws, "iam", ACCOUNT_AWX)
    role = roles.create_role(RoleName="awx-job", AssumeRolePolicyDocument=json.dumps(trust_anyone()))["Role"]
    roles.put_role_policy(RoleName="awx-job", PolicyName="all", PolicyDocument=allow_all)
    temporary = aws.client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="awx")["Credentials"]
    awx_env = {
        "AWS_ACCESS_KEY_ID": temporary["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": temporary["SecretAccessKey"],
        "AWS_SECURITY_TOKEN": temporary["SessionToken"],
    }

    inventory_dir = tmp_path / "inventory"
    (inventory_dir / "host_vars/cred-vault").mkdir(parents=True)
    specs = [small_cluster("cred-vault", None), small_cluster("cred-awx", None)]
    for spec in specs:
        del spec["identity"]
    write_inventory(inventory_dir, *specs, name="hosts.yml")
    secrets = inventory_dir / "host_vars/cred-vault/vault.yml"
    secrets.write_text(
        yaml.safe_dump(
            {
                "capa_aws_environment": {
                    "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                    "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                    "AWS_SESSION_TOKEN": "",  # long-term keys: no token, not even the job's
                }
            }
        )
    )
    password_file = tmp_path / "vault-password"
    password_file.write_text(VAULT_PASSWORD)
    vault = Path(sys.executable).parent / "ansible-vault"
    subprocess.run(
        [str(vault), "encrypt", "--vault-password-file", str(password_file), str(secrets)],
        check=True,
        capture_output=True,
    )
    assert secrets.read_text().startswith("$ANSIBLE_VAULT;")
    with iam_enforced(aws):
        result = run_playbook(
            SITE,
            inventory=inventory_dir / "hosts.yml",
            env=awx_env,
            args=["--vault-password-file", str(password_file)],
            expect_rc=None,
        )
    assert result.rc == 0, [(t.host, t.name, t.result.get("msg")) for t in result.tasks if t.failed]
    assert key["SecretAccessKey"] not in result.stdout + result.stderr

    user = {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
    job = {
        "aws_access_key_id": temporary["AccessKeyId"],
        "aws_secret_access_key": temporary["SecretAccessKey"],
        "aws_session_token": temporary["SessionToken"],
    }
    found = {
        account: {cluster: len(vpcs_in(aws, credentials, cluster)) for cluster in ("cred-vault", "cred-awx")}
        for account, credentials in ((HOME, {}), (ACCOUNT_VAULT, user), (ACCOUNT_AWX, job))
    }
    print(f"VPCs per account: {found}")
    assert found == {
        HOME: {"cred-vault": 0, "cred-awx": 0},
        ACCOUNT_VAULT: {"cred-vault": 1, "cred-awx": 0},
        ACCOUNT_AWX: {"cred-vault": 0, "cred-awx": 1},
    }
