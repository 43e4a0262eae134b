"""site.yml run the way AWX runs a job: ansible-runner on a private data dir, the collection from the project's
collections/ (installed from the built tarball, as AWX installs collections/requirements.yml), AWS keys injected
as AWX's "Amazon Web Services" credential injects them, and the verdict read from the job events.

`make awx-job` runs it (ansible-runner lives in its own venv, .build/tools/ansible-runner; CAPA_ANSIBLE_RUNNER
names its executable and CAPA_TARBALL the tarball of `make dist`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from awx_jobs import run_job

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
TARBALL = Path(os.environ.get("CAPA_TARBALL", "")) if os.environ.get("CAPA_TARBALL") else None
AWX_PROJECT = REPO / "extensions" / "awx" / "project"

# What AWX's AWS credential injects (awx/main/models/credential/injectors: aws): the keys and, for temporary
# keys, the STS token as AWS_SECURITY_TOKEN.  Values unique enough to be searched for in every event.
AWX_CREDENTIAL = {
    "AWS_ACCESS_KEY_ID": "AKIACAPARUNNER7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "capaRunnerSecret/K7MDENG+bPxRfiCYzEXAMPLEKEY",
    "AWS_SECURITY_TOKEN": "capaRunnerSessionToken//FwoGZXIvYXdzEXAMPLETOKENvalue",
}
CLUSTER = {
    "name": "awx-job",
    "region": "us-east-1",
    "kind": "unmanaged",
    "kubernetes_version": "v1.31.2",
    "network": {"vpc": {"availability_zone_usage_limit": 2}, "nat_gateways": "single"},
    "control_plane": {"replicas": 1},
    "machine_deployments": [],
}

# The job templates of extensions/awx/controller/capa.yml set capa_output_dir "" (AWX throws the job's folder
# away): no local file is written, the status is published (set_stats' form), the kubeconfig comes from the lookup.
EXTRAVARS = {"capa_output_dir": ""}

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PEM_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
TOKEN = re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")  # a kubeadm bootstrap token


def _install_collection(pdd: Path) -> Path:
    """As AWX installs the project's collections/requirements.yml: into <private data dir>/requirements_collections,
    which the job's ANSIBLE_COLLECTIONS_PATH then names first.  (No Galaxy server here: the tarball of make dist.)"""
    assert TARBALL and TARBALL.is_file(), "CAPA_TARBALL must name the tarball of `make dist` (make awx-job sets it)"
    target = pdd / "requirements_collections"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    galaxy = str(VENV_BIN / "ansible-galaxy")
    subprocess.run(
        [galaxy, "collection", "install", "--no-deps", "--force", "-p", str(target), str(TARBALL)],
        env=env,
        cwd=str(pdd),
        check=True,
        capture_output=True,
    )
    assert (target / "ansible_collections" / "clusterapi" / "aws" / "MANIFEST.json").is_file()
    return target


def _private_data_dir(
    root: Path, endpoint: str, extravars: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None
) -> Path:
    """AWX's layout: project/ (the SCM checkout), inventory/, env/envvars, env/extravars (the job template's extra
    vars, and what a workflow hands on: its earlier jobs' artifacts, a credential's injected extra vars)."""
    pdd = root
    pdd.mkdir(parents=True)
    shutil.copytree(AWX_PROJECT, pdd / "project")
    collections = _install_collection(pdd)
    (pdd / "inventory").mkdir()
    inventory = {
        "capa_clusters": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "hosts": {CLUSTER["name"]: {"capa_cluster": cluster or CLUSTER}},
        }
    }
    (pdd / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (pdd / "env").mkdir()
    envvars = {
        **AWX_CREDENTIAL,
        "AWS_ENDPOINT_URL": endpoint,
        # AWX: the project's requirements first, then the EE's own collections (here: the venv's, by sys.path).
        "ANSIBLE_COLLECTIONS_PATH": f"{collections}:{pdd / 'home' / '.ansible' / 'collections'}",
    }
    (pdd / "env" / "envvars").write_text(yaml.safe_dump(envvars))
    (pdd / "env" / "extravars").write_text(yaml.safe_dump({**EXTRAVARS, **(extravars or {})}))
    return pdd


_run_job = run_job


def _recap(stdout: str) -> dict[str, dict[str, int]]:
    """The PLAY RECAP lines of the job's stdout (coloured, as AWX shows it)."""
    recap = {}
    for line in ANSI.sub("", stdout).split("PLAY RECAP")[-1].splitlines():
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line.strip())
        if match:
            recap[match.group(1)] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2))}
    return recap


