"""TLS on the hub's own listeners: the public one (WebSocket over wss), the internal one (the server
API over https) and the GRPC server API, each with its certificate files; a certificate replaced on
disk serves the next handshakes while a connection opened before it keeps going, a file that does
not load leaves the last good certificate in use, and bad TLS settings are refused naming the keys."""
import asyncio
import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import tempfile
import urllib.request

import websockets
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import grpc_api
from conftest import API_KEY, GONDOLA, free_port, launch
from helpers import eventually

NOW = datetime.datetime.now(datetime.timezone.utc)


def pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def make_ca():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Gondola test CA")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(NOW - datetime.timedelta(minutes=5))
            .not_valid_after(NOW + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return key, cert


def make_leaf(ca_key, ca_cert, serial):
    """A server certificate for localhost and 127.0.0.1 signed by the CA, told apart by its serial."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(serial)
            .not_valid_before(NOW - datetime.timedelta(minutes=5)).not_valid_after(NOW + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), pem_key(key)


def replace(path, data):
    """Writes `path` whole at once, as a deployment tool swaps a file in."""
    temporary = path + ".new"
    with open(temporary, "wb") as f:
        f.write(data)
    os.replace(temporary, path)


def served_serial(port, context):
    """The serial of the certificate a new TLS handshake on `port` presents."""
    with context.wrap_socket(__import__("socket").create_connection(("127.0.0.1", port), timeout=10), server_hostname="localhost") as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def api(port, context, method, body):
    request = urllib.request.Request(f"https://127.0.0.1:{port}/api/{method}", data=json.dumps(body).encode(),
                                     headers={"X-API-Key": API_KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


async def test_every_listener_serves_tls_and_a_rotated_certificate_serves_new_handshakes_under_a_live_connection():
    folder = tempfile.mkdtemp(prefix="gondola-tls-")
    ca_key, ca_cert = make_ca()
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    context = ssl.create_default_context(cadata=ca_pem.decode())
    first, second = make_leaf(ca_key, ca_cert, 1001), make_leaf(ca_key, ca_cert, 1002)
    cert_file, key_file = os.path.join(folder, "server.crt"), os.path.join(folder, "server.key")
    replace(cert_file, first[0])
    replace(key_file, first[1])
    internal, grpc_port = free_port(), free_port()
    settings = {"tls_cert_file": cert_file, "tls_key_file": key_file, "tls_reload_interval": "1s",
                "internal_listen": f"127.0.0.1:{internal}", "internal_tls_cert_file": cert_file, "internal_tls_key_file": key_file,
                "grpc_api_listen": f"127.0.0.1:{grpc_port}", "grpc_api_tls_cert_file": cert_file, "grpc_api_tls_key_file": key_file}
    process, server = launch(folder, settings=settings, health_port=internal, health_tls=context)
    try:
        port = server.port
        assert served_serial(port, context) == served_serial(internal, context) == 1001
        # Plain HTTP on a TLS listener is not served.
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{internal}/health", timeout=5)
            raise AssertionError("plain HTTP was answered on a TLS listener")
        except (OSError, urllib.error.URLError):
            pass

        token = subprocess.run([GONDOLA, "gentoken", "-u", "tess", "-q", "--config", server.config_path], capture_output=True, text=True,
                               timeout=30, check=True).stdout.strip()
        async with websockets.connect(f"wss://127.0.0.1:{port}/connection/websocket", ssl=context) as live:
            replies = asyncio.Queue()

            async def read():
                async for message in live:
                    for line in message.splitlines():
                        frame = json.loads(line)
                        if frame == {}:
                            await live.send("{}")  # the server's ping, answered
                        else:
                            await replies.put(frame)
            reader = asyncio.create_task(read())
            await live.send(json.dumps({"id": 1, "connect": {"token": token}}))
            assert "connect" in await asyncio.wait_for(replies.get(), 10)
            await live.send(json.dumps({"id": 2, "subscribe": {"channel": "room:tls"}}))
            assert "subscribe" in await asyncio.wait_for(replies.get(), 10)

            # The second certificate replaces the first on disk: new handshakes get it once it is read.
            replace(key_file, second[1])
            replace(cert_file, second[0])
            await asyncio.to_thread(eventually, lambda: served_serial(port, context) == 1002, "the new certificate was not served")
            assert served_serial(internal, context) == 1002

            # The connection opened under the first certificate still gets its publications.
            assert "result" in api(internal, context, "publish", {"channel": "room:tls", "data": {"after": "rotation"}})
            push = await asyncio.wait_for(replies.get(), 10)
            assert push["push"]["channel"] == "room:tls" and push["push"]["pub"]["data"] == {"after": "rotation"}

            # The GRPC server API over TLS, trusting the same CA.
            stub = grpc_api.stub(f"127.0.0.1:{grpc_port}", root_certificates=ca_pem)
            grpc_api.call(stub, "Publish", grpc_api.pb.PublishRequest(channel="room:tls", data=b'{"over":"grpc"}'))
            push = await asyncio.wait_for(replies.get(), 10)
            assert push["push"]["pub"]["data"] == {"over": "grpc"}

            # A certificate file that does not load is logged, and the last good certificate stays in use.
            replace(cert_file, b"not a certificate")
            log = os.path.join(folder, "server.log")
            await asyncio.to_thread(eventually, lambda: "certificate not reloaded" in open(log).read(), "the failed reload was not logged")
            assert served_serial(port, context) == 1002
            reader.cancel()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_bad_tls_settings_are_refused_naming_the_keys():
    folder = tempfile.mkdtemp(prefix="gondola-tls-bad-")
    ca_key, ca_cert = make_ca()
    cert, key = make_leaf(ca_key, ca_cert, 7)
    _, other_key = make_leaf(ca_key, ca_cert, 8)
    for name, data in [("a.crt", cert), ("a.key", key), ("other.key", other_key), ("junk.crt", b"junk")]:
        replace(os.path.join(folder, name), data)

    def check(settings):
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            json.dump(settings, f)
        return subprocess.run([GONDOLA, "checkconfig", "--config", path], capture_output=True, text=True, timeout=30, cwd=folder)

    for settings, expected in [
        ({"tls_cert_file": "a.crt"}, "'tls_cert_file' and 'tls_key_file' go together; only one is set"),
        ({"internal_tls_cert_file": "a.crt", "internal_tls_key_file": "a.key"},
         "'internal_tls_cert_file' is set but 'internal_listen' is not: there is no such listener"),
        ({"tls_cert_file": "a.crt", "tls_key_file": "other.key"}, "'tls_cert_file' and 'tls_key_file' cannot be used: "),
        ({"tls_cert_file": "junk.crt", "tls_key_file": "a.key"}, "'tls_cert_file' and 'tls_key_file' cannot be used: "),
        ({"grpc_api_tls_key_file": "missing.key"}, "'grpc_api_tls_key_file' names 'missing.key', which is not a readable file"),
        ({"tls_reload_interval": "100ms"}, "'tls_reload_interval' must be at least 1s"),
    ]:
        checked = check(settings)
        assert checked.returncode == 1 and expected in checked.stderr, (settings, checked.stderr)
    assert check({"tls_cert_file": "a.crt", "tls_key_file": "a.key"}).returncode == 0
