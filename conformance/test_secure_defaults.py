"""The secure defaults seen as a browser, the official SDK and an identity provider see them: a page of
another origin cannot open a session (and can once `allowed_origins` lists it), the SDK is told 3504 when
its user is over `client_user_connection_limit`, rides out `client_connection_rate_limit` by reconnecting,
and gets in once a rotated JWKS key has been fetched. The host page, served by the hub on its own origin,
keeps connecting under the default rule: test_host_page.py drives it."""
import asyncio
import base64
import json
import os
import shutil
import tempfile
import time

import jwt
import pytest
from centrifuge import Client
from cryptography.hazmat.primitives.asymmetric import ec
from playwright.async_api import async_playwright

from conftest import free_port, launch
from helpers import ClientEvents, Events, metric
from http_standin import QuietHandler, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

PAGE = """<!doctype html><title>another site</title><script>
window.outcome = new Promise(resolve => {
  const socket = new WebSocket(%s);
  socket.onopen = () => { socket.send(JSON.stringify({id: 1, connect: {token: %s}})); };
  socket.onmessage = event => resolve("message " + event.data);
  socket.onerror = () => resolve("error");
  socket.onclose = event => resolve("closed " + event.code);
});
</script>"""


class LocalSite:
    """An HTTP server on 127.0.0.1 and a port of its own (so another origin than the hub's) that answers
    every GET with what `answer()` gives: a content type and the body."""

    def __init__(self, answer):
        class Handler(QuietHandler):
            def do_GET(self):
                content_type, body = answer()
                self.answer(body, content_type)

        self.httpd = serve(Handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def stop(process):
    process.terminate()
    process.wait(timeout=10)


async def page_outcome(site):
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page()
        await page.goto(site.origin + "/")
        outcome = await page.evaluate("window.outcome")
        await browser.close()
        return outcome


async def test_a_page_of_another_origin_cannot_open_a_session_until_allowed():
    folder = tempfile.mkdtemp(prefix="gondola-origin-")
    port = free_port()
    process, server = launch(folder, port=port)
    page = (PAGE % (json.dumps(server.ws_url), json.dumps(server.token("visitor")))).encode()
    site = LocalSite(lambda: ("text/html", page))
    try:
        refused = await page_outcome(site)
        assert refused.startswith("error") or refused.startswith("closed 1006"), refused
        log = open(os.path.join(folder, "server.log")).read()
        assert "origin not allowed" in log and site.origin in log, log[-2000:]
        assert metric(server, "gondola_origin_refused_total") == 1
        stop(process)

        process, server = launch(folder, port=port, settings={"allowed_origins": [site.origin]})
        allowed = await page_outcome(site)
        assert allowed.startswith("message ") and '"connect"' in allowed, allowed
    finally:
        stop(process)
        site.close()


async def test_the_sdk_is_told_3504_over_the_user_connection_limit():
    folder = tempfile.mkdtemp(prefix="gondola-user-limit-")
    process, server = launch(folder, settings={"client_user_connection_limit": 1})
    try:
        first_events, second_events = Events(), Events()
        first = Client(server.ws_url, events=ClientEvents(first_events), token=server.token("alice"))
        await first.connect()
        await first_events.wait("connected")
        second = Client(server.ws_url, events=ClientEvents(second_events), token=server.token("alice"))
        await second.connect()
        disconnected = await second_events.wait_for("disconnected", lambda ctx: True, timeout=10)
        assert disconnected.code == 3504, disconnected
        assert not first_events.of("disconnected")
        await first.disconnect()
    finally:
        stop(process)


async def test_the_sdk_rides_out_the_connect_rate_limit():
    folder = tempfile.mkdtemp(prefix="gondola-rate-limit-")
    process, server = launch(folder, settings={"client_connection_rate_limit": 2})
    try:
        clients = []
        recorders = []
        for n in range(6):
            events = Events()
            client = Client(server.ws_url, events=ClientEvents(events), token=server.token(f"storm-{n}"), min_reconnect_delay=0.2)
            clients.append(client)
            recorders.append(events)
        await asyncio.gather(*(client.connect() for client in clients))
        # Every client gets in, some after the SDK's own reconnect: the 503s were temporary to it.
        await asyncio.gather(*(events.wait("connected", timeout=30) for events in recorders))
        assert metric(server, 'gondola_limit_reached_total{limit="client_connection_rate_limit"}') >= 1
        for client in clients:
            await client.disconnect()
    finally:
        stop(process)


class IdentityProvider:
    """A JWKS endpoint whose keys the test rotates."""

    def __init__(self):
        self.keys = {}
        self.site = LocalSite(lambda: ("application/json", json.dumps({"keys": [self.jwk(kid, key) for kid, key in self.keys.items()]}).encode()))
        self.url = self.site.origin + "/jwks"

    @staticmethod
    def jwk(kid, key):
        numbers = key.public_key().public_numbers()
        def b64(n):
            return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()
        return {"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid, "x": b64(numbers.x), "y": b64(numbers.y)}

    def token(self, kid, user):
        return jwt.encode({"sub": user, "exp": int(time.time()) + 600}, self.keys[kid], algorithm="ES256", headers={"kid": kid})

    def close(self):
        self.site.close()


async def test_the_sdk_gets_in_once_a_rotated_jwks_key_is_fetched():
    provider = IdentityProvider()
    provider.keys["k1"] = ec.generate_private_key(ec.SECP256R1())
    folder = tempfile.mkdtemp(prefix="gondola-jwks-")
    process, server = launch(folder, settings={"token_jwks_public_endpoint": provider.url})
    try:
        deadline = time.time() + 10
        while metric(server, 'gondola_jwks_fetches_total{outcome="ok"}') is None:
            assert time.time() < deadline, "the JWKS was not fetched at start"
            await asyncio.sleep(0.1)
        provider.keys["k2"] = ec.generate_private_key(ec.SECP256R1())
        events = Events()
        client = Client(server.ws_url, events=ClientEvents(events), token=provider.token("k2", "rotated"), min_reconnect_delay=0.2)
        await client.connect()
        await events.wait("connected", timeout=15)
        assert not [ctx for ctx in events.of("disconnected") if ctx.code >= 3500]
        assert metric(server, 'gondola_jwks_fetches_total{outcome="ok"}') >= 2
        await client.disconnect()
    finally:
        stop(process)
        provider.close()
