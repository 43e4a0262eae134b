# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Private: kubeadm bootstrap data, as CAPI's kubeadm bootstrap (CABPK) and control-plane (KCP) providers make it.

Pure functions: the cluster PKI (CAs, service-account key pair, bootstrap token), validation of a PKI the user
brings, the ``#cloud-config`` documents that run ``kubeadm init`` / ``kubeadm join``, and the admin kubeconfig.
The one AWS call here is :func:`load_cluster_pki` (one ``GetSecretValue``), which machine tiers use to render their
bootstrap data from the PKI that ``capa_kubeadm`` stored; the store itself is reconciled in ``_pki_store.py``.

Nothing in this file logs or returns key material: :class:`ClusterPki` hides its secrets from ``repr`` so a
traceback cannot print them, and the metadata helpers only expose public values (certificate hashes, expiry).
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import json
import re
import secrets
import string
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Iterable, Mapping

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    HAS_CRYPTOGRAPHY = True
except ImportError:  # ansible-core depends on cryptography; a controller without it gets a clear error in validate
    HAS_CRYPTOGRAPHY = False

try:
    import yaml

    HAS_YAML = True
except ImportError:
    HAS_YAML = False

from ..kernel.context import Context
from ..kernel.errors import ReconcileError, SpecError

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"  # kubeadm's and CAPI templates' default
DEFAULT_POD_CIDR = "192.168.0.0/16"  # CAPA templates (Calico's default pool)
DEFAULT_API_PORT = 6443

# kubeadm's CA lifetime (pkiutil: 10 years); the admin client certificate lives one year, as kubeadm's and CAPI's
# kubeconfig certificates do. Not-before is backdated a little so a node whose clock lags the controller's still
# accepts what the controller signed.
CA_VALIDITY = datetime.timedelta(days=3650)
CLIENT_VALIDITY = datetime.timedelta(days=365)
CLOCK_SKEW = datetime.timedelta(minutes=5)
# RSA 2048 is what kubeadm (default encryptionAlgorithm RSA-2048) and CAPI's secret/certs packages generate: every
# consumer of these keys (kube-apiserver service-account signing, OIDC/IRSA token verifiers, older kubeadm) accepts
# it, which ECDSA P-256 cannot promise for service-account tokens. The price is ~1.7 KB per key in the secret.
RSA_KEY_SIZE = 2048
RSA_EXPONENT = 65537

ROLE_INIT = "init"
ROLE_JOIN_CONTROL_PLANE = "join-control-plane"
ROLE_JOIN_WORKER = "join-worker"
ROLES = (ROLE_INIT, ROLE_JOIN_CONTROL_PLANE, ROLE_JOIN_WORKER)

TOKEN_PATTERN = re.compile(r"^[a-z0-9]{6}\.[a-z0-9]{16}$")
_TOKEN_ALPHABET = string.ascii_lowercase + string.digits
VERSION_PATTERN = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)([-+][0-9A-Za-z.+-]*)?$")

# Where the PKI lives: deliberately NOT under the bootstrap-data prefix "aws.cluster.x-k8s.io/", which the node
# IAM policy lets every node read and delete (reference section 9): the CA keys must stay with the controller.
SECRET_NAME_FORMAT = "clusterapi.aws/{cluster}/pki"
SECRET_FORMAT_VERSION = 1

KUBEADM_CONFIG_PATH = "/run/kubeadm/kubeadm.yaml"
BOOTSTRAP_SUCCESS_PATH = "/run/cluster-api/bootstrap-success.complete"
# cloud-init renders the document with jinja first (this header), as CABPK's output does, so the node name can be
# the EC2 private DNS name the external cloud provider expects.
JINJA_HEADER = "## template: jinja"
NODE_NAME = "{{ ds.meta_data.local_hostname }}"
KUBELET_EXTRA_ARGS = {"cloud-provider": "external"}
CONTROLLER_MANAGER_EXTRA_ARGS = {"cloud-provider": "external"}
BOOTSTRAP_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"

