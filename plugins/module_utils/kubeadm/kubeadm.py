# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the ``capa_kubeadm`` tier - the cluster PKI kept in Secrets Manager and the admin kubeconfig file.

One secret per cluster, ``clusterapi.aws/<cluster>/pki``, created once with the cluster's ownership tags and
changed only when the user brings PKI that differs from what it holds. Its public facts (the CA hash, the CAs'
expiry, the CIDRs, the CA certificate's digest) are tags of the secret too, bound to the version of the value they
describe (``pki.metadata_tags``). A steady run makes one request: the cluster's secrets with their tags (one
``ListSecrets`` of ``clusterapi.aws/<cluster>/``: the PKI secret's tags follow the spec, and kubeadm init's token -
kept by the machine tier for the joins of a first build without the API - is deleted once it has expired); when
they describe the secret's current version, the spec brings no PKI, its CIDRs are the described ones and the
kubeconfig is good, the value is not read. Otherwise - a first run, a PKI the user brings, a secret written by
someone else, a kubeconfig to (re)write - it is (``GetSecretValue``) and the secret reconciled from it.

The kubeconfig is a local file written through ``ctx.ops.write_file`` (``file:WriteFile`` in the plan), so
``changed`` and check mode cover it like an AWS write; with ``output_dir: ""`` no local file is read, written or
deleted at all (AWX: the kubeconfig is then built on demand by the ``capa_kubeconfig`` lookup).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..aws.secretsmanager import delete_secret
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.local_files import read_text_if_any
from ..kernel.operations import is_placeholder, placeholder
from ..kernel.tags import ROLE_CONTROL_PLANE, dict_to_tags, is_owned, repair_tags, tags_to_dict
from ..kernel.tier import Outcome
from ..kernel.validation import parse_cidr
from . import admin_kubeconfig, cloud_init, pki
from .bootstrap_tokens import EXPIRES_TAG, init_token_expired, init_token_secret_name

# Another run created the secret between our read and our create: that refusal is an answer (see _ensure_secret).
CREATED_CONCURRENTLY = ("ResourceExistsException",)
_VERSION_TOKEN_NAMESPACE = uuid.UUID("6b1f8f59-3f55-4d3c-9a43-7d3c0d6a2f10")


def secret_version_token(name: str, content: str) -> str:
    """The ClientRequestToken of a PKI secret write: derived from the content, the ONE exception to
    ``kernel.idempotency.new_client_token``.

    Secrets Manager's token is the version id of the value written. Derived from the content, a resend after a
    lost answer - or another run writing the same PKI - is recognised as that same version instead of failing
    with ResourceExistsException or making a second version (RELIABILITY.md). The reason fresh tokens are the rule
    elsewhere (AWS answering a known token with a resource deleted since) does not hold here: a deleted secret is
    gone with its versions, so a secret re-created later may carry the same token.
    """
    digest = hashlib.sha256(content.encode()).hexdigest()
    return str(uuid.uuid5(_VERSION_TOKEN_NAMESPACE, f"{name}:{digest}"))


def kubeconfig_path(output_dir: str, cluster: str) -> Path | None:
    """Where the admin kubeconfig goes; ``None`` for ``output_dir: ""`` (no local file at all)."""
    if not output_dir:
        return None
    return Path(output_dir).expanduser().absolute() / cluster / "kubeconfig"


@dataclass(frozen=True)
class KubeadmSpec:
    """capa_kubeadm's options as plain values (``supplied_pki``: a CA the user brings; never logged)."""

    state: str
    kubernetes_version: str | None
    endpoint: Mapping[str, Any] | None  # host, port; required with state present only
    supplied_pki: Mapping[str, Any] | None = field(repr=False)
    output_dir: str
    service_cidr: str
    pod_cidr: str

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> KubeadmSpec:
        return cls(
            params["state"],
            params["kubernetes_version"],
            params["endpoint"],
            params["pki"],
            params["output_dir"],
            params["service_cidr"],
            params["pod_cidr"],
        )


