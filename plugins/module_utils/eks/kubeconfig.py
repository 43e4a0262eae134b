# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: EKS kubeconfigs, the IAM authenticator token, and the OIDC issuer's root CA thumbprint.

The token is what ``aws eks get-token`` and aws-iam-authenticator make: ``k8s-aws-v1.`` followed by the
unpadded base64url of a presigned STS GetCallerIdentity URL, signed with the header ``x-k8s-aws-id: <eks name>``
so the token only works for that cluster. Presigning is local (no request is made); the URL is valid 60 seconds
and EKS accepts the token for 15 minutes after signing.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import ssl
import urllib.parse
from typing import Any

try:
    import yaml
except ImportError:
    yaml = None  # type: ignore[assignment]

try:
    from botocore.hooks import HierarchicalEmitter
    from botocore.model import ServiceId
    from botocore.signers import RequestSigner
except ImportError:
    pass

from ansible.module_utils.urls import open_url

from ..kernel.errors import ReconcileError

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_URL_EXPIRES = 60
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def sts_url(region: str) -> str:
    return f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15"


def token(credentials: Any, region: str, eks_name: str) -> str:
    """A bearer token for ``eks_name`` from botocore credentials (never logged or returned)."""
    emitter = HierarchicalEmitter()  # the signer holds it weakly: keep it alive for the call
    signer = RequestSigner(ServiceId("sts"), region, "sts", "v4", credentials, emitter)
    request = {
        "method": "GET",
        "url": sts_url(region),
        "body": {},
        "headers": {CLUSTER_ID_HEADER: eks_name},
        "context": {},
    }
    url = signer.generate_presigned_url(
        request, region_name=region, expires_in=TOKEN_URL_EXPIRES, operation_name="GetCallerIdentity"
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def dump_yaml(data: Any) -> str:
    if yaml is None:
        raise ReconcileError("capa_eks_cluster needs PyYAML on the controller to write kubeconfigs")
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


def _kubeconfig(name: str, endpoint: str, ca_data: str, user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def token_kubeconfig(name: str, endpoint: str, ca_data: str, bearer_token: str) -> str:
    return dump_yaml(_kubeconfig(name, endpoint, ca_data, {"token": bearer_token}))


def user_kubeconfig(name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig whose user runs ``aws eks get-token`` (credentials of whoever uses it)."""
    user = {
        "exec": {
            "apiVersion": EXEC_API_VERSION,
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", name, "--region", region],
            "interactiveMode": "Never",
        }
    }
    return dump_yaml(_kubeconfig(name, endpoint, ca_data, user))


# OIDC issuer thumbprint ----------------------------------------------------------------------------------------
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
        return hashlib.sha1(_root_by_issuer(leaf, context, timeout)).hexdigest()
    except (OSError, ssl.SSLError, ValueError, ImportError) as e:
        raise ReconcileError(
            f"cannot read the root CA of the OIDC issuer {host}:{port} ({e}); give its SHA-1 as oidc_thumbprint"
        ) from None


def _root_by_issuer(leaf: bytes, context: ssl.SSLContext, timeout: float) -> bytes:
    """Walk from the leaf to a trusted root: intermediates come from their AIA caIssuers URL."""
    from cryptography import x509
    from cryptography.x509.oid import AuthorityInformationAccessOID

    roots = {}
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
