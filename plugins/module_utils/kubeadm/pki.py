# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: the cluster PKI, as CAPI's kubeadm bootstrap (CABPK) and control-plane (KCP) providers make it.

The CAs (cluster, etcd, front proxy) and the service-account key pair (:class:`ClusterPki`; bootstrap tokens are
minted per machine in the cluster and expire - ``bootstrap_tokens.py`` - so none is kept here),
their generation, the validation of a PKI the user brings, the public facts a module may return about it, and
the one secret it is kept in: :func:`load_cluster_pki` (one ``GetSecretValue``) is what machine tiers render their
bootstrap data from; ``kubeadm.py`` reconciles the secret itself.

Nothing in this file logs or returns key material: :class:`ClusterPki` hides its secrets from ``repr`` so a
traceback cannot print them, and the metadata helpers only expose public values (certificate hashes, expiry).
"""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping, overload

try:
    import botocore.exceptions
except ImportError:
    pass  # AnsibleAWSModule reports the missing SDK before any of this runs.

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    HAS_CRYPTOGRAPHY = True
except ImportError:  # ansible-core depends on cryptography; a controller without it gets a clear error in validate
    HAS_CRYPTOGRAPHY = False

from ..aws.errors import error_code
from ..aws.secretsmanager import get_secret_value, list_secrets
from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError
from ..kernel.tags import OWNED, cluster_tag_key

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"  # kubeadm's and CAPI templates' default
DEFAULT_POD_CIDR = "192.168.0.0/16"  # CAPA templates (Calico's default pool)

# kubeadm's CA lifetime (pkiutil: 10 years). Not-before is backdated a little so a node whose clock lags the
# controller's still accepts what the controller signed.
CA_VALIDITY = datetime.timedelta(days=3650)
CLOCK_SKEW = datetime.timedelta(minutes=5)
# RSA 2048 is what kubeadm (default encryptionAlgorithm RSA-2048) and CAPI's secret/certs packages generate: every
# consumer of these keys (kube-apiserver service-account signing, OIDC/IRSA token verifiers, older kubeadm) accepts
# it, which ECDSA P-256 cannot promise for service-account tokens. The price is ~1.7 KB per key in the secret.
RSA_KEY_SIZE = 2048
RSA_EXPONENT = 65537


# Where the PKI lives: deliberately NOT under the bootstrap-data prefix "aws.cluster.x-k8s.io/", which the node
# IAM policy lets every node read and delete (reference section 9): the CA keys must stay with the controller.
SECRET_NAME_FORMAT = "clusterapi.aws/{cluster}/pki"
SECRET_FORMAT_VERSION = 1
# Keys the secret held in earlier releases and no longer does.
RETIRED_KEYS = ("bootstrap_token",)


# ---------------------------------------------------------------------------------------------------------------
# The PKI
# ---------------------------------------------------------------------------------------------------------------
# (option name, certificate field, key field, common name kubeadm gives the CA)
CA_PAIRS = (
    ("cluster_ca", "cluster_ca_cert", "cluster_ca_key", "kubernetes"),
    ("etcd_ca", "etcd_ca_cert", "etcd_ca_key", "etcd-ca"),
    ("front_proxy_ca", "front_proxy_ca_cert", "front_proxy_ca_key", "front-proxy-ca"),
)
SA_PAIR = ("service_account", "service_account_public_key", "service_account_private_key")
PEM_FIELDS = tuple(f for pair in CA_PAIRS for f in pair[1:3]) + SA_PAIR[1:]


@dataclass(frozen=True)
class ClusterPki:
    """Everything secret a cluster's machines are bootstrapped from, plus the cluster-wide kubeadm settings.

    PEM strings end with one newline. ``repr`` shows only public fields, so secrets never reach a log or traceback.
    """

    cluster_ca_cert: str = field(repr=False)
    cluster_ca_key: str = field(repr=False)
    etcd_ca_cert: str = field(repr=False)
    etcd_ca_key: str = field(repr=False)
    front_proxy_ca_cert: str = field(repr=False)
    front_proxy_ca_key: str = field(repr=False)
    service_account_public_key: str = field(repr=False)
    service_account_private_key: str = field(repr=False)
    service_cidr: str = DEFAULT_SERVICE_CIDR
    pod_cidr: str = DEFAULT_POD_CIDR
    # Keys of the stored secret that are no longer written (a release before 0.2.0 kept a bootstrap token that never
    # expires there): their presence is a difference, so the next reconcile rewrites the secret without them.
    retired: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ca_cert_hash(self) -> str:
        """kubeadm's discovery hash of the cluster CA (public): ``sha256:<hex of the SubjectPublicKeyInfo>``."""
        return ca_cert_hash(self.cluster_ca_cert)

    def cluster_ca(self) -> tuple[str, str]:
        """The cluster CA (certificate, key) a client certificate of the API server is minted from
        (``KubernetesAccess.open``'s ``cluster_ca``)."""
        return self.cluster_ca_cert, self.cluster_ca_key

    def to_secret_string(self) -> str:
        body = {"format": SECRET_FORMAT_VERSION, **asdict(self)}
        del body["retired"]
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_secret_string(cls, text: str, where: str) -> ClusterPki:
        try:
            body = json.loads(text)
        except ValueError:
            raise ReconcileError(f"{where} does not hold JSON; it was not written by capa_kubeadm") from None
        if not isinstance(body, dict) or body.get("format") != SECRET_FORMAT_VERSION:
            raise ReconcileError(f"{where} is not a capa_kubeadm PKI (format {SECRET_FORMAT_VERSION})")
        names = [f.name for f in fields(cls) if f.name != "retired"]
        missing = [n for n in names if n not in body and n not in ("service_cidr", "pod_cidr")]
        if missing:
            raise ReconcileError(f"{where} lacks {', '.join(missing)}")
        retired = tuple(sorted(k for k in RETIRED_KEYS if k in body))
        return cls(**{n: body[n] for n in names if n in body}, retired=retired)

    def differing_fields(self, other: ClusterPki | None) -> list[str]:
        """Names (never values) of the fields that differ, PEMs compared without surrounding whitespace."""
        stored = [f.name for f in fields(self) if f.name != "retired"]
        if other is None:
            return stored
        differing = [n for n in stored if str(getattr(self, n)).strip() != str(getattr(other, n)).strip()]
        return differing + [f"{key} (retired)" for key in other.retired]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def not_after(cert: Any) -> datetime.datetime:
    # cryptography >= 42 has the timezone-aware property; older ones only the naive UTC one.
    value = getattr(cert, "not_valid_after_utc", None)
    return value if value is not None else cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)


