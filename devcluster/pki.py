"""Certificates, keys and tokens for a loopback-only control plane (openssl CLI)."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(directory: Path) -> None:
    """Write a CA, an apiserver serving cert for 127.0.0.1/localhost, and the SA key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    key, csr, crt = directory / "apiserver.key", directory / "apiserver.csr", directory / "apiserver.crt"
    ext = directory / "apiserver.ext"
    _openssl("genrsa", "-out", str(ca_key), "2048")
    _openssl(
        "req", "-x509", "-new", "-nodes", "-key", str(ca_key), "-sha256", "-days", "3650",
        "-subj", "/CN=airflow-broadcast-devcluster-ca", "-out", str(ca_crt),
    )
    _openssl("genrsa", "-out", str(key), "2048")
    _openssl("req", "-new", "-key", str(key), "-subj", "/CN=kube-apiserver", "-out", str(csr))
    ext.write_text(
        "basicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc\n"
    )
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(crt), "-days", "3650", "-sha256", "-extfile", str(ext),
    )
    _openssl("genrsa", "-out", str(directory / "sa.key"), "2048")
    _openssl("rsa", "-in", str(directory / "sa.key"), "-pubout", "-out", str(directory / "sa.pub"))


def make_tokens(path: Path) -> dict[str, str]:
    """Write a static token file: an admin and a restricted user for RBAC tests."""
    tokens = {"admin": secrets.token_hex(24), "restricted": secrets.token_hex(24)}
    path.write_text(
        f"{tokens['admin']},admin,admin-uid,system:masters\n"
        f"{tokens['restricted']},restricted,restricted-uid,airflow-broadcast-testers\n"
    )
    path.chmod(0o600)
    return tokens