ADMIN_USER = "kubernetes-admin"
ADMIN_GROUP = "system:masters"
# A kubeconfig whose client certificate expires sooner than this is rewritten.
CLIENT_RENEW_BEFORE = datetime.timedelta(days=30)


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
    bootstrap_token: str = field(repr=False)
    service_cidr: str = DEFAULT_SERVICE_CIDR
    pod_cidr: str = DEFAULT_POD_CIDR

    @property
    def ca_cert_hash(self) -> str:
        """kubeadm's discovery hash of the cluster CA (public): ``sha256:<hex of the SubjectPublicKeyInfo>``."""
        return ca_cert_hash(self.cluster_ca_cert)

    def to_secret_string(self) -> str:
        body = {"format": SECRET_FORMAT_VERSION, **asdict(self)}
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_secret_string(cls, text: str, where: str) -> ClusterPki:
        try:
            body = json.loads(text)
        except ValueError:
            raise ReconcileError(f"{where} does not hold JSON; it was not written by capa_kubeadm") from None
        if not isinstance(body, dict) or body.get("format") != SECRET_FORMAT_VERSION:
            raise ReconcileError(f"{where} is not a capa_kubeadm PKI (format {SECRET_FORMAT_VERSION})")
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n not in body and n not in ("service_cidr", "pod_cidr")]
        if missing:
            raise ReconcileError(f"{where} lacks {', '.join(missing)}")
        return cls(**{n: body[n] for n in names if n in body})

    def differing_fields(self, other: ClusterPki | None) -> list[str]:
        """Names (never values) of the fields that differ, PEMs compared without surrounding whitespace."""
        if other is None:
            return [f.name for f in fields(self)]
        return [
            f.name for f in fields(self) if str(getattr(self, f.name)).strip() != str(getattr(other, f.name)).strip()
        ]


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _not_after(cert: Any) -> datetime.datetime:
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
    now = now or _now()
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


def new_bootstrap_token() -> str:
    """A kubeadm bootstrap token ``[a-z0-9]{6}.[a-z0-9]{16}`` from the OS's CSPRNG."""
    pick = secrets.choice
    return "".join(pick(_TOKEN_ALPHABET) for i in range(6)) + "." + "".join(pick(_TOKEN_ALPHABET) for i in range(16))


def generate_pki(service_cidr: str = DEFAULT_SERVICE_CIDR, pod_cidr: str = DEFAULT_POD_CIDR) -> ClusterPki:
    now = _now()
    pems: dict[str, str] = {}
    for _name, cert_field, key_field, common_name in CA_PAIRS:
        pems[cert_field], pems[key_field] = new_ca(common_name, now)
    sa_key = new_private_key()
    pems[SA_PAIR[1]] = public_key_pem(sa_key.public_key())
    pems[SA_PAIR[2]] = key_pem(sa_key)
    return ClusterPki(**pems, bootstrap_token=new_bootstrap_token(), service_cidr=service_cidr, pod_cidr=pod_cidr)


def desired_pki(
    stored: ClusterPki | None,
    supplied: Mapping[str, str | None] | None,
    service_cidr: str,
    pod_cidr: str,
) -> ClusterPki:
    """The PKI a run converges on: what is stored, with the user's pairs over it; generated when nothing is stored.

    Supplied pairs replace stored or generated ones pair by pair (validation made sure pairs are complete). The
    bootstrap token is never supplied: it is kept once generated.
    """
    base = stored or generate_pki(service_cidr, pod_cidr)
    overrides = {k: normalise_pem(v) for k, v in (supplied or {}).items() if v}
    return replace(base, **overrides, service_cidr=service_cidr, pod_cidr=pod_cidr)


def normalise_pem(text: str) -> str:
    return text.strip() + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Validation of a PKI the user brings (pure, before any AWS call)
# ---------------------------------------------------------------------------------------------------------------
def _spki_der(public_key: Any) -> bytes:
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
    now = now or _now()
    pairs = [pair[:3] for pair in CA_PAIRS] + [SA_PAIR]
    for _name, first, second in pairs:
        given = {f: supplied.get(f) for f in (first, second)}
        if not any(given.values()):
            continue
        for name, value in given.items():
            if not value:
                other = second if name == first else first
                raise SpecError(f"{field}.{name}", f"is required when {field}.{other} is given")
    for _name, cert_field, key_field, _cn in CA_PAIRS:
        if not supplied.get(cert_field):
            continue
        cert = _load_cert(supplied[cert_field], f"{field}.{cert_field}")
        key = _load_key(supplied[key_field], f"{field}.{key_field}")
        if _spki_der(cert.public_key()) != _spki_der(key.public_key()):
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
        if _not_after(cert) <= now:
            raise SpecError(f"{field}.{cert_field}", f"expired on {_not_after(cert).isoformat()}")
    public_field, private_field = SA_PAIR[1], SA_PAIR[2]
    if supplied.get(public_field):
        public = _load_public_key(supplied[public_field], f"{field}.{public_field}")
        private = _load_key(supplied[private_field], f"{field}.{private_field}")
        if _spki_der(public) != _spki_der(private.public_key()):
            raise SpecError(f"{field}.{private_field}", f"does not match {field}.{public_field}")


