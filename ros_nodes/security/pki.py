"""Certificates and signatures as DDS-Security's builtin plugins take them: ECDSA on prime256v1 with
SHA-256 (DDS-Security 9.3.1), X.509 in PEM, documents signed as S/MIME (detached, text/plain) by the
permissions CA."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=3650)  # as SROS2: ten years from creation


@dataclass(frozen=True)
class Identity:
    """A private key and its certificate."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def load(cls, key_path: Path, cert_path: Path) -> Identity:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{key_path} does not hold an elliptic-curve key")
        return cls(key, x509.load_pem_x509_certificate(cert_path.read_bytes()))

    def save(self, key_path: Path, cert_path: Path) -> None:
        """The key readable by its owner alone; the certificate by anyone."""
        pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # also when the file was there before, readable by others
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        cert_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))


def common_name(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def _certificate(
    subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: Identity | None
) -> x509.Certificate:
    """Self-signed CA when `issuer` is None, else an end-entity certificate signed by `issuer`."""
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject if issuer is None else issuer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.BasicConstraints(ca=issuer is None, path_length=1 if issuer is None else None),
            critical=issuer is None,
        )
    )
    return builder.sign(key if issuer is None else issuer.key, hashes.SHA256())


def new_ca(name: str) -> Identity:
    key = ec.generate_private_key(ec.SECP256R1())
    return Identity(key, _certificate(common_name(name), key, None))


def new_identity(name: str, ca: Identity) -> Identity:
    """An enclave's identity: subject CN=<enclave path>, the name its permissions grant is made out to."""
    key = ec.generate_private_key(ec.SECP256R1())
    return Identity(key, _certificate(common_name(name), key, ca))


def sign_smime(document: bytes, signer: Identity) -> bytes:
    """`document` with a detached PKCS#7 signature, as S/MIME (what `openssl smime -sign -text` writes)."""
    return (
        pkcs7.PKCS7SignatureBuilder()
        .set_data(document)
        .add_signer(signer.cert, signer.key, hashes.SHA256())
        .sign(serialization.Encoding.SMIME, [pkcs7.PKCS7Options.Text, pkcs7.PKCS7Options.DetachedSignature])
    )
