"""capa_kubeadm against the moto server, plus the rendered bootstrap data checked by the real tools.

The tool checks call binaries: ``cloud-init`` (Debian: ``apt-get install -y --no-install-recommends cloud-init``)
and ``openssl``. A missing binary fails the test with the command that installs it; nothing is skipped.
"""

from __future__ import annotations

import base64
import datetime
import json
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import cloud_init as ci
from ansible_collections.clusterapi.aws.plugins.module_utils.kubeadm import pki as k

MODULE = "clusterapi.aws.capa_kubeadm"
CLUSTER = "kadm-it"
SECRET = f"clusterapi.aws/{CLUSTER}/pki"
OWNER = f"sigs.k8s.io/cluster-api-provider-aws/cluster/{CLUSTER}"
HOST = "kadm-it-apiserver-123.us-east-1.elb.amazonaws.com"


def args(tmp_path: Path, **extra):
    return {
        "cluster_name": CLUSTER,
        "kubernetes_version": "v1.31.2",
        "endpoint": {"host": HOST},
        "output_dir": str(tmp_path / "out"),
        "additional_tags": {"team": "a"},
        **extra,
    }


def kubeconfig_file(tmp_path: Path) -> Path:
    return tmp_path / "out" / CLUSTER / "kubeconfig"


def stored_pki(aws) -> k.ClusterPki:
    text = aws.client("secretsmanager").get_secret_value(SecretId=SECRET)["SecretString"]
    return k.ClusterPki.from_secret_string(text, SECRET)


def assert_no_secrets(result, pki: k.ClusterPki | None = None):
    text = json.dumps(result)
    assert "BEGIN" not in text
    if pki is not None:
        for pem in (pki.cluster_ca_key, pki.etcd_ca_key, pki.service_account_private_key):
            assert pem.splitlines()[1] not in text


def require(binary: str, install: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"'{binary}' is not installed; install it with: {install}")
    return path