# ---------------------------------------------------------------------------------------------------------------
# Public facts about a PKI (what modules may return)
# ---------------------------------------------------------------------------------------------------------------
def ca_cert_hash(cert_text: str) -> str:
    cert = x509.load_pem_x509_certificate(cert_text.encode())
    return "sha256:" + hashlib.sha256(_spki_der(cert.public_key())).hexdigest()


def cert_expiry(cert_text: str) -> str:
    return _not_after(x509.load_pem_x509_certificate(cert_text.encode())).isoformat()


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


# ---------------------------------------------------------------------------------------------------------------
# kubeadm configuration and cloud-init
# ---------------------------------------------------------------------------------------------------------------
def parse_version(version: str, field: str = "kubernetes_version") -> tuple[int, int, int]:
    match = VERSION_PATTERN.match(version or "")
    if not match:
        raise SpecError(field, f"'{version}' is not a Kubernetes version like v1.31.2")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def check_upgrade_step(running: Iterable[str], desired: str, field: str = "kubernetes_version") -> None:
    """kubeadm upgrades one minor version at a time and never downgrades one: refuse a target that skips a minor
    or goes back from any version a machine of the group runs (patch changes within a minor are fine)."""
    want = parse_version(desired, field)
    for version in sorted(set(running)):
        try:
            have = parse_version(version, field)
        except SpecError:
            continue  # a tag someone edited by hand says nothing reliable
        if want[:2] == have[:2] or (want[0] == have[0] and want[1] == have[1] + 1):
            continue
        step = f"v{have[0]}.{have[1] + 1}"
        reason = "kubeadm cannot downgrade a minor version" if want[:2] < have[:2] else f"upgrade to {step} first"
        raise SpecError(
            field,
            f"'{desired}': machines run {normalise_version(version)}; kubeadm upgrades one minor version at a time "
            f"({reason})",
        )


def normalise_version(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


def kubeadm_api_version(kubernetes_version: str) -> str:
    """kubeadm.k8s.io/v1beta4 from Kubernetes 1.31 (where it became the default), v1beta3 before."""
    major, minor = parse_version(kubernetes_version)[:2]
    return "kubeadm.k8s.io/v1beta4" if (major, minor) >= (1, 31) else "kubeadm.k8s.io/v1beta3"


def _extra_args(api_version: str, args: Mapping[str, str]) -> Any:
    # v1beta4 turned every extraArgs map into a list of {name, value} (so a flag can repeat).
    if api_version.endswith("v1beta4"):
        return [{"name": k, "value": v} for k, v in args.items()]
    return dict(args)


def _node_registration(api_version: str) -> dict[str, Any]:
    return {"name": NODE_NAME, "kubeletExtraArgs": _extra_args(api_version, KUBELET_EXTRA_ARGS)}


def endpoint_address(host: str, port: int) -> str:
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]:{port}"
    except ValueError:
        pass
    return f"{host}:{port}"


def kubeadm_documents(
    pki: ClusterPki, role: str, *, cluster: str, endpoint_host: str, endpoint_port: int, kubernetes_version: str
) -> list[dict[str, Any]]:
    api_version = kubeadm_api_version(kubernetes_version)
    endpoint = endpoint_address(endpoint_host, endpoint_port)
    if role == ROLE_INIT:
        init = {
            "apiVersion": api_version,
            "kind": "InitConfiguration",
            # No management cluster refreshes the token (CABPK renews it every few minutes), so it does not
            # expire: machines joining months later still need it. It is stored only in the controller-side
            # secret and in bootstrap data that the secret backend deletes after boot.
            "bootstrapTokens": [
                {
                    "token": pki.bootstrap_token,
                    "ttl": "0s",
                    "groups": [BOOTSTRAP_TOKEN_GROUP],
                    "usages": ["signing", "authentication"],
                    "description": f"clusterapi.aws bootstrap token of cluster {cluster}",
                }
            ],
            "nodeRegistration": _node_registration(api_version),
        }
        cluster_config = {
            "apiVersion": api_version,
            "kind": "ClusterConfiguration",
            "clusterName": cluster,
            "kubernetesVersion": normalise_version(kubernetes_version),
            "controlPlaneEndpoint": endpoint,
            "networking": {"podSubnet": pki.pod_cidr, "serviceSubnet": pki.service_cidr},
            "apiServer": {"certSANs": [endpoint_host]},
            "controllerManager": {"extraArgs": _extra_args(api_version, CONTROLLER_MANAGER_EXTRA_ARGS)},
        }
        return [init, cluster_config]
    join: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "JoinConfiguration",
        "discovery": {
            "bootstrapToken": {
                "apiServerEndpoint": endpoint,
                "token": pki.bootstrap_token,
                "caCertHashes": [pki.ca_cert_hash],
            }
        },
        "nodeRegistration": _node_registration(api_version),
    }
    if role == ROLE_JOIN_CONTROL_PLANE:
        join["controlPlane"] = {}
    return [join]