class KubeadmTier:
    def parse(self, params: Mapping[str, Any]) -> KubeadmSpec:
        return KubeadmSpec.from_params(params)

    # validate (pure) ----------------------------------------------------------------------------------------
    def validate(self, spec: KubeadmSpec, region: str | None) -> None:
        if not pki.HAS_CRYPTOGRAPHY or not cloud_init.HAS_YAML:
            raise SpecError("python", "capa_kubeadm needs the 'cryptography' and 'PyYAML' packages on the controller")
        if spec.state != "present":
            return
        cloud_init.parse_version(spec.kubernetes_version)
        endpoint = spec.endpoint
        if endpoint is None:
            raise SpecError("endpoint.host", "is required")
        if not 1 <= endpoint["port"] <= 65535:
            raise SpecError("endpoint.port", f"{endpoint['port']} is not a port number")
        service = parse_cidr(spec.service_cidr, "service_cidr")
        pod = parse_cidr(spec.pod_cidr, "pod_cidr")
        if service.overlaps(pod):
            raise SpecError("pod_cidr", f"'{pod}' overlaps service_cidr '{service}'")
        pki.check_supplied_pki(spec.supplied_pki)

    # reconcile ----------------------------------------------------------------------------------------------
    def reconcile(self, ctx: Context, spec: KubeadmSpec) -> Outcome:
        return Outcome(*self._reconcile(ctx, spec))

    def _reconcile(self, ctx: Context, spec: KubeadmSpec) -> tuple[Any, Any]:
        path = kubeconfig_path(spec.output_dir, ctx.cluster)
        if spec.state == "absent":
            return self._delete(ctx, path)
        listed = pki.cluster_secrets(ctx)
        existing_kubeconfig = _read_text(path)
        steady = self._steady(ctx, spec, listed, path, existing_kubeconfig)
        if steady is not None:
            return steady
        stored, secret = pki.read_pki_secret(ctx, ctx.cluster)
        before = {
            "pki": _pki_result(stored, secret) if stored else None,
            "kubeconfig": _kubeconfig_result(existing_kubeconfig, path, ctx.cluster),
        }
        wanted = pki.desired_pki(stored, spec.supplied_pki, spec.service_cidr, spec.pod_cidr)
        written = self._ensure_secret(ctx, stored, wanted, secret, listed)
        if written is None:
            # Another run created the secret between our read and our create: converge on the PKI it stored, so
            # concurrent runs never leave the cluster with two CAs.
            stored, secret = pki.read_pki_secret(ctx, ctx.cluster)
            if stored is None:
                raise ReconcileError(f"secret {pki.secret_name(ctx.cluster)} exists but cannot be read")
            wanted = pki.desired_pki(stored, spec.supplied_pki, spec.service_cidr, spec.pod_cidr)
            written = self._ensure_secret(ctx, stored, wanted, secret, pki.cluster_secrets(ctx))
        current, secret = written or (wanted, secret)
        endpoint = spec.endpoint
        if endpoint is None:  # validate requires it with state present
            raise ReconcileError("endpoint is required with state present")
        kubeconfig = self._ensure_kubeconfig(
            ctx, current, path, existing_kubeconfig, endpoint["host"], endpoint["port"]
        )
        result = _pki_result(current, secret)
        if stored is None and ctx.check_mode:
            # The CA check mode made up is thrown away: a real run makes another one, with another hash.
            result.update(ca_cert_hash=None, cluster_ca_expires=None, etcd_ca_expires=None, front_proxy_ca_expires=None)
        return before, {"pki": result, "kubeconfig": kubeconfig}

    def _steady(
        self, ctx: Context, spec: KubeadmSpec, listed: Mapping[str, Any], path: Path | None, existing: str | None
    ) -> tuple[Any, Any] | None:
        """The run of a secret that needs no change, from its tags alone (see the module docstring); None when the
        value must be read. What it returns and the tags it repairs are what the run that reads the value would."""
        name = pki.secret_name(ctx.cluster)
        description = listed.get(name)
        if spec.supplied_pki or description is None or spec.endpoint is None:
            return None
        current_tags = tags_to_dict(description.get("Tags"))
        facts = pki.described_metadata(current_tags, pki.current_version(description))
        if not is_owned(current_tags, ctx.cluster) or facts is None:
            return None
        if (facts["service_cidr"], facts["pod_cidr"]) != (spec.service_cidr, spec.pod_cidr):
            return None
        kubeconfig, problem = _kept_kubeconfig(ctx, path, existing, spec.endpoint, facts["ca_cert_digest"])
        if problem is not None:
            return None  # it is (re)written, with a certificate the CA's key signs: the value is read
        described = {key: current_tags[key] for key in pki.described_tag_keys()}
        repair_tags(ctx, "secretsmanager", name, name, current_tags, ctx.tags(ROLE_CONTROL_PLANE, name, described))
        tidy_init_token(ctx, listed.get(init_token_secret_name(ctx.cluster)))
        result = {"secret_name": name, "secret_arn": description.get("ARN"), **pki.metadata_of(facts)}
        before = {"pki": result, "kubeconfig": _kubeconfig_result(existing, path, ctx.cluster)}
        return before, {"pki": result, "kubeconfig": kubeconfig}

    # the secret ---------------------------------------------------------------------------------------------
    def _ensure_secret(
        self,
        ctx: Context,
        stored: pki.ClusterPki | None,
        wanted: pki.ClusterPki,
        secret: dict[str, Any] | None,
        listed: Mapping[str, Any],
    ) -> tuple[pki.ClusterPki, dict[str, Any]] | None:
        """Create or update the secret; ``None`` when another run created it first (our create was refused).
        ``listed``: the cluster's secrets (:func:`pki.cluster_secrets`), read before the value."""
        client = ctx.client("secretsmanager")
        name = pki.secret_name(ctx.cluster)
        content = wanted.to_secret_string()
        token = secret_version_token(name, content)
        if stored is None:
            tags = ctx.tags(ROLE_CONTROL_PLANE, name, pki.metadata_tags(wanted, token))
            answer = ctx.ops.call_unless_refused(
                client,
                "create_secret",
                resource=name,
                reason="missing",
                refused=CREATED_CONCURRENTLY,
                predicted={"ARN": placeholder("secret", name), "Name": name},
                Name=name,
                Description=f"clusterapi.aws: kubeadm PKI of cluster {ctx.cluster}",
                SecretString=content,
                ClientRequestToken=token,
                Tags=dict_to_tags(tags),
            )
            return None if answer is None else (wanted, {"arn": answer.get("ARN"), "name": name})
        # GetSecretValue answers no tags: the run's one ListSecrets (the cluster's secrets: the PKI and kubeadm
        # init's token) keeps an owned secret's tags on the spec. A secret the cluster does not own is used as it is
        # while it needs no change, and never written.
        description = listed.get(name)
        if description is None:
            raise ReconcileError(f"secret {name} was deleted while this run read it; run again")
        current_tags = tags_to_dict(description.get("Tags"))
        owned = is_owned(current_tags, ctx.cluster)
        changed = wanted.differing_fields(stored)
        # The version the tags describe: the one this run writes (its token is the version id), or the one it read.
        version = str((secret or {}).get("version") or token) if not changed else token
        tags = ctx.tags(ROLE_CONTROL_PLANE, name, pki.metadata_tags(wanted, version))
        if changed:
            if not owned:
                raise ReconcileError(
                    f"secret {name} exists without the ownership tag of cluster {ctx.cluster}; it is not ours to change"
                )
            ctx.ops.call(
                client,
                "put_secret_value",
                resource=name,
                reason=f"differs: {', '.join(changed)}",
                predicted={},
                SecretId=name,
                SecretString=content,
                ClientRequestToken=token,
            )
        if owned:
            repair_tags(ctx, "secretsmanager", name, name, current_tags, tags)
        tidy_init_token(ctx, listed.get(init_token_secret_name(ctx.cluster)))
        return wanted, {"arn": description.get("ARN") or (secret or {}).get("arn"), "name": name}

    # the kubeconfig -----------------------------------------------------------------------------------------
    def _ensure_kubeconfig(
        self, ctx: Context, current: pki.ClusterPki, path: Path | None, existing: str | None, host: str, port: int
    ) -> dict[str, Any] | None:
        endpoint = {"host": host, "port": port}
        kept, problem = _kept_kubeconfig(ctx, path, existing, endpoint, pki.ca_cert_digest(current.cluster_ca_cert))
        if path is None or problem is None:
            return kept
        names = admin_kubeconfig.kubeconfig_names(ctx.cluster)
        server = admin_kubeconfig.server_url(host, port)
        result = {"path": str(path), "server": server, **names, "client_certificate_expires": None}
        cert, key = admin_kubeconfig.new_admin_credentials(current)
        text = admin_kubeconfig.render_kubeconfig(current, ctx.cluster, server, cert, key)
        ctx.ops.write_file(path, text, "kubeconfig", reason=problem)
        if not ctx.check_mode:
            result["client_certificate_expires"] = pki.cert_expiry(cert)
        return result

    # state: absent ------------------------------------------------------------------------------------------
    def _delete(self, ctx: Context, path: Path | None) -> tuple[Any, Any]:
        name = pki.secret_name(ctx.cluster)
        init_token = init_token_secret_name(ctx.cluster)  # kubeadm init's token (machines/join_tokens.py)
        listed = pki.cluster_secrets(ctx)
        description = listed.get(name)
        existing = _read_text(path)
        before = {
            "pki": {"secret_name": name, "secret_arn": description.get("ARN")} if description else None,
            "kubeconfig": _kubeconfig_result(existing, path, ctx.cluster),
        }
        for secret, found in ((name, description), (init_token, listed.get(init_token))):
            if found is None:
                continue
            if is_owned(tags_to_dict(found.get("Tags")), ctx.cluster):
                delete_secret(ctx, secret, "state absent")
            else:
                ctx.warn(f"secret {secret} is not owned by cluster {ctx.cluster}; left alone")
        if path is not None and ctx.ops.delete_file(path, "state absent") and not ctx.check_mode:
            try:
                path.parent.rmdir()  # only when empty: other outputs of the cluster may live there
            except OSError:
                pass
        return before, {"pki": None, "kubeconfig": None}