def _changed_per_host_from_events(events: list[dict[str, Any]]) -> dict[str, int]:
    changed: dict[str, int] = {}
    for event in events:
        if event["event"] == "runner_on_ok":
            data = event["event_data"]
            changed.setdefault(data["host"], 0)
            if data.get("res", {}).get("changed"):
                changed[data["host"]] += 1
    return changed


def _stats(events: list[dict[str, Any]]) -> dict[str, Any]:
    (stats,) = [e for e in events if e["event"] == "playbook_on_stats"]
    return stats["event_data"]


def _secrets(aws) -> list[str]:
    pki = json.loads(
        aws.client("secretsmanager").get_secret_value(SecretId=f"clusterapi.aws/{CLUSTER['name']}/pki")["SecretString"]
    )
    # AWX's AWS credential type marks the secret key and the STS token secret (the access key id is its "username",
    # shown in the credential's form); _assert_no_secret_in_events checks the id separately.
    found = [AWX_CREDENTIAL["AWS_SECRET_ACCESS_KEY"], AWX_CREDENTIAL["AWS_SECURITY_TOKEN"]]
    fields = _flatten(pki)
    assert not [path for path, _value in fields if "token" in path.lower()], "the PKI secret keeps no token"
    # The join token (here the first control-plane machine's kubeadm init token) waits in its bootstrap document.
    tokens = sorted({t for document in _bootstrap_documents(aws) for t in TOKEN.findall(document)})
    assert tokens, "no bootstrap token found in the bootstrap documents"
    keys = [value for _path, value in fields if isinstance(value, str) and PEM_PRIVATE_KEY.search(value)]
    assert keys, "no private key found in the PKI secret"
    # A PEM key's body (its base64 lines), not only its armour, must not appear.
    for key in keys:
        found += [line for line in key.splitlines() if len(line) >= 40 and "-----" not in line][:3]
    return found + tokens


def _bootstrap_documents(aws) -> list[str]:
    """Every machine's bootstrap document (gzip chunks in Secrets Manager, aws.cluster.x-k8s.io/<uuid>-<n>)."""
    sm = aws.client("secretsmanager")
    chunks: dict[str, dict[int, bytes]] = {}
    for secret in sm.list_secrets()["SecretList"]:
        if secret["Name"].startswith("aws.cluster.x-k8s.io/"):
            prefix, index = secret["Name"].rsplit("-", 1)
            chunks.setdefault(prefix, {})[int(index)] = sm.get_secret_value(SecretId=secret["Name"])["SecretBinary"]
    return [gzip.decompress(b"".join(parts[i] for i in sorted(parts))).decode() for parts in chunks.values()]


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in _flatten(v, f"{prefix}.{k}")]
    if isinstance(value, list):
        return [item for n, v in enumerate(value) for item in _flatten(v, f"{prefix}[{n}]")]
    return [(prefix, value)]


def _assert_no_secret_in_events(events: list[dict[str, Any]], secrets: list[str]) -> None:
    key_id = AWX_CREDENTIAL["AWS_ACCESS_KEY_ID"]
    for event in events:
        text = json.dumps(event)
        # The access key id shows only where amazon.aws's connection options echo it: each AWS module's
        # invocation.module_args.access_key (amazon.aws: no_log=False, from AWS_ACCESS_KEY_ID).  Nowhere else.
        rest = text.replace(f'"access_key": "{key_id}"', '"access_key": "<id>"')
        assert key_id not in rest, f"the access key id outside module_args.access_key in event {event['counter']}"
        assert not PEM_PRIVATE_KEY.search(text), f"a PEM private key in event {event['counter']} ({event['event']})"
        for secret in secrets:
            assert secret not in text, f"a secret ({secret[:6]}…) in event {event['counter']} ({event['event']})"