def pki_files(pki: ClusterPki, role: str) -> list[tuple[str, str, str]]:
    """(path, permissions, content) of the PKI files a role's node needs.

    Control-plane nodes get the CAs with their keys and the service-account pair: kubeadm signs each node's own
    certificates from them. Workers get nothing: ``kubeadm join`` fetches the CA through token discovery (checked
    against the CA hash) and its preflight refuses to run if ``/etc/kubernetes/pki/ca.crt`` already exists.
    """
    if role == ROLE_JOIN_WORKER:
        return []
    base = "/etc/kubernetes/pki"
    return [
        (f"{base}/ca.crt", "0640", pki.cluster_ca_cert),
        (f"{base}/ca.key", "0600", pki.cluster_ca_key),
        (f"{base}/etcd/ca.crt", "0640", pki.etcd_ca_cert),
        (f"{base}/etcd/ca.key", "0600", pki.etcd_ca_key),
        (f"{base}/front-proxy-ca.crt", "0640", pki.front_proxy_ca_cert),
        (f"{base}/front-proxy-ca.key", "0600", pki.front_proxy_ca_key),
        (f"{base}/sa.pub", "0640", pki.service_account_public_key),
        (f"{base}/sa.key", "0600", pki.service_account_private_key),
    ]


if HAS_YAML:

    class _BlockDumper(yaml.SafeDumper):
        """Multi-line strings (PEMs, the kubeadm config) as literal blocks, so the document reads like CABPK's."""

    def _str_representer(dumper: Any, value: str) -> Any:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _BlockDumper.add_representer(str, _str_representer)


def _dump(data: Any, sort_keys: bool = False) -> str:
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=sort_keys, default_flow_style=False, width=1 << 16)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise SpecError("role", f"'{role}' is not one of {', '.join(ROLES)}")


def render_cloud_init(
    pki: ClusterPki,
    role: str,
    *,
    cluster: str,
    endpoint_host: str,
    endpoint_port: int,
    kubernetes_version: str,
    machine_name: str,
) -> bytes:
    """The ``#cloud-config`` document that bootstraps one machine, deterministic for the same inputs.

    ``machine_name`` does not appear in the document (the node is named after its EC2 private DNS name through
    cloud-init's jinja rendering, as CAPA templates do), so every machine of a group shares one document and one
    :func:`cloud_init_hash`; it is accepted so callers pass the machine explicitly and future needs stay compatible.
    The document carries keys and the bootstrap token: it must only travel through the secret backend.
    """
    _check_role(role)
    del machine_name
    documents = kubeadm_documents(
        pki,
        role,
        cluster=cluster,
        endpoint_host=endpoint_host,
        endpoint_port=endpoint_port,
        kubernetes_version=kubernetes_version,
    )
    kubeadm_yaml = "---\n".join(_dump(d) for d in documents)
    write_files = [
        {"path": path, "owner": "root:root", "permissions": mode, "content": content}
        for path, mode, content in pki_files(pki, role)
    ]
    write_files.append(
        {"path": KUBEADM_CONFIG_PATH, "owner": "root:root", "permissions": "0600", "content": kubeadm_yaml}
    )
    command = "init" if role == ROLE_INIT else "join"
    config = {
        "write_files": write_files,
        "runcmd": [
            "mkdir -p /run/cluster-api",
            f"kubeadm {command} --config {KUBEADM_CONFIG_PATH} && echo success > {BOOTSTRAP_SUCCESS_PATH}",
        ],
    }
    return f"{JINJA_HEADER}\n#cloud-config\n{_dump(config)}".encode()