def _kept_kubeconfig(
    ctx: Context, path: Path | None, existing: str | None, endpoint: Mapping[str, Any], ca_digest: str
) -> tuple[dict[str, Any] | None, str | None]:
    """(the result of the kubeconfig kept as it is, None), or (None, why it must be (re)written); (None, None)
    without a local file. A valid kubeconfig is kept: no certificate is minted, nothing is written. The CA is known
    by its certificate's digest, so no value of the secret is needed to tell."""
    if path is None:
        return None, None
    host, port = endpoint["host"], endpoint["port"]
    server = admin_kubeconfig.server_url(host, port)
    if is_placeholder(host):  # check mode only: the runner refuses placeholders outside it
        return None, "control-plane endpoint not created yet"
    problem = admin_kubeconfig.kubeconfig_problem(existing, ca_digest, ctx.cluster, server)
    if problem is not None:
        return None, problem
    names = admin_kubeconfig.kubeconfig_names(ctx.cluster)
    expires = admin_kubeconfig.client_cert_expiry(existing or "", ctx.cluster)
    return {"path": str(path), "server": server, **names, "client_certificate_expires": expires}, None


def tidy_init_token(ctx: Context, found: Mapping[str, Any] | None) -> None:
    """kubeadm init's token, kept for the joins of a first build without the API (``machines/join_tokens.py``):
    deleted once it has expired, its tags kept on the spec meanwhile (its expiry tag is how it was made)."""
    if found is None:
        return
    name, current = found["Name"], tags_to_dict(found.get("Tags"))
    if not is_owned(current, ctx.cluster):
        return
    if init_token_expired(current):
        delete_secret(ctx, name, "kubeadm init's token has expired")
        return
    desired = ctx.tags(ROLE_CONTROL_PLANE, name, {EXPIRES_TAG: current.get(EXPIRES_TAG, "")})
    repair_tags(ctx, "secretsmanager", name, name, current, desired, frozen=(EXPIRES_TAG,))


