"""Bearer-token authentication and TLS with a certificate made by the test."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .conftest import Served


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_token_required_over_tls(tmp_path: Path) -> None:
    served = Served(tmp_path / "data", token="t0ken", tls=self_signed(tmp_path)).start()
    try:
        with served.client() as c:
            assert c.get("/connectors").json() == []
            assert c.get("/openapi.json").status_code == 200
        for bad in ("wrong", None):
            with served.client(token=bad or "") as c:
                if not bad:
                    c.headers.pop("Authorization", None)
                r = c.get("/connectors")
                assert r.status_code == 401
                assert r.json()["error_code"] == 401
                assert r.headers["www-authenticate"] == "Bearer"
        # plain HTTP to the TLS port fails; the certificate is checked
        with pytest.raises(httpx.TransportError), httpx.Client(
                base_url=served.url.replace("https", "http")) as c:
            c.get("/")
        with pytest.raises(httpx.TransportError), httpx.Client(base_url=served.url) as c:
            c.get("/")  # not trusted by default
    finally:
        assert served.stop() == 0
    assert "stopped" in served.log.read_text().splitlines()[-1]