def new_private_key() -> Any:
    return rsa.generate_private_key(public_exponent=RSA_EXPONENT, key_size=RSA_KEY_SIZE)


def key_pem(key: Any) -> str:
    # PKCS#1 "RSA PRIVATE KEY", the form kubeadm writes and reads.
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()


def public_key_pem(public_key: Any) -> str:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def cert_pem(cert: Any) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def new_ca(common_name: str, now: datetime.datetime | None = None) -> tuple[str, str]:
    """A self-signed CA as kubeadm makes one: (certificate PEM, key PEM)."""
    now = now or utc_now()
    key = new_private_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert_pem(cert), key_pem(key)


def generate_pki(service_cidr: str = DEFAULT_SERVICE_CIDR, pod_cidr: str = DEFAULT_POD_CIDR) -> ClusterPki:
    now = utc_now()
    pems: dict[str, Any] = {}
    for _name, cert_field, key_field, common_name in CA_PAIRS:
        pems[cert_field], pems[key_field] = new_ca(common_name, now)
    sa_key = new_private_key()
    pems[SA_PAIR[1]] = public_key_pem(sa_key.public_key())
    pems[SA_PAIR[2]] = key_pem(sa_key)
    return ClusterPki(**pems, service_cidr=service_cidr, pod_cidr=pod_cidr)


