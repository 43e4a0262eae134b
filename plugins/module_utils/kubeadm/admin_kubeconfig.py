# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the admin kubeconfig of a self-managed cluster (user ``kubernetes-admin``, group ``system:masters``).

A client certificate signed by the cluster CA (``pki.py``), the kubeconfig that carries it, and why an existing
kubeconfig must be rewritten (:func:`kubeconfig_problem`: a valid one is kept, so a steady run mints nothing).
``capa_kubeadm`` writes the file; the ``capa_kubeconfig`` lookup builds one on demand with a short-lived
certificate that never touches the disk (:func:`admin_kubeconfig`).
"""

from __future__ import annotations

import base64
import datetime
from typing import Any

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    HAS_CRYPTOGRAPHY = True
except ImportError:  # ansible-core depends on cryptography; a controller without it gets a clear error in validate
    HAS_CRYPTOGRAPHY = False

try:
    import yaml

    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ..workload.credentials import mint_client_certificate
from .cloud_init import endpoint_address
from .pki import (
    ClusterPki,
    ca_cert_digest,
    cert_expiry,
    not_after,
    spki_der,
    utc_now,
)

ADMIN_USER = "kubernetes-admin"
ADMIN_GROUP = "system:masters"
# A kubeconfig whose client certificate expires sooner than this is rewritten.
CLIENT_RENEW_BEFORE = datetime.timedelta(days=30)
# The admin certificate of the kubeconfig file lives one year, as kubeadm's and CAPI's kubeconfig certificates do.
CLIENT_VALIDITY = datetime.timedelta(days=365)


def kubeconfig_names(cluster: str) -> dict[str, str]:
    return {"cluster": cluster, "user": f"{cluster}-admin", "context": cluster}


def server_url(host: str, port: int) -> str:
    return f"https://{endpoint_address(host, port)}"


def new_admin_credentials(
    pki: ClusterPki, now: datetime.datetime | None = None, validity: datetime.timedelta = CLIENT_VALIDITY
) -> tuple[str, str]:
    """A ``kubernetes-admin`` client certificate (group ``system:masters``) signed by the cluster CA, valid for
    ``validity`` (never past the CA): ``(certificate PEM, key PEM)``. Minted as every client identity of the
    collection is (``workload.credentials``)."""
    identity = mint_client_certificate(
        pki.cluster_ca_cert, pki.cluster_ca_key, ADMIN_USER, (ADMIN_GROUP,), lifetime=validity, now=now or utc_now()
    )
    return identity.certificate, identity.key


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def render_kubeconfig(pki: ClusterPki, cluster: str, server: str, client_cert: str, client_key: str) -> str:
    config = kubeconfig_document(pki, cluster, server, client_cert, client_key)
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=1 << 16)


def kubeconfig_document(
    pki: ClusterPki, cluster: str, server: str, client_cert: str, client_key: str
) -> dict[str, Any]:
    """The admin kubeconfig as data (the file's content is its YAML)."""
    names = kubeconfig_names(cluster)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": names["cluster"],
                "cluster": {"server": server, "certificate-authority-data": _b64(pki.cluster_ca_cert)},
            }
        ],
        "users": [
            {
                "name": names["user"],
                "user": {"client-certificate-data": _b64(client_cert), "client-key-data": _b64(client_key)},
            }
        ],
        "contexts": [{"name": names["context"], "context": {"cluster": names["cluster"], "user": names["user"]}}],
        "current-context": names["context"],
        "preferences": {},
    }


def kubeconfig_problem(
    text: str | None, ca_digest: str, cluster: str, server: str, now: datetime.datetime | None = None
) -> str | None:
    """Why an existing kubeconfig must be rewritten (``None``: keep it as it is).

    The file is kept when its names, server and CA are the wanted ones and its client certificate was signed by
    the cluster CA and is not about to expire; a fresh certificate alone is no reason to rewrite it. The CA is
    known by its certificate's digest (``pki.ca_cert_digest``: the stored PKI's, or what the secret's tags say of
    it), so a steady run needs no value of the secret: a kubeconfig CA with that digest is the cluster CA's text.
    """
    if text is None:
        return "missing"
    try:
        config = yaml.safe_load(text)
        names = kubeconfig_names(cluster)
        [entry] = [c for c in config["clusters"] if c["name"] == names["cluster"]]
        [user] = [u for u in config["users"] if u["name"] == names["user"]]
        [context] = [c for c in config["contexts"] if c["name"] == names["context"]]
        ca_data = entry["cluster"]["certificate-authority-data"]
        client_cert_text = base64.b64decode(user["user"]["client-certificate-data"]).decode()
        client_key_text = base64.b64decode(user["user"]["client-key-data"]).decode()
    except (ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError):
        return "not a kubeconfig written by capa_kubeadm"
    if context["context"] != {"cluster": names["cluster"], "user": names["user"]}:
        return "context points elsewhere"
    if config.get("current-context") != names["context"]:
        return "current-context differs"
    if entry["cluster"].get("server") != server:
        return "server differs"
    try:
        ca_text = base64.b64decode(ca_data).decode()
        if ca_cert_digest(ca_text) != ca_digest:
            return "cluster CA differs"
        client_cert = x509.load_pem_x509_certificate(client_cert_text.encode())
        client_key = serialization.load_pem_private_key(client_key_text.encode(), password=None)
    except (ValueError, TypeError):
        return "client credentials unreadable"
    if spki_der(client_cert.public_key()) != spki_der(client_key.public_key()):
        return "client key does not match its certificate"
    if not _signed_by(client_cert, ca_text):
        return "client certificate not signed by the cluster CA"
    if not_after(client_cert) - (now or utc_now()) < CLIENT_RENEW_BEFORE:
        return "client certificate expires soon"
    return None


def _signed_by(cert: Any, ca_text: str) -> bool:
    ca = x509.load_pem_x509_certificate(ca_text.encode())
    if cert.issuer != ca.subject:
        return False
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, Exception):  # noqa: BLE001 - InvalidSignature has no common base
        return False
    return True


def client_cert_expiry(kubeconfig_text: str, cluster: str) -> str | None:
    try:
        config = yaml.safe_load(kubeconfig_text)
        [user] = [u for u in config["users"] if u["name"] == kubeconfig_names(cluster)["user"]]
        cert = base64.b64decode(user["user"]["client-certificate-data"]).decode()
        return cert_expiry(cert)
    except (ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError):
        return None


def admin_kubeconfig(
    pki: ClusterPki,
    cluster: str,
    host: str,
    port: int,
    validity: datetime.timedelta,
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """An admin kubeconfig (as data) with a client certificate minted for it alone, valid for ``validity``: built in
    memory for whoever asked (the ``capa_kubeconfig`` lookup), never written anywhere by this function."""
    cert, key = new_admin_credentials(pki, now, validity)
    return kubeconfig_document(pki, cluster, server_url(host, port), cert, key)
