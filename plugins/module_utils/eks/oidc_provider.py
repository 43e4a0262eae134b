# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the IAM OIDC provider of an EKS cluster's issuer (IRSA), with I(associate_oidc_provider).

Observed with ListOpenIDConnectProviders plus one GetOpenIDConnectProvider for the issuer's provider. A provider
carrying the cluster's ownership tag is reconciled (client id, thumbprint, tags) and deleted with the cluster;
any other provider of the issuer is used as it is. Without ``oidc_thumbprint`` a new provider gets the SHA-1 of
the issuer's root CA, read from its TLS chain.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any, Mapping

from ansible.module_utils.urls import open_url

from ..kernel.context import Context
from ..kernel.errors import ReconcileError
from ..kernel.operations import placeholder
from ..kernel.tags import OWNED, ROLE_COMMON, cloud_provider_tag_key, dict_to_tags, is_owned, repair_tags, tags_to_dict
from . import cluster_plan as plan
from .eks_cluster_spec import EksClusterSpec

OIDC_CLIENT_ID = "sts.amazonaws.com"


@dataclass(frozen=True)
class ObservedProvider:
    """One OIDC provider, as GetOpenIDConnectProvider describes it."""

    arn: str
    client_ids: list[str]
    thumbprints: list[str]
    tags: dict[str, str]


def observe(ctx: Context, issuer: str | None) -> list[ObservedProvider]:
    """Providers of this issuer (or, without one, every EKS provider of the region) with their details."""
    iam = ctx.client("iam")
    listed = iam.list_open_id_connect_providers().get("OpenIDConnectProviderList", [])
    region_marker = f"oidc-provider/oidc.eks.{ctx.region}."
    found = []
    for arn in (p["Arn"] for p in listed):
        if plan.provider_matches_issuer(arn, issuer) if issuer else region_marker in arn:
            detail = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)
            found.append(
                ObservedProvider(
                    arn,
                    list(detail.get("ClientIDList", [])),
                    list(detail.get("ThumbprintList", [])),
                    tags_to_dict(detail.get("Tags")),
                )
            )
    return found


def no_provider(issuer: str | None = None, arn: str | None = None) -> dict[str, Any]:
    return {"issuer": issuer, "provider_arn": arn, "trust_policy_template": None}


def reconcile_oidc_provider(ctx: Context, spec: EksClusterSpec, cluster: Mapping[str, Any] | None) -> dict[str, Any]:
    """The provider of the cluster's issuer, created when missing; the result's ``cluster.oidc``."""
    issuer = plan.issuer_of(cluster)
    tags = ctx.tags(ROLE_COMMON, None, {cloud_provider_tag_key(spec.name): OWNED})
    iam = ctx.client("iam")
    if not issuer:
        # The issuer is known once the cluster exists: in check mode plan the create, otherwise (wait off and the
        # cluster still CREATING) leave it to the next run.
        if not ctx.check_mode:
            ctx.warn(f"EKS cluster {spec.name} has no OIDC issuer yet; the provider is made by a later run")
            return no_provider()
        ctx.ops.call(iam, "create_open_id_connect_provider", resource=f"OIDC provider of {spec.name}", reason="missing")
        return no_provider(arn=placeholder("oidc-provider", spec.name))
    found = observe(ctx, issuer)
    if found:
        arn = found[0].arn
        if is_owned(found[0].tags, ctx.cluster):
            repair_provider(ctx, found[0], spec.oidc_thumbprint, tags)
    else:
        thumbprint = spec.oidc_thumbprint or fetch_root_ca_thumbprint(issuer)
        arn = ctx.ops.call(
            iam,
            "create_open_id_connect_provider",
            resource=issuer,
            reason="missing",
            predicted={"OpenIDConnectProviderArn": placeholder("oidc-provider", spec.name)},
            Url=issuer,
            ClientIDList=[OIDC_CLIENT_ID],
            ThumbprintList=[thumbprint.lower()],
            Tags=dict_to_tags(tags),
        )["OpenIDConnectProviderArn"]
    return {
        "issuer": issuer,
        "provider_arn": arn,
        "trust_policy_template": plan.irsa_trust_policy_template(arn, issuer),
    }