def desired_pki(
    stored: ClusterPki | None,
    supplied: Mapping[str, str | None] | None,
    service_cidr: str,
    pod_cidr: str,
) -> ClusterPki:
    """The PKI a run converges on: what is stored, with the user's pairs over it; generated when nothing is stored.

    Supplied pairs replace stored or generated ones pair by pair (validation made sure pairs are complete).
    """
    base = stored or generate_pki(service_cidr, pod_cidr)
    overrides: dict[str, Any] = {k: normalise_pem(v) for k, v in (supplied or {}).items() if v}
    return replace(base, **overrides, service_cidr=service_cidr, pod_cidr=pod_cidr)


def normalise_pem(text: str) -> str:
    return text.strip() + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Validation of a PKI the user brings (pure, before any AWS call)
# ---------------------------------------------------------------------------------------------------------------
def spki_der(public_key: Any) -> bytes:
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _load_cert(text: str, where: str) -> Any:
    try:
        return x509.load_pem_x509_certificate(text.encode())
    except ValueError:
        raise SpecError(where, "is not a PEM-encoded X.509 certificate") from None


def _load_key(text: str, where: str) -> Any:
    try:
        return serialization.load_pem_private_key(text.encode(), password=None)
    except (ValueError, TypeError):
        raise SpecError(where, "is not an unencrypted PEM-encoded private key") from None


def _load_public_key(text: str, where: str) -> Any:
    try:
        return serialization.load_pem_public_key(text.encode())
    except ValueError:
        raise SpecError(where, "is not a PEM-encoded public key") from None


def check_supplied_pki(
    supplied: Mapping[str, str | None] | None, field: str = "pki", now: datetime.datetime | None = None
) -> None:
    """Each supplied pair complete and consistent: the key matches the certificate, which is an unexpired CA."""
    supplied = supplied or {}
    now = now or utc_now()
    pairs = [pair[:3] for pair in CA_PAIRS] + [SA_PAIR]
    complete: dict[str, str] = {}  # the fields of every pair given whole
    for _name, first, second in pairs:
        given = {f: supplied.get(f) for f in (first, second)}
        if not any(given.values()):
            continue
        for name, value in given.items():
            if not value:
                other = second if name == first else first
                raise SpecError(f"{field}.{name}", f"is required when {field}.{other} is given")
            complete[name] = value
    for _name, cert_field, key_field, _cn in CA_PAIRS:
        if cert_field not in complete:
            continue
        cert = _load_cert(complete[cert_field], f"{field}.{cert_field}")
        key = _load_key(complete[key_field], f"{field}.{key_field}")
        if spki_der(cert.public_key()) != spki_der(key.public_key()):
            raise SpecError(f"{field}.{key_field}", f"does not match the public key of {field}.{cert_field}")
        try:
            constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        except x509.ExtensionNotFound:
            constraints = None
        if constraints is None or not constraints.ca:
            raise SpecError(f"{field}.{cert_field}", "is not a CA certificate (basicConstraints CA:TRUE missing)")
        try:
            usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        except x509.ExtensionNotFound:
            usage = None
        if usage is not None and not usage.key_cert_sign:
            raise SpecError(f"{field}.{cert_field}", "may not sign certificates (keyUsage lacks keyCertSign)")
        if not_after(cert) <= now:
            raise SpecError(f"{field}.{cert_field}", f"expired on {not_after(cert).isoformat()}")
    public_field, private_field = SA_PAIR[1], SA_PAIR[2]
    if public_field in complete:
        public = _load_public_key(complete[public_field], f"{field}.{public_field}")
        private = _load_key(complete[private_field], f"{field}.{private_field}")
        if spki_der(public) != spki_der(private.public_key()):
            raise SpecError(f"{field}.{private_field}", f"does not match {field}.{public_field}")


# ---------------------------------------------------------------------------------------------------------------
# Public facts about a PKI (what modules may return)
# ---------------------------------------------------------------------------------------------------------------
def ca_cert_hash(cert_text: str) -> str:
    cert = x509.load_pem_x509_certificate(cert_text.encode())
    return "sha256:" + hashlib.sha256(spki_der(cert.public_key())).hexdigest()


