# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the ``capa_kubeadm`` tier - the cluster PKI kept in Secrets Manager and the admin kubeconfig file.

One secret per cluster, ``clusterapi.aws/<cluster>/pki``, created once with the cluster's ownership tags and
changed only when the user brings PKI that differs from what it holds. A steady run makes ONE request
(``GetSecretValue``): ownership is looked at (``DescribeSecret``) only before a write or a delete, which are the
only moments it matters. The kubeconfig is a local file; writing it is recorded in the plan as ``file:WriteFile``
so that ``changed`` and check mode cover it like an AWS write.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.local_files import write_private
from ..kernel.operations import PlannedCall, is_placeholder
from ..kernel.tags import ROLE_CONTROL_PLANE, dict_to_tags, is_owned, missing_tags, tags_to_dict
from ..kernel.validation import parse_cidr
from . import pki as kubeadm

# ClientRequestToken namespace: a retried create of the same content reuses the same token, so AWS treats the
# retry as the same request instead of failing with ResourceExistsException.
_TOKEN_NAMESPACE = uuid.UUID("6b1f8f59-3f55-4d3c-9a43-7d3c0d6a2f10")


def request_token(name: str, content: str) -> str:
    digest = hashlib.sha256(content.encode()).hexdigest()
    return str(uuid.uuid5(_TOKEN_NAMESPACE, f"{name}:{digest}"))


def kubeconfig_path(output_dir: str, cluster: str) -> Path:
    return Path(output_dir).expanduser().absolute() / cluster / "kubeconfig"


class _CreatedConcurrently(Exception):
    pass


