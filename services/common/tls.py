"""A self-signed TLS certificate for serving on a shared machine (`python app.py --self-signed`).

Browsers give the microphone only to a secure page (HTTPS, or http://localhost), so participants
recording on a lab's GPU machine need HTTPS. make_self_signed(folder, hosts) writes cert.pem and
key.pem (mode 0600) once, for those host names and IP addresses, valid DAYS days; later calls
reuse them while they are still valid (a day of margin), match each other and cover every host
asked for, and write new ones otherwise. Browsers warn once about a self-signed certificate; a
certificate from the institution (--ssl-certfile/--ssl-keyfile) or a reverse proxy avoids that.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import socket
from pathlib import Path

DAYS = 365
CERT_NAME, KEY_NAME = "cert.pem", "key.pem"


def default_hosts() -> list[str]:
    """This machine's host name, localhost and 127.0.0.1."""
    return unique([socket.gethostname(), "localhost", "127.0.0.1"])


def unique(hosts) -> list[str]:
    out: list[str] = []
    for h in hosts:
        h = (h or "").strip()
        if h and h.lower() not in (o.lower() for o in out):
            out.append(h)
    return out


def parse_hosts(text: str | None) -> list[str]:
    """'a.example.org, 10.0.0.5' -> ['a.example.org', '10.0.0.5']; empty: default_hosts()."""
    hosts = unique((text or "").replace(" ", ",").split(","))
    return hosts or default_hosts()


def _ip(host: str):
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def cert_hosts(cert) -> set[str]:
    """The DNS names and IP addresses in a certificate's subjectAltName (names lower-cased)."""
    # lazy import (cryptography): needed only for --self-signed
    from cryptography import x509

    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {n.lower() for n in san.get_values_for_type(x509.DNSName)} | {
        str(a) for a in san.get_values_for_type(x509.IPAddress)
    }


def _covers(cert, hosts: list[str]) -> bool:
    have = cert_hosts(cert)
    return all((str(_ip(h)) if _ip(h) else h.lower()) in have for h in hosts)


def _reusable(cert_path: Path, key_path: Path, hosts: list[str], margin: dt.timedelta) -> bool:
    # lazy import (cryptography): needed only for --self-signed
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    if not (cert_path.is_file() and key_path.is_file()):
        return False
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (ValueError, TypeError, OSError):
        return False
    now = dt.datetime.now(dt.timezone.utc)
    if not (cert.not_valid_before_utc <= now and now + margin < cert.not_valid_after_utc):
        return False
    same_key = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) == key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return same_key and _covers(cert, hosts)


def _write_private(path: Path, data: bytes) -> None:
    """Write a file readable by its owner only (0600), never briefly readable by others."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def make_self_signed(
    folder: str | Path, hosts: list[str] | None = None, days: int = DAYS, margin: dt.timedelta = dt.timedelta(days=1)
) -> tuple[Path, Path]:
    """(cert.pem, key.pem) in folder for hosts (default: default_hosts()), made only when needed."""
    # lazy import (cryptography): needed only for --self-signed
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    hosts = unique(hosts or default_hosts())
    folder = Path(folder)
    cert_path, key_path = folder / CERT_NAME, folder / KEY_NAME
    if _reusable(cert_path, key_path, hosts, margin):
        return cert_path, key_path

    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, hosts[0][:64]),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tradlab (self-signed)"),
        ]
    )
    alt = [x509.IPAddress(_ip(h)) if _ip(h) else x509.DNSName(h) for h in hosts]
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))  # tolerate a little clock skew
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_private(
        key_path,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def fingerprint(cert_path: str | Path) -> str:
    """SHA-256 fingerprint (AA:BB:...) to compare with what a browser shows."""
    # lazy import (cryptography): needed only for --self-signed
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
    return ":".join(f"{b:02X}" for b in cert.fingerprint(hashes.SHA256()))