def cert_expiry(cert_text: str) -> str:
    return not_after(x509.load_pem_x509_certificate(cert_text.encode())).isoformat()


def pki_metadata(pki: ClusterPki) -> dict[str, Any]:
    """Public facts only: the discovery hash, expiry dates and the network settings kubeadm is given."""
    return {
        "ca_cert_hash": pki.ca_cert_hash,
        "cluster_ca_expires": cert_expiry(pki.cluster_ca_cert),
        "etcd_ca_expires": cert_expiry(pki.etcd_ca_cert),
        "front_proxy_ca_expires": cert_expiry(pki.front_proxy_ca_cert),
        "service_cidr": pki.service_cidr,
        "pod_cidr": pki.pod_cidr,
    }


# The public facts as tags of the PKI secret, bound to the version of the value they describe: a run that finds the
# secret's current version described needs no value to know them (capa_kubeadm's steady run: one ListSecrets, no
# GetSecretValue). The tag key of each pki_metadata entry; the cluster CA certificate's own digest, with which the
# admin kubeconfig's CA is compared (as its text was); the version they describe.
METADATA_TAGS: Mapping[str, str] = {
    "clusterapi.aws/pki-ca-cert-hash": "ca_cert_hash",
    "clusterapi.aws/pki-cluster-ca-expires": "cluster_ca_expires",
    "clusterapi.aws/pki-etcd-ca-expires": "etcd_ca_expires",
    "clusterapi.aws/pki-front-proxy-ca-expires": "front_proxy_ca_expires",
    "clusterapi.aws/pki-service-cidr": "service_cidr",
    "clusterapi.aws/pki-pod-cidr": "pod_cidr",
}
CA_CERT_DIGEST_TAG = "clusterapi.aws/pki-cluster-ca-sha256"
DESCRIBED_VERSION_TAG = "clusterapi.aws/pki-version"


def ca_cert_digest(cert_text: str) -> str:
    """The digest of a CA certificate's PEM text (as the admin kubeconfig check compares it: surrounding whitespace
    aside)."""
    return "sha256:" + hashlib.sha256(cert_text.strip().encode()).hexdigest()


def metadata_tags(pki: ClusterPki, version: str) -> dict[str, str]:
    """The tags that describe ``pki``, stored as the secret's ``version`` (public facts only)."""
    facts = pki_metadata(pki)
    tags = {key: str(facts[name]) for key, name in METADATA_TAGS.items()}
    return {**tags, CA_CERT_DIGEST_TAG: ca_cert_digest(pki.cluster_ca_cert), DESCRIBED_VERSION_TAG: version}


@dataclass(frozen=True)
class PublicPki:
    """What a worker's join document is rendered from (``kubeadm join`` checks the CA it discovers against its
    hash; a worker gets no key): public facts, which the secret's tags say (:func:`public_pki_of`)."""

    ca_cert_hash: str
    service_cidr: str
    pod_cidr: str


def public_pki_of(listed: Mapping[str, Any], cluster: str) -> PublicPki | None:
    """The :class:`PublicPki` the PKI secret's tags say, from its ListSecrets entry (``listed``), when it is the
    cluster's and they describe its current version; None otherwise (then the value is what to read)."""
    tags = {t.get("Key", ""): t.get("Value", "") for t in listed.get("Tags") or []}
    facts = described_metadata(tags, current_version(listed))
    if facts is None or tags.get(cluster_tag_key(cluster)) != OWNED:
        return None
    return PublicPki(facts["ca_cert_hash"], facts["service_cidr"], facts["pod_cidr"])


def described_tag_keys() -> tuple[str, ...]:
    """The keys of :func:`metadata_tags`."""
    return (*METADATA_TAGS, CA_CERT_DIGEST_TAG, DESCRIBED_VERSION_TAG)