class KubeadmTier:
    # validate (pure) ----------------------------------------------------------------------------------------
    def validate(self, params: dict[str, Any], region: str | None) -> None:
        if not kubeadm.HAS_CRYPTOGRAPHY or not kubeadm.HAS_YAML:
            raise SpecError("python", "capa_kubeadm needs the 'cryptography' and 'PyYAML' packages on the controller")
        if params["state"] != "present":
            return
        kubeadm.parse_version(params["kubernetes_version"] or "")
        endpoint = params.get("endpoint") or {}
        if not endpoint.get("host"):
            raise SpecError("endpoint.host", "is required")
        if not 1 <= endpoint["port"] <= 65535:
            raise SpecError("endpoint.port", f"{endpoint['port']} is not a port number")
        service = parse_cidr(params["service_cidr"], "service_cidr")
        pod = parse_cidr(params["pod_cidr"], "pod_cidr")
        if service.overlaps(pod):
            raise SpecError("pod_cidr", f"'{pod}' overlaps service_cidr '{service}'")
        if not params["output_dir"]:
            raise SpecError("output_dir", "must not be empty")
        kubeadm.check_supplied_pki(params.get("pki"))

    # reconcile ----------------------------------------------------------------------------------------------
    def reconcile(self, ctx: Context, params: dict[str, Any]) -> tuple[Any, Any]:
        path = kubeconfig_path(params["output_dir"], ctx.cluster)
        if params["state"] == "absent":
            return self._delete(ctx, path)
        stored, secret = kubeadm.read_pki_secret(ctx, ctx.cluster)
        existing_kubeconfig = _read_text(path)
        before = {
            "pki": _pki_result(stored, secret) if stored else None,
            "kubeconfig": _kubeconfig_result(existing_kubeconfig, path, ctx.cluster),
        }
        pki = kubeadm.desired_pki(stored, params.get("pki"), params["service_cidr"], params["pod_cidr"])
        try:
            pki, secret = self._ensure_secret(ctx, stored, pki, secret)
        except _CreatedConcurrently:
            # Another run created the secret between our read and our create: converge on the PKI it stored,
            # so concurrent runs never leave the cluster with two CAs.
            stored, secret = kubeadm.read_pki_secret(ctx, ctx.cluster)
            if stored is None:
                raise ReconcileError(f"secret {kubeadm.secret_name(ctx.cluster)} exists but cannot be read") from None
            pki = kubeadm.desired_pki(stored, params.get("pki"), params["service_cidr"], params["pod_cidr"])
            pki, secret = self._ensure_secret(ctx, stored, pki, secret)
        endpoint = params["endpoint"]
        kubeconfig = self._ensure_kubeconfig(ctx, pki, path, existing_kubeconfig, endpoint["host"], endpoint["port"])
        result = _pki_result(pki, secret)
        if stored is None and ctx.check_mode:
            # The CA check mode made up is thrown away: a real run makes another one, with another hash.
            result.update(ca_cert_hash=None, cluster_ca_expires=None, etcd_ca_expires=None, front_proxy_ca_expires=None)
        return before, {"pki": result, "kubeconfig": kubeconfig}

    # the secret ---------------------------------------------------------------------------------------------
    def _ensure_secret(
        self, ctx: Context, stored: kubeadm.ClusterPki | None, pki: kubeadm.ClusterPki, secret: dict[str, Any] | None
    ) -> tuple[kubeadm.ClusterPki, dict[str, Any]]:
        client = ctx.client("secretsmanager")
        name = kubeadm.secret_name(ctx.cluster)
        content = pki.to_secret_string()
        tags = ctx.tags(ROLE_CONTROL_PLANE, name)
        if stored is None:
            try:
                answer = ctx.ops.call(
                    client,
                    "create_secret",
                    resource=name,
                    reason="missing",
                    predicted={"ARN": kubeadm_placeholder(name), "Name": name},
                    Name=name,
                    Description=f"clusterapi.aws: kubeadm PKI and bootstrap token of cluster {ctx.cluster}",
                    SecretString=content,
                    # Secrets Manager's token is the version id of the new secret's value: a resend of this
                    # create after a lost answer is recognised as the same version. Deleted secrets are gone with
                    # their versions, so a secret re-created later may carry the same token.
                    ClientRequestToken=request_token(name, content),
                    Tags=dict_to_tags(tags),
                )
            except client.raw.exceptions.ResourceExistsException:
                ctx.ops.plan.pop()  # the create did not happen
                raise _CreatedConcurrently() from None
            return pki, {"arn": answer.get("ARN"), "name": name}
        changed = pki.differing_fields(stored)
        if not changed:
            return pki, secret or {"name": name}
        description = self._describe_owned(ctx, name, "change")
        ctx.ops.call(
            client,
            "put_secret_value",
            resource=name,
            reason=f"differs: {', '.join(changed)}",
            predicted={},
            SecretId=name,
            SecretString=content,
            ClientRequestToken=request_token(name, content),
        )
        to_tag = missing_tags(tags_to_dict(description.get("Tags")), tags)
        if to_tag:
            ctx.ops.call(
                client,
                "tag_resource",
                resource=name,
                reason=f"tags differ: {', '.join(sorted(to_tag))}",
                SecretId=name,
                Tags=dict_to_tags(to_tag),
            )
        return pki, {"arn": description.get("ARN") or (secret or {}).get("arn"), "name": name}

    def _describe_owned(self, ctx: Context, name: str, action: str) -> dict[str, Any]:
        """DescribeSecret, refusing secrets the cluster does not own (they are never changed or deleted)."""
        description = ctx.client("secretsmanager").describe_secret(SecretId=name)
        if not is_owned(tags_to_dict(description.get("Tags")), ctx.cluster):
            raise ReconcileError(
                f"secret {name} exists without the ownership tag of cluster {ctx.cluster}; it is not ours to {action}"
            )
        return description

    # the kubeconfig -----------------------------------------------------------------------------------------
    def _ensure_kubeconfig(
        self, ctx: Context, pki: kubeadm.ClusterPki, path: Path, existing: str | None, host: str, port: int
    ) -> dict[str, Any]:
        names = kubeadm.kubeconfig_names(ctx.cluster)
        server = kubeadm.server_url(host, port)
        result = {"path": str(path), "server": server, **names, "client_certificate_expires": None}
        if is_placeholder(host):
            if not ctx.check_mode:
                raise ReconcileError(
                    f"endpoint.host '{host}' is a check-mode placeholder; give the control-plane endpoint"
                )
            _plan_file(ctx, "file:WriteFile", path, "control-plane endpoint not created yet")
            return result
        problem = kubeadm.kubeconfig_problem(existing, pki, ctx.cluster, server)
        if problem is None:
            result["client_certificate_expires"] = kubeadm.client_cert_expiry(existing or "", ctx.cluster)
            return result
        _plan_file(ctx, "file:WriteFile", path, problem)
        if ctx.check_mode:
            return result
        cert, key = kubeadm.new_admin_credentials(pki)
        write_private(path, kubeadm.render_kubeconfig(pki, ctx.cluster, server, cert, key))
        result["client_certificate_expires"] = kubeadm.cert_expiry(cert)
        return result

    # state: absent ------------------------------------------------------------------------------------------
    def _delete(self, ctx: Context, path: Path) -> tuple[Any, Any]:
        client = ctx.client("secretsmanager")
        name = kubeadm.secret_name(ctx.cluster)
        try:
            description = client.describe_secret(SecretId=name)
        except client.raw.exceptions.ResourceNotFoundException:
            description = None
        existing = _read_text(path)
        before = {
            "pki": {"secret_name": name, "secret_arn": description.get("ARN")} if description else None,
            "kubeconfig": _kubeconfig_result(existing, path, ctx.cluster),
        }
        if description is not None:
            if is_owned(tags_to_dict(description.get("Tags")), ctx.cluster):
                ctx.ops.call(
                    client,
                    "delete_secret",
                    resource=name,
                    reason="state absent",
                    SecretId=name,
                    ForceDeleteWithoutRecovery=True,
                )
            else:
                ctx.warn(f"secret {name} is not owned by cluster {ctx.cluster}; left alone")
        if existing is not None:
            _plan_file(ctx, "file:DeleteFile", path, "state absent")
            if not ctx.check_mode:
                path.unlink()
                try:
                    path.parent.rmdir()  # only when empty: other outputs of the cluster may live there
                except OSError:
                    pass
        return before, {"pki": None, "kubeconfig": None}


def kubeadm_placeholder(name: str) -> str:
    return f"planned:secret:{name}"


def _plan_file(ctx: Context, call: str, path: Path, reason: str) -> None:
    # Local files are not AWS calls, but writing one is a change: it goes into the same plan, and check mode
    # skips it like any other mutation.
    ctx.ops.plan.append(PlannedCall(call, str(path), reason))


def _pki_result(pki: kubeadm.ClusterPki, secret: dict[str, Any] | None) -> dict[str, Any]:
    secret = secret or {}
    return {"secret_name": secret.get("name"), "secret_arn": secret.get("arn"), **kubeadm.pki_metadata(pki)}


def _kubeconfig_result(text: str | None, path: Path, cluster: str) -> dict[str, Any] | None:
    if text is None:
        return None
    return {"path": str(path), "client_certificate_expires": kubeadm.client_cert_expiry(text, cluster)}


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ReconcileError(f"cannot read {path}: {e}") from None