def _assert_events_match_recap(job: dict[str, Any]) -> dict[str, int]:
    events = job["events"]
    stats = _stats(events)
    recap = _recap(job["stdout"])
    per_host = _changed_per_host_from_events(events)
    assert set(recap) == {CLUSTER["name"]}, recap
    for host, line in recap.items():
        assert stats["changed"].get(host, 0) == line["changed"], (stats["changed"], line)
        assert per_host.get(host, 0) == line["changed"], f"changed task events {per_host} != recap {line}"
        assert stats["ok"].get(host, 0) == line["ok"]
        assert line["failed"] == 0 and line["unreachable"] == 0
    return {host: line["changed"] for host, line in recap.items()}


def test_site_as_an_awx_job(aws, tmp_path):
    first = _run_job(_private_data_dir(tmp_path / "job-1", aws.url))
    assert first["rc"] == 0 and first["status"] == "successful", (
        first["stdout"][-4000:] + first["runner_output"][-2000:]
    )
    created = _assert_events_match_recap(first)
    assert created[CLUSTER["name"]] > 0
    ec2 = aws.client("ec2")
    owned = [{"Name": f"tag:sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER['name']}", "Values": ["owned"]}]
    assert len(ec2.describe_vpcs(Filters=owned)["Vpcs"]) == 1
    secrets = _secrets(aws)
    _assert_no_secret_in_events(first["events"], secrets)

    # The keys reached the modules as AWX injects them: the token only as AWS_SECURITY_TOKEN.
    envvars = yaml.safe_load((tmp_path / "job-1" / "env" / "envvars").read_text())
    assert "AWS_SESSION_TOKEN" not in envvars and envvars["AWS_SECURITY_TOKEN"] == AWX_CREDENTIAL["AWS_SECURITY_TOKEN"]

    # A second job, as AWX starts every job: a fresh private data dir.
    aws.reset_requests()
    second = _run_job(_private_data_dir(tmp_path / "job-2", aws.url))
    assert second["rc"] == 0 and second["status"] == "successful", second["stdout"][-4000:]
    assert aws.mutating_requests() == [], "the second job changed AWS"
    noop = _assert_events_match_recap(second)
    assert noop == {CLUSTER["name"]: 0}, f"second job reported {noop}; changed tasks: " + str(
        [
            e["event_data"]["task"]
            for e in second["events"]
            if e["event"] == "runner_on_ok" and e["event_data"]["res"].get("changed")
        ]
    )
    _assert_no_secret_in_events(second["events"], secrets)

    # What the job leaves is what AWX keeps: the status as the job's artifact (custom stats), no file in its folder.
    status = _stats(second["events"])["artifact_data"]["capa_status"][CLUSTER["name"]]
    assert status["state"] == "present" and all(c["status"] for c in status["conditions"].values()), status
    for job in ("job-1", "job-2"):
        left = [p.name for p in (tmp_path / job).rglob("*") if p.name in ("kubeconfig", "status.json")]
        assert left == [], f"{job} wrote {left}"
        shutil.rmtree(tmp_path / job)

    # The kubeconfig, after both job folders are gone: from the PKI secret through the lookup, for the endpoint
    # the status names.
    host, port = status["endpoint"].removeprefix("https://").rsplit(":", 1)
    kubeconfig = _kubeconfig_by_lookup(aws, tmp_path, host, int(port))
    assert kubeconfig["clusters"][0]["cluster"]["server"] == status["endpoint"]
    assert kubeconfig["users"][0]["user"]["client-certificate-data"]


def _kubeconfig_by_lookup(aws, tmp_path: Path, host: str, port: int) -> dict[str, Any]:
    dest = tmp_path / "kubeconfig"
    lookup = f"lookup('clusterapi.aws.capa_kubeconfig', '{CLUSTER['name']}', host='{host}', port={port})"
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "The admin kubeconfig, minted from the PKI secret",
                    "no_log": True,
                    "ansible.builtin.copy": {"content": f"{{{{ {lookup} }}}}", "dest": str(dest), "mode": "0600"},
                }
            ],
        }
    ]
    playbook = tmp_path / "kubeconfig.yml"
    playbook.write_text(json.dumps(play))
    env = {**os.environ, **aws.env}
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), str(playbook)], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return yaml.safe_load(dest.read_text())


