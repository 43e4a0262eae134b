# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private (workload-cluster client): short-lived credentials minted in memory, and TLS contexts built from them.

A self-managed cluster is reached with a client certificate the controller mints for the run from the cluster CA
(as Cluster API's KubeadmControlPlane does with the etcd CA): it lives for the run, is never written anywhere
unencrypted and never leaves the process. Python's ``ssl`` loads a certificate chain only from a file, so the key
is written encrypted with a random passphrase held in memory, to a file only the owner may read, loaded, and the
file removed at once. EKS clusters are reached with the token of a presigned STS ``GetCallerIdentity`` URL.
"""

from __future__ import annotations

import base64
import datetime
import os
import secrets
import ssl
import tempfile
from dataclasses import dataclass, field
from typing import Any

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    HAS_CRYPTOGRAPHY = True
except ImportError:  # reported by the tier that needs it, before any request
    HAS_CRYPTOGRAPHY = False

try:
    from botocore.hooks import HierarchicalEmitter
    from botocore.model import ServiceId
    from botocore.signers import RequestSigner
except ImportError:
    pass  # AnsibleAWSModule reports the missing SDK before any of this runs.

# Long enough for the longest run (the wait budget), short enough that a leaked certificate is soon worthless.
CLIENT_LIFETIME = datetime.timedelta(hours=2)
CLOCK_SKEW = datetime.timedelta(minutes=5)
# The identity Cluster API's KubeadmControlPlane uses towards etcd (and the user its etcd RBAC would know).
ETCD_CLIENT_NAME = "cluster-api.x-k8s.io"
# Our identity towards the API server: a user in system:masters, as kubeadm's admin kubeconfig is.
API_CLIENT_NAME = "clusterapi.aws:controller"
API_CLIENT_GROUPS = ("system:masters",)
EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_CLUSTER_HEADER = "x-k8s-aws-id"
EKS_TOKEN_URL_EXPIRES = 60


@dataclass(frozen=True)
class Identity:
    """A client certificate and its key (PEM). ``repr`` shows neither: a traceback never prints the key."""

    certificate: str = field(repr=False)
    key: str = field(repr=False)


def mint_client_certificate(
    ca_certificate: str,
    ca_key: str,
    common_name: str,
    groups: tuple[str, ...] = (),
    lifetime: datetime.timedelta = CLIENT_LIFETIME,
    now: datetime.datetime | None = None,
) -> Identity:
    """A client certificate (CN = user, O = groups; client-auth EKU) signed by the CA, with a new P-256 key."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    ca_cert = x509.load_pem_x509_certificate(ca_certificate.encode())
    signer = serialization.load_pem_private_key(ca_key.encode(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
        + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    )
    not_after = min(now + lifetime, _not_after(ca_cert))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)
        .sign(signer, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return Identity(cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem)


def certificate_expiry(der: bytes) -> datetime.datetime:
    """When a certificate (DER, as a TLS handshake received it) expires."""
    return _not_after(x509.load_der_x509_certificate(der))


def _not_after(cert: Any) -> datetime.datetime:
    value = getattr(cert, "not_valid_after_utc", None)
    return value if value is not None else cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)


def tls_context(
    ca_certificate: str | None, identity: Identity | None = None, check_hostname: bool = True
) -> ssl.SSLContext:
    """A client TLS context trusting only ``ca_certificate`` (PEM, in memory) and presenting ``identity``.

    ``check_hostname=False`` still verifies the chain against the CA; it is for servers whose certificate does not
    name the address they are reached at (etcd behind a port-forward, as KCP verifies it).
    """
    if ca_certificate:
        # Not create_default_context() first: it loads the system's whole CA bundle (tens of milliseconds, a
        # twentieth of a no-op's CPU when every step did it) that this context would not use.
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(cadata=ca_certificate)
    else:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.check_hostname = check_hostname
    context.verify_mode = ssl.CERT_REQUIRED
    if identity is not None:
        load_identity(context, identity)
    return context


def load_identity(context: ssl.SSLContext, identity: Identity) -> None:
    """Load a client certificate into ``context`` without the key ever resting on disk unencrypted."""
    passphrase = secrets.token_bytes(32)
    key = serialization.load_pem_private_key(identity.key.encode(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(passphrase),
    ).decode()
    fd, path = tempfile.mkstemp(prefix=".capa-identity-")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(identity.certificate + encrypted)
        context.load_cert_chain(path, password=passphrase)
    finally:
        os.unlink(path)


def eks_token(credentials: Any, region: str, eks_name: str) -> str:
    """A bearer token for EKS cluster ``eks_name`` (aws-iam-authenticator's format); presigned locally, no request.

    It is the base64url of a presigned STS ``GetCallerIdentity`` URL signed with the header ``x-k8s-aws-id``, so it
    works only for that cluster; the URL is valid for 60 s and EKS accepts the token for 15 minutes.
    """
    emitter = HierarchicalEmitter()  # the signer holds it weakly: keep it alive for the call
    signer = RequestSigner(ServiceId("sts"), region, "sts", "v4", credentials, emitter)
    request = {
        "method": "GET",
        "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
        "body": {},
        "headers": {EKS_CLUSTER_HEADER: eks_name},
        "context": {},
    }
    url = signer.generate_presigned_url(
        request, region_name=region, expires_in=EKS_TOKEN_URL_EXPIRES, operation_name="GetCallerIdentity"
    )
    return EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
