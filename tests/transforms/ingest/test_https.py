"""HTTPS through the guard: the connection goes to the vetted address while TLS (SNI and the certificate check) uses
the host name; a certificate for another name is refused."""

from __future__ import annotations

import datetime
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("cryptography")  # a dependency of the Google client libraries; not ours to pin

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from transforms.ingest.fetcher import Fetcher, FetcherConfig
from transforms.ingest.guard import AddressGuard


def self_signed(tmp_path, name: str):
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


class Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = f"host={self.headers.get('Host')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def tls_server(tmp_path):
    cert, key = self_signed(tmp_path, "secure.test")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1], cert
    srv.shutdown()
    srv.server_close()


def test_https_connects_to_the_vetted_ip_and_checks_the_name(tls_server):
    port, cert = tls_server
    cfg = FetcherConfig(min_host_delay_s=0, ca_certs=cert, respect_robots=False)
    ok = Fetcher(cfg, AddressGuard({"secure.test": f"127.0.0.1:{port}"})).fetch("https://secure.test/page")
    assert ok.ok and ok.body == b"host=secure.test"
    # Same address, another name: the certificate does not match, nothing is read.
    bad = Fetcher(cfg, AddressGuard({"other.test": f"127.0.0.1:{port}"})).fetch("https://other.test/page")
    assert bad.error == "connection_error" and bad.body == b""
