"""Certificates as kubeadm and etcd mint them on a node, from the CAs the node's bootstrap documents carry.

Nothing here comes from the collection: the simulator reads the CA files that cloud-init wrote into the node's
sandbox (``/etc/kubernetes/pki/ca.{crt,key}``, ``/etc/kubernetes/pki/etcd/ca.{crt,key}``) and signs what a real
control-plane node would sign with them (API server serving certificate, etcd serving certificate, client
certificates).
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SKEW = datetime.timedelta(minutes=5)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def new_key() -> ec.EllipticCurvePrivateKey:
    # Leaf keys only: P-256 is what kubeadm offers as ECDSA-P256 and is much faster to make than RSA 2048.
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: object) -> str:
    return key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


@dataclass
class CA:
    """A CA certificate with its key (PEM)."""

    cert_pem: str
    key_pem: str

    @property
    def cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem.encode())

    @property
    def key(self) -> object:
        return serialization.load_pem_private_key(self.key_pem.encode(), password=None)

    @classmethod
    def load(cls, cert_file: Path, key_file: Path) -> CA:
        return cls(cert_file.read_text(), key_file.read_text())

    @classmethod
    def generate(cls, common_name: str) -> CA:
        """A new self-signed CA (kubeadm init makes one when the documents bring none; EKS has one per cluster)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW)
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(True, False, True, False, False, True, False, False, False),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert_pem(cert), key_pem(key))

    def sign(
        self,
        common_name: str,
        organizations: list[str] | tuple[str, ...] = (),
        *,
        server: bool = False,
        client: bool = False,
        dns_names: list[str] | tuple[str, ...] = (),
        ips: list[str] | tuple[str, ...] = (),
        days: int = 365,
    ) -> tuple[str, str]:
        """A leaf certificate (PEM) and its key (PEM) signed by this CA."""
        key = new_key()
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        ca_cert = self.cert
        now = _now()
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW)
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)
        )
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dict.fromkeys(dns_names) if d]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in dict.fromkeys(ips) if i]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())  # type: ignore[arg-type]
        return cert_pem(cert), key_pem(key)

    def issued(self, cert: x509.Certificate) -> bool:
        """True when ``cert`` was signed by this CA (signature checked, not only the issuer name)."""
        ca = self.cert
        if cert.issuer != ca.subject:
            return False
        try:
            cert.verify_directly_issued_by(ca)
        except Exception:  # noqa: BLE001 - InvalidSignature, ValueError, TypeError all mean "no"
            return False
        return True


def spki_sha256(cert_text: str) -> str:
    """kubeadm's CA pin: ``sha256:<hex>`` of the DER SubjectPublicKeyInfo of the CA certificate."""
    cert = x509.load_pem_x509_certificate(cert_text.encode())
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(der).hexdigest()


def subject_of(cert: x509.Certificate) -> tuple[str, list[str]]:
    """(CN, [O...]) - how kube-apiserver's x509 authenticator names the user and groups."""
    cn = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    orgs = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return (str(cn[0]) if cn else ""), orgs


def valid_now(cert: x509.Certificate) -> bool:
    now = _now()
    return _utc(cert, "not_valid_before") <= now <= _utc(cert, "not_valid_after")


def _utc(cert: x509.Certificate, name: str) -> datetime.datetime:
    """A validity bound as an aware datetime (cryptography < 42, the collection's floor, has only the naive one)."""
    value = getattr(cert, f"{name}_utc", None)
    return value if value is not None else getattr(cert, name).replace(tzinfo=datetime.timezone.utc)


def write_pair(directory: Path, stem: str, cert: str, key: str) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert_file.write_text(cert)
    key_file.write_text(key)
    key_file.chmod(0o600)
    return cert_file, key_file