def _pki_result(current: pki.ClusterPki, secret: dict[str, Any] | None) -> dict[str, Any]:
    secret = secret or {}
    return {"secret_name": secret.get("name"), "secret_arn": secret.get("arn"), **pki.pki_metadata(current)}


def _kubeconfig_result(text: str | None, path: Path | None, cluster: str) -> dict[str, Any] | None:
    if text is None or path is None:
        return None
    return {"path": str(path), "client_certificate_expires": admin_kubeconfig.client_cert_expiry(text, cluster)}


def _read_text(path: Path | None) -> str | None:
    return None if path is None else read_text_if_any(path)


PKI_FIELDS = (
    "cluster_ca_cert",
    "cluster_ca_key",
    "etcd_ca_cert",
    "etcd_ca_key",
    "front_proxy_ca_cert",
    "front_proxy_ca_key",
    "service_account_public_key",
    "service_account_private_key",
)


def module_argument_spec() -> dict[str, Any]:
    """capa_kubeadm's options (without the options every module takes); its DOCUMENTATION says the same
    (ansible-test's validate-modules compares the two), and its typed spec reads them as validated here."""
    return dict(
        kubernetes_version=dict(type="str"),
        endpoint=dict(
            type="dict",
            options=dict(host=dict(type="str", required=True), port=dict(type="int", default=6443)),
        ),
        pki=dict(type="dict", no_log=True, options={name: dict(type="str", no_log=True) for name in PKI_FIELDS}),
        output_dir=dict(type="path", default=".capa"),
        service_cidr=dict(type="str", default="10.96.0.0/12"),
        pod_cidr=dict(type="str", default="192.168.0.0/16"),
    )