def test_create_then_noop(aws, run_module, tmp_path):
    first = run_module(MODULE, args(tmp_path))
    assert first["changed"] is True, first
    assert [(p["call"], p["resource"]) for p in first["plan"]] == [
        ("secretsmanager:CreateSecret", SECRET),
        ("file:WriteFile", str(kubeconfig_file(tmp_path))),
    ]
    sm = aws.client("secretsmanager")
    described = sm.describe_secret(SecretId=SECRET)
    pki = stored_pki(aws)
    # The PKI's public facts, bound to the version of the value they describe (the one this run wrote).
    [current] = [v for v, stages in described["VersionIdsToStages"].items() if "AWSCURRENT" in stages]
    assert {t["Key"]: t["Value"] for t in described["Tags"]} == {
        "Name": SECRET,
        "team": "a",
        OWNER: "owned",
        "sigs.k8s.io/cluster-api-provider-aws/role": "control-plane",
        "sigs.k8s.io/cluster-api-provider-aws/last-applied-tags": "team",
        "clusterapi.aws/pki-ca-cert-hash": pki.ca_cert_hash,
        "clusterapi.aws/pki-cluster-ca-expires": first["pki"]["cluster_ca_expires"],
        "clusterapi.aws/pki-etcd-ca-expires": first["pki"]["etcd_ca_expires"],
        "clusterapi.aws/pki-front-proxy-ca-expires": first["pki"]["front_proxy_ca_expires"],
        "clusterapi.aws/pki-service-cidr": "10.96.0.0/12",
        "clusterapi.aws/pki-pod-cidr": "192.168.0.0/16",
        "clusterapi.aws/pki-cluster-ca-sha256": k.ca_cert_digest(pki.cluster_ca_cert),
        "clusterapi.aws/pki-version": current,
    }
    assert first["pki"]["secret_arn"] == described["ARN"]
    assert first["pki"]["secret_name"] == SECRET
    assert first["pki"]["ca_cert_hash"] == pki.ca_cert_hash
    assert first["pki"]["service_cidr"] == "10.96.0.0/12" and first["pki"]["pod_cidr"] == "192.168.0.0/16"
    assert_no_secrets(first, pki)

    path = kubeconfig_file(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = yaml.safe_load(path.read_text())
    assert config["current-context"] == CLUSTER
    assert config["clusters"][0]["name"] == CLUSTER
    assert config["clusters"][0]["cluster"]["server"] == f"https://{HOST}:6443"
    assert config["users"][0]["name"] == f"{CLUSTER}-admin"
    assert first["kubeconfig"]["path"] == str(path)
    assert first["kubeconfig"]["context"] == CLUSTER
    content = path.read_text()

    aws.reset_requests()
    second = run_module(MODULE, args(tmp_path))
    assert second["changed"] is False and second["plan"] == [], second
    # The secret's tags describe its current version and the kubeconfig is good: its value is not read.
    assert second["api_calls"] == {"secretsmanager:ListSecrets": 1}
    assert aws.mutating_requests() == []
    assert len(aws.requests()) == 1
    assert path.read_text() == content  # not rewritten with a fresh certificate
    assert second["pki"] == first["pki"] and second["kubeconfig"] == first["kubeconfig"]
    assert_no_secrets(second, pki)

    # Someone else writes a version (the same PKI): the tags describe another one, so the value is read, and the
    # tags then describe the version read; the run after it reads no value again.
    aws.client("secretsmanager").put_secret_value(SecretId=SECRET, SecretString=pki.to_secret_string())
    aws.reset_requests()
    third = run_module(MODULE, args(tmp_path))
    assert third["api_calls"] == {
        "secretsmanager:GetSecretValue": 1,
        "secretsmanager:ListSecrets": 1,
        "secretsmanager:TagResource": 1,
    }
    assert [(p["call"], p["reason"]) for p in third["plan"]] == [
        ("secretsmanager:TagResource", "tags differ: clusterapi.aws/pki-version")
    ]
    assert third["pki"] == first["pki"] and path.read_text() == content
    assert run_module(MODULE, args(tmp_path))["api_calls"] == {"secretsmanager:ListSecrets": 1}

    # A kubeconfig that is not good (here: gone) is written again, with a certificate the CA signs: the value is read.
    path.unlink()
    rewritten = run_module(MODULE, args(tmp_path))
    assert [p["call"] for p in rewritten["plan"]] == ["file:WriteFile"]
    assert rewritten["api_calls"] == {"secretsmanager:GetSecretValue": 1, "secretsmanager:ListSecrets": 1}


def test_check_mode_from_empty_creates_nothing(aws, run_module, tmp_path):
    result = run_module(MODULE, args(tmp_path), check=True, diff=True)
    assert result["changed"] is True
    assert [p["call"] for p in result["plan"]] == ["secretsmanager:CreateSecret", "file:WriteFile"]
    assert result["pki"]["secret_arn"] == f"planned:secret:{SECRET}"
    assert result["pki"]["ca_cert_hash"] is None
    assert result["diff"]["before"] == {"pki": None, "kubeconfig": None}
    assert aws.mutating_requests() == []
    assert aws.client("secretsmanager").list_secrets()["SecretList"] == []
    assert not (tmp_path / "out").exists()
    assert_no_secrets(result)


def test_check_mode_accepts_a_placeholder_endpoint_and_apply_refuses_it(aws, run_module, tmp_path):
    placeholder = {"endpoint": {"host": f"planned:elb:{CLUSTER}-apiserver"}}
    planned = run_module(MODULE, args(tmp_path, **placeholder), check=True)
    assert planned.get("failed") is not True, planned
    assert [p["call"] for p in planned["plan"]] == ["secretsmanager:CreateSecret", "file:WriteFile"]
    applied = run_module(MODULE, args(tmp_path, **placeholder))
    assert applied["failed"] is True and "placeholder" in applied["msg"]


def test_admin_certificate_verifies_with_openssl(aws, run_module, tmp_path):
    openssl = require("openssl", "apt-get install -y openssl")
    run_module(MODULE, args(tmp_path))
    config = yaml.safe_load(kubeconfig_file(tmp_path).read_text())
    ca = tmp_path / "ca.crt"
    client = tmp_path / "admin.crt"
    ca.write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
    client.write_bytes(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    assert ca.read_text() == stored_pki(aws).cluster_ca_cert
    verified = subprocess.run(
        [openssl, "verify", "-CAfile", str(ca), "-purpose", "sslclient", str(client)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0 and verified.stdout.strip().endswith(": OK"), verified
    subject = subprocess.run(
        [openssl, "x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", str(client)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert subject.stdout.strip() == "subject=CN=kubernetes-admin,O=system:masters"


def _render_like_cloud_init(cloud_init: str, document: bytes, out: Path) -> Path:
    """Render the jinja header the way cloud-init does on the node, with cloud-init's own code and EC2-like data."""
    interpreter = Path(cloud_init).read_text().splitlines()[0].removeprefix("#!").strip()
    script = (
        "import json, sys\n"
        "from cloudinit.handlers.jinja_template import render_jinja_payload\n"
        "data = {'ds': {'meta_data': {'local-hostname': 'ip-10-0-1-23.ec2.internal'}}}\n"
        "sys.stdout.write(render_jinja_payload(sys.stdin.read(), 'user-data', data))\n"
    )
    rendered = subprocess.run(
        interpreter.split() + ["-c", script], input=document.decode(), capture_output=True, text=True, check=True
    )
    out.write_text(rendered.stdout)
    return out


def test_cloud_init_of_every_role_passes_the_cloud_init_schema(aws, run_module, tmp_path):
    cloud_init = require("cloud-init", "apt-get update && apt-get install -y --no-install-recommends cloud-init")
    run_module(MODULE, args(tmp_path))
    pki = stored_pki(aws)  # rendered from what the module stored, as machine modules do
    for role in ci.ROLES:
        document = ci.render_cloud_init(
            pki,
            role,
            cluster=CLUSTER,
            endpoint_host=HOST,
            endpoint_port=6443,
            kubernetes_version="v1.31.2",
            machine_name=f"{CLUSTER}-{role}-0",
            token="abcdef.0123456789abcdef",
            token_ttl=900,
        )
        rendered = _render_like_cloud_init(cloud_init, document, tmp_path / f"{role}.yaml")
        text = rendered.read_text()
        assert text.startswith("#cloud-config\n")
        assert "name: 'ip-10-0-1-23.ec2.internal'" in text
        checked = subprocess.run(
            [cloud_init, "schema", "--config-file", str(rendered)], capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, f"{role}: {checked.stdout}{checked.stderr}"
        assert "Valid cloud-config" in checked.stdout, role


def _supplied(pki: k.ClusterPki, *pairs: str) -> dict[str, str]:
    supplied = {}
    for name in pairs:
        if name == "service_account":
            supplied["service_account_public_key"] = pki.service_account_public_key
            supplied["service_account_private_key"] = pki.service_account_private_key
        else:
            supplied[f"{name}_cert"] = getattr(pki, f"{name}_cert")
            supplied[f"{name}_key"] = getattr(pki, f"{name}_key")
    return supplied


def test_supplied_pki_is_stored_and_updated_only_when_it_differs(aws, run_module, tmp_path):
    mine = k.generate_pki()
    first = run_module(MODULE, args(tmp_path, pki=_supplied(mine, "cluster_ca", "service_account")))
    assert first["changed"] is True, first
    stored = stored_pki(aws)
    assert stored.cluster_ca_cert == mine.cluster_ca_cert and stored.cluster_ca_key == mine.cluster_ca_key
    assert stored.service_account_private_key == mine.service_account_private_key
    assert stored.etcd_ca_cert != mine.etcd_ca_cert  # not supplied: generated
    assert first["pki"]["ca_cert_hash"] == mine.ca_cert_hash
    assert_no_secrets(first, stored)

    aws.reset_requests()
    again = run_module(MODULE, args(tmp_path, pki=_supplied(mine, "cluster_ca", "service_account")))
    assert again["changed"] is False and aws.mutating_requests() == []

    newer = k.generate_pki()
    replaced = run_module(MODULE, args(tmp_path, pki=_supplied(newer, "cluster_ca")), diff=True)
    differing = [
        "clusterapi.aws/pki-ca-cert-hash",
        "clusterapi.aws/pki-cluster-ca-sha256",
        "clusterapi.aws/pki-version",
    ]
    if k.cert_expiry(newer.cluster_ca_cert) != k.cert_expiry(mine.cluster_ca_cert):
        differing.append("clusterapi.aws/pki-cluster-ca-expires")
    assert [(p["call"], p["reason"]) for p in replaced["plan"]] == [
        ("secretsmanager:PutSecretValue", "differs: cluster_ca_cert, cluster_ca_key"),
        # the public facts follow the new version (the CAs' expiry too, when the two differ by a second or more)
        ("secretsmanager:TagResource", "tags differ: " + ", ".join(sorted(differing))),
        ("file:WriteFile", "cluster CA differs"),
    ]
    assert stored_pki(aws).cluster_ca_cert == newer.cluster_ca_cert
    assert stored_pki(aws).etcd_ca_key == stored.etcd_ca_key  # the pairs not supplied are kept
    assert replaced["diff"]["before"]["pki"]["ca_cert_hash"] == mine.ca_cert_hash
    assert replaced["diff"]["after"]["pki"]["ca_cert_hash"] == newer.ca_cert_hash
    config = yaml.safe_load(kubeconfig_file(tmp_path).read_text())
    ca_data = config["clusters"][0]["cluster"]["certificate-authority-data"]
    assert base64.b64decode(ca_data).decode() == newer.cluster_ca_cert
    assert_no_secrets(replaced, newer)


def test_bad_supplied_pki_fails_before_any_request(aws, run_module, tmp_path):
    one, two = k.generate_pki(), k.generate_pki()
    bad = {"cluster_ca_cert": one.cluster_ca_cert, "cluster_ca_key": two.cluster_ca_key}
    result = run_module(MODULE, args(tmp_path, pki=bad))
    assert result["failed"] is True
    assert result["field"] == "pki.cluster_ca_key" and "does not match" in result["msg"]
    assert aws.requests() == []
    assert_no_secrets(result)


@pytest.mark.parametrize(
    "override,field",
    [
        ({"kubernetes_version": "latest"}, "kubernetes_version"),
        ({"pod_cidr": "10.96.0.0/16"}, "pod_cidr"),
        ({"endpoint": {"host": HOST, "port": 70000}}, "endpoint.port"),
    ],
)
def test_bad_input_names_the_field(aws, run_module, tmp_path, override, field):
    result = run_module(MODULE, args(tmp_path, **override))
    assert result["failed"] is True and result["field"] == field, result
    assert aws.requests() == []


def test_absent_deletes_secret_and_kubeconfig(aws, run_module, tmp_path):
    run_module(MODULE, args(tmp_path))
    path = kubeconfig_file(tmp_path)
    assert path.exists()
    absent = {"cluster_name": CLUSTER, "state": "absent", "output_dir": str(tmp_path / "out")}

    planned = run_module(MODULE, absent, check=True)
    assert [p["call"] for p in planned["plan"]] == ["secretsmanager:DeleteSecret", "file:DeleteFile"]
    assert path.exists()

    aws.reset_requests()
    result = run_module(MODULE, absent)
    assert result["changed"] is True and result["pki"] is None and result["kubeconfig"] is None
    assert [r["operation"] for r in aws.mutating_requests()] == ["DeleteSecret"]
    assert aws.client("secretsmanager").list_secrets()["SecretList"] == []
    assert not path.exists()

    again = run_module(MODULE, absent)
    assert again["changed"] is False and again["plan"] == []


def test_a_secret_the_cluster_does_not_own_is_never_changed(aws, run_module, tmp_path):
    sm = aws.client("secretsmanager")
    foreign = k.generate_pki()
    sm.create_secret(Name=SECRET, SecretString=foreign.to_secret_string())

    used = run_module(MODULE, args(tmp_path))  # readable and identical: used as it is
    assert used["changed"] is True and [p["call"] for p in used["plan"]] == ["file:WriteFile"]
    assert used["pki"]["ca_cert_hash"] == foreign.ca_cert_hash

    refused = run_module(MODULE, args(tmp_path, pki=_supplied(k.generate_pki(), "etcd_ca")))
    assert refused["failed"] is True and "not ours to change" in refused["msg"]

    left = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent", "output_dir": str(tmp_path / "out")})
    assert [p["call"] for p in left["plan"]] == ["file:DeleteFile"]
    assert any("not owned" in w for w in left.get("warnings", []))
    assert stored_pki(aws) == foreign


def test_no_output_dir_writes_no_local_file(aws, run_module, tmp_path, monkeypatch):
    """AWX keeps no files between jobs: with output_dir "" nothing is read, written or deleted locally."""
    monkeypatch.chdir(tmp_path)
    first = run_module(MODULE, args(tmp_path, output_dir=""))
    assert first["changed"] is True and [p["call"] for p in first["plan"]] == ["secretsmanager:CreateSecret"], first
    assert first["kubeconfig"] is None and first["pki"]["ca_cert_hash"] == stored_pki(aws).ca_cert_hash
    aws.reset_requests()
    second = run_module(MODULE, args(tmp_path, output_dir=""))
    assert second["changed"] is False and second["plan"] == [] and aws.mutating_requests() == []
    absent = run_module(MODULE, {"cluster_name": CLUSTER, "state": "absent", "output_dir": ""})
    assert [p["call"] for p in absent["plan"]] == ["secretsmanager:DeleteSecret"]
    assert list(tmp_path.rglob("*kubeconfig*")) == []


def _lookup_play(tmp_path: Path, cluster: str, dest: Path, quiet: bool = True, **options) -> Path:
    extra = "".join(f", {k}={v!r}" for k, v in options.items())
    lookup = f"lookup('clusterapi.aws.capa_kubeconfig', '{cluster}', host='{HOST}'{extra})"
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "kubeconfig",
                    # The kubeconfig holds a private key: never in the output (tests/post_integration scans it).
                    "no_log": quiet,
                    "ansible.builtin.copy": {
                        "content": f"{{{{ {lookup} }}}}",
                        "dest": str(dest),
                        "mode": "0600",
                    },
                }
            ],
        }
    ]
    path = tmp_path / f"lookup-{cluster}.yml"
    path.write_text(json.dumps(play))
    return path


def test_the_kubeconfig_lookup_builds_one_from_the_secret_with_a_short_lived_certificate(
    aws, run_module, run_playbook, tmp_path
):
    from cryptography import x509

    run_module(MODULE, args(tmp_path, output_dir=""))
    pki = stored_pki(aws)
    dest = tmp_path / "kubeconfig"
    aws.reset_requests()
    run_playbook(_lookup_play(tmp_path, CLUSTER, dest, port=443, validity_minutes=10))
    assert [r["operation"] for r in aws.requests()] == ["GetSecretValue"] and aws.mutating_requests() == []
    config = yaml.safe_load(dest.read_text())
    assert config["current-context"] == CLUSTER and config["users"][0]["name"] == f"{CLUSTER}-admin"
    assert config["clusters"][0]["cluster"]["server"] == f"https://{HOST}:443"
    ca_data = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    assert ca_data == pki.cluster_ca_cert
    client = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    client.verify_directly_issued_by(x509.load_pem_x509_certificate(pki.cluster_ca_cert.encode()))
    # cryptography >= 42 has the timezone-aware properties; the floor (41) only the naive UTC ones.
    after = getattr(client, "not_valid_after_utc", None) or client.not_valid_after
    before = getattr(client, "not_valid_before_utc", None) or client.not_valid_before
    lifetime = after - before
    assert lifetime <= datetime.timedelta(minutes=10 + 5)  # ten minutes, not-before backdated by the clock skew


def test_the_kubeconfig_lookup_of_a_cluster_without_pki_fails_naming_the_secret(aws, run_playbook, tmp_path):
    # No kubeconfig can come out of it, so its error may show.
    result = run_playbook(_lookup_play(tmp_path, "nopki", tmp_path / "kubeconfig", quiet=False), expect_rc=None)
    assert result.rc != 0 and not (tmp_path / "kubeconfig").exists()
    assert "clusterapi.aws/nopki/pki not found" in result.stdout + result.stderr


def test_the_kubeconfig_lookup_refuses_bad_options_before_any_request(aws, run_playbook, tmp_path):
    """Each option's rule, in one run (no region from the environment): the lookup fails naming the option, and
    AWS is not asked anything - a bad cluster name included."""
    cases = {
        "no host": ("demo", {"host": "", "kind": "self-managed"}, "capa_kubeconfig: host: is required"),
        "port out of range": ("demo", {"port": 70000}, "capa_kubeconfig: port: 70000 is not a port number"),
        "validity too short": ("demo", {"validity_minutes": 1}, "validity_minutes: 1 is not between 5 and 10080"),
        "no region": ("demo", {}, "capa_kubeconfig: no region"),
        "bad cluster name": ("Bad_Name", {"region": "us-east-1"}, "capa_kubeconfig: cluster name:"),
    }
    tasks = []
    for name, (cluster, options, _message) in cases.items():
        merged = {"host": HOST, **options}
        extra = ", ".join(f"{k}={v!r}" for k, v in merged.items())
        lookup = f"lookup('clusterapi.aws.capa_kubeconfig', '{cluster}', {extra})"
        tasks.append({"name": name, "ansible.builtin.debug": {"msg": f"{{{{ {lookup} }}}}"}, "ignore_errors": True})
    play = tmp_path / "bad-lookups.yml"
    play.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    aws.reset_requests()
    result = run_playbook(play, env={"AWS_REGION": "", "AWS_DEFAULT_REGION": ""})
    failures = {t.name: t.result.get("msg", "") for t in result.tasks if t.failed}
    assert set(failures) == set(cases), failures
    for name, case in cases.items():
        message = case[2]
        assert message in failures[name], (name, failures[name])
    assert aws.requests() == []
