"""
Outgoing calls check the address of every connection, and their URLs never reach the log.

The receivers are real local HTTP(S) servers; `localhost` stands for a name whose answer changed
after the URL was checked (DNS rebinding): it resolves to 127.0.0.1 when the client connects.
"""

from __future__ import annotations

import asyncio
import datetime
import http.server
import ipaddress
import logging
import ssl
import threading

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from apps.actions import registry
from apps.actions.outgoing import AddressRefused, outgoing_async_client, outgoing_client
from apps.actions.registry import ACTIONS, ActionCall, ActionError
from tests.fakes.receiver import Receiver

SECRET_QUERY = "token=t0ken-in-the-query"


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


def port_of(receiver: Receiver) -> int:
    return receiver.server.server_address[1]


def webhook_call(url: str) -> ActionCall:
    return ActionCall(conversation_id="c1", turn_id="t1", call_id="k1", arguments={"amount": 5},
                      tool={"name": "pay", "kind": "server", "action": "webhook", "url": url})


class TestEveryConnectionIsChecked:
    def test_a_name_that_resolves_to_loopback_when_the_client_connects_is_refused(self, receiver):
        with outgoing_client(timeout=5, allow_private=False) as client, pytest.raises(AddressRefused, match="loopback"):
            client.post(f"http://localhost:{port_of(receiver)}/hooks", content=b"{}")

        assert receiver.deliveries == []

    def test_the_async_client_refuses_it_too(self, receiver):
        async def post() -> None:
            async with outgoing_async_client(timeout=5, allow_private=False) as client:
                await client.post(f"http://localhost:{port_of(receiver)}/hooks", content=b"{}")

        with pytest.raises(AddressRefused, match="loopback"):
            asyncio.run(post())

        assert receiver.deliveries == []

    def test_a_webhook_action_whose_name_was_public_when_checked_is_refused_when_it_connects(
        self, receiver, settings, monkeypatch,
    ):
        settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = False
        monkeypatch.setattr(registry, "private_target", lambda url: "")  # the first lookup's answer: public

        with pytest.raises(ActionError, match="private address"):
            ACTIONS["webhook"].run(webhook_call(f"http://localhost:{port_of(receiver)}/hooks/refund"))

        assert receiver.deliveries == []

    def test_allow_private_lets_the_client_reach_a_local_receiver(self, receiver):
        with outgoing_client(timeout=5, allow_private=True) as client:
            answer = client.post(f"http://localhost:{port_of(receiver)}/hooks", content=b"{}")

        assert answer.status_code == 200 and len(receiver.deliveries) == 1

    def test_redirects_are_not_followed(self):
        with Redirector() as redirector, outgoing_client(timeout=5, allow_private=True) as client:
            answer = client.get(redirector.url)

        assert answer.status_code == 302 and redirector.hits == 1


class TestTlsNamesTheHost:
    def test_tls_is_verified_for_the_host_name_while_the_connection_goes_to_the_checked_address(self, tmp_path):
        with TlsServer(tmp_path, "localhost") as server, outgoing_client(
            timeout=5, allow_private=True, ssl_context=server.trusting(),
        ) as client:
            answer = client.get(f"https://localhost:{server.port}/")

        assert answer.status_code == 200 and server.server_names == ["localhost"]

    def test_a_certificate_for_another_name_is_refused(self, tmp_path):
        with TlsServer(tmp_path, "shop.example") as server, outgoing_client(
            timeout=5, allow_private=True, ssl_context=server.trusting(),
        ) as client, pytest.raises(httpx.ConnectError, match="(?i)certificate|hostname"):
            client.get(f"https://localhost:{server.port}/")


class TestUrlsStayOutOfTheLog:
    def test_the_query_of_a_call_is_not_logged_even_at_debug(self, receiver, caplog):
        caplog.set_level(logging.DEBUG)

        with outgoing_client(timeout=5, allow_private=True) as client:
            client.post(f"{receiver.url}?{SECRET_QUERY}", content=b"{}")

        assert receiver.deliveries[0]["path"].endswith(SECRET_QUERY)
        assert "t0ken" not in caplog.text

    def test_a_webhook_actions_query_is_not_logged(self, receiver, settings, caplog):
        settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
        caplog.set_level(logging.DEBUG)

        ACTIONS["webhook"].run(webhook_call(f"{receiver.url}?{SECRET_QUERY}"))

        assert receiver.deliveries[0]["path"].endswith(SECRET_QUERY)
        assert "t0ken" not in caplog.text

    def test_a_refused_urls_query_and_password_are_not_in_its_message(self, settings):
        settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = False

        with pytest.raises(ActionError) as caught:
            ACTIONS["webhook"].run(webhook_call(f"https://shop:s3cret@127.0.0.1/hooks?{SECRET_QUERY}"))

        assert "s3cret" not in str(caught.value) and "t0ken" not in str(caught.value)


class Redirector:
    """A local server that answers every request with a redirect to itself and counts them."""

    def __init__(self) -> None:
        self.hits = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                outer.hits += 1
                self.send_response(302)
                self.send_header("Location", "/again")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self) -> Redirector:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class TlsServer:
    """A local HTTPS server on 127.0.0.1 with a self-signed certificate for one name; it records the SNI it is sent."""

    def __init__(self, tmp_path, name: str) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
        cert_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        self.server_names: list[str | None] = []
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        context.sni_callback = lambda sock, server_name, ctx: self.server_names.append(server_name)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        assert ipaddress.ip_address(self.server.server_address[0]).is_loopback

    def trusting(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.cert.public_bytes(serialization.Encoding.PEM).decode())

    def __enter__(self) -> TlsServer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