def repair_provider(ctx: Context, provider: ObservedProvider, thumbprint: str | None, tags: Mapping[str, str]) -> None:
    iam, arn = ctx.client("iam"), provider.arn
    if OIDC_CLIENT_ID not in provider.client_ids:
        ctx.ops.call(
            iam,
            "add_client_id_to_open_id_connect_provider",
            resource=arn,
            reason=f"client id {OIDC_CLIENT_ID} missing",
            OpenIDConnectProviderArn=arn,
            ClientID=OIDC_CLIENT_ID,
        )
    # Without oidc_thumbprint the stored one is kept: fetching the issuer's chain every run would cost a TLS
    # round trip for nothing (IAM no longer checks the thumbprint of well-known issuers such as EKS).
    if thumbprint and [t.lower() for t in provider.thumbprints] != [thumbprint.lower()]:
        ctx.ops.call(
            iam,
            "update_open_id_connect_provider_thumbprint",
            resource=arn,
            reason="thumbprint differs",
            OpenIDConnectProviderArn=arn,
            ThumbprintList=[thumbprint.lower()],
        )
    repair_tags(ctx, "iam-oidc-provider", arn, arn, provider.tags, tags)


def delete_owned_providers(ctx: Context, issuer: str | None) -> None:
    """Delete the providers of ``issuer`` (without one: of any EKS issuer of the region) that the cluster owns."""
    for provider in observe(ctx, issuer):
        if is_owned(provider.tags, ctx.cluster):
            ctx.ops.call(
                ctx.client("iam"),
                "delete_open_id_connect_provider",
                resource=provider.arn,
                reason="state absent",
                OpenIDConnectProviderArn=provider.arn,
            )


# the issuer's thumbprint -------------------------------------------------------------------------------------
def fetch_root_ca_thumbprint(issuer: str, timeout: float = 10.0) -> str:
    """SHA-1 (hex) of the root CA certificate of the issuer's TLS chain, as IAM OIDC providers want it."""
    parts = urllib.parse.urlparse(issuer)
    host, port = parts.hostname or "", parts.port or 443
    try:
        context = ssl.create_default_context()
        with socket.create_connection((host, port), timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=host) as tls:
                chain = getattr(tls, "get_verified_chain", None)  # Python 3.13+
                if chain is not None:
                    return hashlib.sha1(ssl.PEM_cert_to_DER_cert(chain()[-1].public_bytes())).hexdigest()
                leaf = tls.getpeercert(binary_form=True)
        if leaf is None:
            raise ValueError("the issuer sent no certificate")
        return hashlib.sha1(_root_by_issuer(leaf, context, timeout)).hexdigest()
    except (OSError, ssl.SSLError, ValueError, ImportError) as e:
        raise ReconcileError(
            f"cannot read the root CA of the OIDC issuer {host}:{port} ({e}); give its SHA-1 as oidc_thumbprint"
        ) from None


def _root_by_issuer(leaf: bytes, context: ssl.SSLContext, timeout: float) -> bytes:
    """Walk from the leaf to a trusted root: intermediates come from their AIA caIssuers URL."""
    from cryptography import x509
    from cryptography.x509.oid import AuthorityInformationAccessOID

    roots: dict[Any, bytes] = {}
    for der in context.get_ca_certs(binary_form=True):
        roots[x509.load_der_x509_certificate(der).subject] = der
    cert = x509.load_der_x509_certificate(leaf)
    for _depth in range(6):
        if cert.issuer in roots:
            return roots[cert.issuer]
        access = cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value
        urls = [d.access_location.value for d in access if d.access_method == AuthorityInformationAccessOID.CA_ISSUERS]
        if not urls:
            break
        data = open_url(urls[0], timeout=timeout).read()
        cert = (
            x509.load_pem_x509_certificate(data) if data.startswith(b"-----") else x509.load_der_x509_certificate(data)
        )
    raise ValueError("no trusted root CA found for the certificate chain")