def cloud_init_hash(
    pki: ClusterPki,
    role: str,
    *,
    cluster: str,
    endpoint_host: str,
    endpoint_port: int,
    kubernetes_version: str,
    machine_name: str | None = None,
) -> str:
    """A stable sha256 of what defines a group's bootstrap config, for comparing machines with their template.

    Built from public facts only (role, cluster, endpoint, version, networking, the CAs' public-key hashes), plus a
    hash of the token so a replaced token also changes it. The machine name is left out on purpose (see
    :func:`render_cloud_init`).
    """
    _check_role(role)
    del machine_name
    inputs = {
        "renderer": 1,
        "role": role,
        "cluster": cluster,
        "endpoint": endpoint_address(endpoint_host, endpoint_port),
        "kubernetes_version": normalise_version(kubernetes_version),
        "service_cidr": pki.service_cidr,
        "pod_cidr": pki.pod_cidr,
        "cas": [ca_cert_hash(getattr(pki, pair[1])) for pair in CA_PAIRS],
        "service_account": hashlib.sha256(pki.service_account_public_key.strip().encode()).hexdigest(),
        "token": hashlib.sha256(pki.bootstrap_token.encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# The admin kubeconfig
# ---------------------------------------------------------------------------------------------------------------
def kubeconfig_names(cluster: str) -> dict[str, str]:
    return {"cluster": cluster, "user": f"{cluster}-admin", "context": cluster}


def server_url(host: str, port: int) -> str:
    return f"https://{endpoint_address(host, port)}"


def new_admin_credentials(pki: ClusterPki, now: datetime.datetime | None = None) -> tuple[str, str]:
    """A ``kubernetes-admin`` client certificate (group ``system:masters``) signed by the cluster CA."""
    now = now or _now()
    ca_cert = x509.load_pem_x509_certificate(pki.cluster_ca_cert.encode())
    ca_key = serialization.load_pem_private_key(pki.cluster_ca_key.encode(), password=None)
    key = new_private_key()
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ADMIN_GROUP),
            x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER),
        ]
    )
    not_after = min(now + CLIENT_VALIDITY, _not_after(ca_cert))
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
                key_encipherment=True,
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
        .sign(ca_key, hashes.SHA256())
    )
    return cert_pem(cert), key_pem(key)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def render_kubeconfig(pki: ClusterPki, cluster: str, server: str, client_cert: str, client_key: str) -> str:
    names = kubeconfig_names(cluster)
    config = {
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
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=1 << 16)


def kubeconfig_problem(
    text: str | None, pki: ClusterPki, cluster: str, server: str, now: datetime.datetime | None = None
) -> str | None:
    """Why an existing kubeconfig must be rewritten (``None``: keep it as it is).

    The file is kept when its names, server and CA are the wanted ones and its client certificate was signed by
    the cluster CA and is not about to expire; a fresh certificate alone is no reason to rewrite it.
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
        if base64.b64decode(ca_data).decode().strip() != pki.cluster_ca_cert.strip():
            return "cluster CA differs"
        client_cert = x509.load_pem_x509_certificate(client_cert_text.encode())
        client_key = serialization.load_pem_private_key(client_key_text.encode(), password=None)
    except (ValueError, TypeError):
        return "client credentials unreadable"
    if _spki_der(client_cert.public_key()) != _spki_der(client_key.public_key()):
        return "client key does not match its certificate"
    if not _signed_by(client_cert, pki.cluster_ca_cert):
        return "client certificate not signed by the cluster CA"
    if _not_after(client_cert) - (now or _now()) < CLIENT_RENEW_BEFORE:
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


# ---------------------------------------------------------------------------------------------------------------
# The stored PKI, for machine tiers
# ---------------------------------------------------------------------------------------------------------------
def secret_name(cluster: str) -> str:
    return SECRET_NAME_FORMAT.format(cluster=cluster)


def read_pki_secret(ctx: Context, cluster: str) -> tuple[ClusterPki | None, dict[str, Any] | None]:
    """(PKI, the secret's ARN/name) from ONE ``GetSecretValue``; ``(None, None)`` when there is no secret."""
    client = ctx.client("secretsmanager")
    name = secret_name(cluster)
    try:
        answer = client.get_secret_value(SecretId=name)
    except client.raw.exceptions.ResourceNotFoundException:
        return None, None
    except client.raw.exceptions.InvalidRequestException as e:
        # A secret scheduled for deletion answers this; it can neither be read nor created again.
        raise ReconcileError(
            f"secret {name} cannot be read ({e.response.get('Error', {}).get('Message', 'invalid request')}); "
            "if it is scheduled for deletion, restore it or delete it for good first"
        ) from None
    text = answer.get("SecretString")
    if text is None:
        raise ReconcileError(f"secret {name} holds binary data; it was not written by capa_kubeadm")
    return ClusterPki.from_secret_string(text, f"secret {name}"), {"arn": answer.get("ARN"), "name": name}


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