def metadata_of(facts: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`pki_metadata`'s entries of what :func:`described_metadata` returned."""
    return {name: facts[name] for name in METADATA_TAGS.values()}


def current_version(listed: Mapping[str, Any]) -> str | None:
    """The version id ListSecrets says is ``AWSCURRENT``."""
    for version, stages in (listed.get("SecretVersionsToStages") or {}).items():
        if "AWSCURRENT" in (stages or []):
            return str(version)
    return None


def described_metadata(tags: Mapping[str, str], version: str | None) -> dict[str, Any] | None:
    """:func:`pki_metadata` as the tags say it, with the CA certificate's digest - when they describe ``version``
    (the value's current one) and are complete; None otherwise (then the value is read)."""
    if not version or tags.get(DESCRIBED_VERSION_TAG) != version:
        return None
    if any(not tags.get(key) for key in (*METADATA_TAGS, CA_CERT_DIGEST_TAG)):
        return None
    return {**{name: tags[key] for key, name in METADATA_TAGS.items()}, "ca_cert_digest": tags[CA_CERT_DIGEST_TAG]}


# ---------------------------------------------------------------------------------------------------------------
# kubeadm configuration and cloud-init
# ---------------------------------------------------------------------------------------------------------------
# The stored PKI, for machine tiers
# ---------------------------------------------------------------------------------------------------------------
def secret_name(cluster: str) -> str:
    return SECRET_NAME_FORMAT.format(cluster=cluster)


def read_pki_secret(ctx: Context, cluster: str) -> tuple[ClusterPki | None, dict[str, Any] | None]:
    """(PKI, the secret's ARN/name) from ONE ``GetSecretValue``; ``(None, None)`` when there is no secret."""
    name = secret_name(cluster)
    try:
        answer = get_secret_value(ctx, name)
    except botocore.exceptions.ClientError as e:
        if error_code(e) != "InvalidRequestException":
            raise
        # A secret scheduled for deletion answers this; it can neither be read nor created again.
        raise ReconcileError(
            f"secret {name} cannot be read ({e.response.get('Error', {}).get('Message', 'invalid request')}); "
            "if it is scheduled for deletion, restore it or delete it for good first"
        ) from None
    if answer is None:
        return None, None
    text = answer.get("SecretString")
    if text is None:
        raise ReconcileError(f"secret {name} holds binary data; it was not written by capa_kubeadm")
    described = {"arn": answer.get("ARN"), "name": name, "version": answer.get("VersionId")}
    return ClusterPki.from_secret_string(text, f"secret {name}"), described


def cluster_secrets(ctx: Context) -> dict[str, dict[str, Any]]:
    """The cluster's controller-side secrets (the PKI, kubeadm init's token) by name, with their tags and version
    stages: one ``ListSecrets``, the question ``capa_kubeadm`` and a worker's join document ask alike (so a run that
    changes nothing has it answered from the chain's reads)."""
    prefix = secret_name(ctx.cluster).rsplit("/", 1)[0] + "/"
    return {s["Name"]: s for s in list_secrets(ctx, prefix) if s.get("Name", "").startswith(prefix)}


@overload
def load_cluster_pki(ctx: Context, cluster: str, *, missing_ok: Literal[False] = False) -> ClusterPki: ...


@overload
def load_cluster_pki(ctx: Context, cluster: str, *, missing_ok: bool) -> ClusterPki | None: ...


def load_cluster_pki(ctx: Context, cluster: str, *, missing_ok: bool = False) -> ClusterPki | None:
    """The cluster's PKI as ``capa_kubeadm`` stored it (one ``GetSecretValue``).

    Missing: ``ReconcileError`` (or ``None`` with ``missing_ok``, e.g. for a check-mode run before the PKI exists).
    """
    pki = read_pki_secret(ctx, cluster)[0]
    if pki is None and not missing_ok:
        raise ReconcileError(
            f"cluster {cluster} has no PKI (secret {secret_name(cluster)} not found): run capa_kubeadm first"
        )
    return pki