def test_plan_approval_apply_as_an_awx_workflow(aws, tmp_path):
    """The nodes of capa-plan-approve-apply as AWX runs them: capa-plan's check run prints the capa_plan table (the
    project's ansible.cfg enables it) and publishes capa_approved_plan as its artifact; AWX hands the artifact to
    capa-apply as extra vars. capa-apply refuses - before any change - without a plan, in another account (here
    the identity credential's role, injected as extra vars) and with a changed spec; with the plan it reconciles."""
    aws.reset_requests()
    plan = _run_job(_private_data_dir(tmp_path / "plan", aws.url), "plan.yml")
    assert plan["rc"] == 0 and plan["status"] == "successful", plan["stdout"][-4000:] + plan["runner_output"][-2000:]
    assert aws.mutating_requests() == [], "the plan changed AWS"
    text = ANSI.sub("", plan["stdout"])
    table = text[text.index(f"CAPA PLAN [{CLUSTER['name']}]") :].splitlines()
    assert table[1].split() == ["#", "action", "calls", "call", "resource", "reason"], table[:3]
    assert re.match(rf"{CLUSTER['name']}: \d+ to create, \d+ to update, 0 to delete \(", table[-1]), table[-1]
    assert max(len(line) for line in table) <= 120, table
    approved = _stats(plan["events"])["artifact_data"]["capa_approved_plan"]
    digest = hashlib.sha256(json.dumps(CLUSTER, sort_keys=True).encode()).hexdigest()
    assert approved == {CLUSTER["name"]: {"account": "123456789012", "spec": digest}}  # moto's account for any key

    refusals = {
        "no plan": ({}, CLUSTER, "No approved plan of awx-job"),
        "another account": (
            {"capa_approved_plan": approved, "capa_identity_role_arn": "arn:aws:iam::111111111111:role/capa"},
            CLUSTER,
            "was planned in AWS account 123456789012 and would be applied in 111111111111",
        ),
        "another spec": (
            {"capa_approved_plan": approved},
            {**CLUSTER, "control_plane": {"replicas": 3}},
            "The spec of awx-job changed since the plan",
        ),
    }
    for case, (extravars, cluster, message) in refusals.items():
        refused = _run_job(
            _private_data_dir(tmp_path / case.replace(" ", "-"), aws.url, extravars, cluster), "apply.yml"
        )
        assert refused["status"] == "failed", case
        assert message in " ".join(ANSI.sub("", refused["stdout"]).split()), (case, refused["stdout"][-3000:])
        assert aws.mutating_requests() == [], f"{case}: the refused apply changed AWS"

    applied = _run_job(_private_data_dir(tmp_path / "apply", aws.url, {"capa_approved_plan": approved}), "apply.yml")
    assert applied["rc"] == 0 and applied["status"] == "successful", applied["stdout"][-4000:]
    owned = [{"Name": f"tag:sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER['name']}", "Values": ["owned"]}]
    assert len(aws.client("ec2").describe_vpcs(Filters=owned)["Vpcs"]) == 1
    assert "CAPA PLAN" not in applied["stdout"], "a real run printed a plan"


def test_the_identity_credential_is_the_role_the_modules_assume(aws, tmp_path):
    """What a "clusterapi.aws identity" credential injects (capa_identity_*: its role ARN and external id) reaches the
    modules through the project's identity.yml: the plan assumes the role - AWS (moto with the trust policy's
    sts:ExternalId condition enforced) refuses a wrong external id - and is recorded in the role's account."""
    account = "111111111111"
    iam = aws.client("iam")
    iam.meta.events.register(
        "before-sign.iam.*", lambda request, **kwargs: request.headers.add_header("x-moto-account-id", account)
    )
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"sts:ExternalId": "capa-awx"}},
            }
        ],
    }
    role = iam.create_role(RoleName="capa-awx", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    credential = {"capa_identity_role_arn": role, "capa_identity_session_name": "awx-plan"}

    planned = _run_job(
        _private_data_dir(tmp_path / "right", aws.url, {**credential, "capa_identity_external_id": "capa-awx"}),
        "plan.yml",
    )
    assert planned["status"] == "successful", planned["stdout"][-4000:]
    approved = _stats(planned["events"])["artifact_data"]["capa_approved_plan"][CLUSTER["name"]]
    assert approved["account"] == account

    refused = _run_job(
        _private_data_dir(tmp_path / "wrong", aws.url, {**credential, "capa_identity_external_id": "guess"}), "plan.yml"
    )
    assert refused["status"] == "failed"
    assert f"could not assume role {role} (with an external id)" in ANSI.sub("", refused["stdout"])
