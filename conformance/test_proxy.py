"""Centrifugo's proxy to an app's own backend: a small aiohttp backend decides connects
without a token, answers RPC methods no domain serves, and rules subscribes and publishes in
a namespace with proxy_subscribe and proxy_publish; every kind of answer (result, custom
error, disconnect, a slow or dead backend) reaches the SDK as Centrifugo's would."""
import asyncio
import base64
import json
import tempfile
import threading
import time
import urllib.request

import pytest
from aiohttp import web
from centrifuge import Client, ClientState, ReplyError

from conftest import CONFIG, free_port, launch
from helpers import ClientEvents, Events, SubEvents, connected_client, server_api


class Backend:
    """The app's backend, on its own thread and event loop; records what it was asked."""

    def __init__(self):
        self.port = free_port()
        self.requests = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.started = threading.Event()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path}"

    def _run(self):
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        for kind in ("connect", "rpc", "subscribe", "publish", "refresh", "sub_refresh", "billing"):
            app.router.add_post(f"/{kind}", self._handler(kind))
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        self.started.set()
        self.loop.run_forever()
        self.loop.close()

    def stop(self):
        """Closes the backend's connections and server, then its loop."""
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def _handler(self, kind):
        async def handle(request):
            body = await request.json()
            self.requests.append((kind, body, dict(request.headers)))
            return web.json_response(await getattr(self, kind)(body, request.headers))
        return handle

    async def connect(self, body, headers):
        data = body.get("data") or {}
        if data.get("slow"):
            await asyncio.sleep(3)
        if data.get("refuse"):
            return {"error": {"code": 1000, "message": "not today"}}
        if data.get("ban"):
            return {"disconnect": {"code": 4501, "reason": "banned"}}
        user = data.get("user") or ("cookie-user" if "session=good" in headers.get("Cookie", "") else "")
        if not user:
            return {"error": {"code": 1001, "message": "who are you"}}
        result = {"user": user, "info": {"via" : "backend"}, "data": {"hello": user}, "channels": ["room:proxied-welcome"]}
        if data.get("expire_in"):
            result["expire_at"] = int(time.time()) + data["expire_in"]
        return {"result": result}

    async def refresh(self, body, headers):
        if body["user"].startswith("short-lived"):
            return {"result": {"expired": True}}
        return {"result": {"expire_at": int(time.time()) + 3600}}

    async def sub_refresh(self, body, headers):
        if body["channel"].endswith("short"):
            return {"result": {"expired": True}}
        return {"result": {"expire_at": int(time.time()) + 3600}}

    async def rpc(self, body, headers):
        if body["method"] == "backend.fail":
            return {"error": {"code": 1002, "message": "backend said no"}}
        return {"result": {"data": {"method": body["method"], "user": body["user"], "echo": body.get("data")}}}

    async def billing(self, body, headers):
        """A second backend service, the named proxy 'billing' that RPC methods `billing.*` go to; it
        takes Centrifugo's binary encoding: payloads come and go as base64 in `b64data`."""
        sent = json.loads(base64.b64decode(body["b64data"])) if "b64data" in body else None
        answer = json.dumps({"from": "billing", "method": body["method"], "sent": sent}).encode()
        return {"result": {"b64data": base64.b64encode(answer).decode()}}

    async def subscribe(self, body, headers):
        if body["channel"].endswith(":closed"):
            return {"error": {"code": 103, "message": "permission denied"}}
        result = {"info": {"seat": 1}, "data": {"welcome": body["channel"]}}
        if body["channel"].endswith("short") or body["channel"].endswith("renewed"):
            result["expire_at"] = int(time.time()) + 1
        return {"result": result}

    async def publish(self, body, headers):
        if (body.get("data") or {}).get("spam"):
            return {"error": {"code": 1003, "message": "no spam"}}
        return {"result": {"data": {"checked": body.get("data")}}}


@pytest.fixture(scope="module")
def proxied():
    backend = Backend()
    backend.thread.start()
    backend.started.wait(10)
    settings = {
        "proxy_connect_endpoint": backend.url("connect"), "proxy_connect_timeout": "1s",
        "proxy_rpc_endpoint": backend.url("rpc"), "proxy_subscribe_endpoint": backend.url("subscribe"),
        "proxy_publish_endpoint": backend.url("publish"), "proxy_http_headers": ["Cookie", "X-App"],
        "proxy_refresh_endpoint": backend.url("refresh"), "proxy_sub_refresh_endpoint": backend.url("sub_refresh"),
        "proxies": [{"name": "billing", "endpoint": backend.url("billing"), "timeout": "1s", "binary_encoding": True}],
        "rpc_proxies": [{"prefix": "billing.", "proxy": "billing"}],
        "namespaces": CONFIG["namespaces"] + [{"name": "proxied", "proxy_subscribe": True, "proxy_publish": True}],
    }
    process, server = launch(tempfile.mkdtemp(prefix="gondola-conformance-proxy-"), settings=settings)
    yield server, backend
    process.terminate()
    process.wait(timeout=10)
    backend.stop()


async def connect_without_token(server, codec, data=None, headers=None):
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), data=codec.out(data) if data is not None else None,
                    headers=headers, **codec.kwargs)
    await client.connect()
    return client, events


async def test_the_backend_decides_a_connect_without_a_token(proxied, codec):
    server, backend = proxied
    client, events = await connect_without_token(server, codec, headers={"Cookie": "session=good", "X-App": "demo", "X-Other": "no"})
    connected = await events.wait("connected")
    assert codec.into(connected[0].data) == {"hello": "cookie-user"}
    subscribed = await events.wait("server_subscribed")
    assert subscribed[0].channel == "room:proxied-welcome", "the answer's channels are server-side subscriptions"
    kind, body, headers = [r for r in backend.requests if r[0] == "connect"][-1]
    assert body["client"] == connected[0].client and body["transport"] == "websocket"
    assert body["protocol"] == ("protobuf" if codec.protobuf else "json")
    assert headers.get("Cookie") == "session=good" and headers.get("X-App") == "demo" and "X-Other" not in headers
    await client.disconnect()


async def test_the_backends_refusals_reach_the_sdk(proxied, codec):
    server, _ = proxied
    client, events = await connect_without_token(server, codec, data={"ban": True})
    disconnected = await events.wait("disconnected")
    assert disconnected[0].code == 4501 and disconnected[0].reason == "banned"
    await client.disconnect()
    # A custom error that is not temporary ends the SDK's attempts, with the backend's code and message.
    client, events = await connect_without_token(server, codec, data={"refuse": True})
    disconnected = await events.wait("disconnected")
    assert disconnected[0].code == 1000 and "not today" in disconnected[0].reason
    await client.disconnect()


async def test_a_slow_backend_gets_error_100_and_blocks_no_one(proxied, codec):
    server, _ = proxied
    other, other_events = await connect_without_token(server, codec, data={"user": "other"})
    await other_events.wait("connected")
    slow, slow_events = await connect_without_token(server, codec, data={"slow": True})
    # While the backend sleeps past the 1 s timeout, another client is served at once.
    result = await asyncio.wait_for(other.rpc("server.time", codec.out({})), 1)
    assert isinstance(codec.into(result.data)["ts"], int)
    errors = await slow_events.wait("error", timeout=5)
    assert any(getattr(e.error, "code", None) == 100 for e in errors)
    await slow.disconnect()
    await other.disconnect()


async def test_rpc_methods_no_domain_serves_go_to_the_backend(proxied, codec):
    server, backend = proxied
    client, events = await connect_without_token(server, codec, data={"user": "rpc-user"})
    await events.wait("connected")
    result = await client.rpc("backend.echo", codec.out({"n": 1}))
    assert codec.into(result.data) == {"method": "backend.echo", "user": "rpc-user", "echo": {"n": 1}}
    with pytest.raises(ReplyError) as error:
        await client.rpc("backend.fail", codec.out({}))
    assert error.value.code == 1002 and "backend said no" in error.value.message
    # Methods of the prefix `billing.` go to the named proxy of that service.
    routed = await client.rpc("billing.charge", codec.out({"cents": 250}))
    assert codec.into(routed.data) == {"from": "billing", "method": "billing.charge", "sent": {"cents": 250}}
    # `encoding` is the proxy's mode whatever the client speaks: json with `data`, binary with `b64data`.
    echo = [r[1] for r in backend.requests if r[0] == "rpc" and r[1]["method"] == "backend.echo"][-1]
    assert (echo["encoding"], echo["protocol"], echo["data"], "b64data" in echo) == ("json", codec.name, {"n": 1}, False)
    billed = [r[1] for r in backend.requests if r[0] == "billing"][-1]
    assert (billed["encoding"], "data" in billed) == ("binary", False)
    # The hub's own methods stay its own.
    assert isinstance(codec.into((await client.rpc("server.time", codec.out({}))).data)["ts"], int)
    assert not [r for r in backend.requests if r[0] == "rpc" and r[1]["method"] == "server.time"]
    await client.disconnect()
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    assert 'gondola_proxy_requests_total{kind="rpc",outcome="answered"}' in metrics
    assert 'gondola_proxy_request_seconds' in metrics


async def test_subscribe_and_publish_in_a_proxied_namespace(proxied, codec):
    server, _ = proxied
    client, events = await connect_without_token(server, codec, data={"user": "pub-user"})
    await events.wait("connected")
    sub_events = Events()
    sub = client.new_subscription("proxied:open", events=SubEvents(sub_events))
    await sub.subscribe()
    subscribed = await sub_events.wait("subscribed")
    assert codec.into(subscribed[0].data) == {"welcome": "proxied:open"}
    await sub.publish(codec.out({"text": "hi"}))
    publications = await sub_events.wait("publication")
    assert codec.into(publications[0].pub.data) == {"checked": {"text": "hi"}}, "the backend changed the data"
    assert codec.into(publications[0].pub.info.chan_info) == {"seat": 1}
    with pytest.raises(ReplyError) as error:
        await sub.publish(codec.out({"spam": True}))
    assert error.value.code == 1003
    closed_events = Events()
    closed = client.new_subscription("proxied:closed", events=SubEvents(closed_events))
    await closed.subscribe()
    unsubscribed = await closed_events.wait("unsubscribed")
    assert unsubscribed[0].code == 103
    assert client.state == ClientState.CONNECTED
    await client.disconnect()


async def wait_for_request(backend, kind, predicate, timeout=10):
    """Waits until the backend was asked `kind` with a body `predicate` accepts."""
    async def until():
        while not any(k == kind and predicate(body) for k, body, _ in backend.requests):
            await asyncio.sleep(0.05)
    await asyncio.wait_for(until(), timeout)


async def test_the_refresh_proxy_prolongs_or_ends_a_connection(proxied, codec):
    """A connection the backend let in for 1 s is prolonged by the server asking the refresh
    endpoint (the SDK is told no ttl); one the backend says expired is closed with 3005, which
    the SDK answers by connecting again."""
    server, backend = proxied
    user = f"long-lived-{codec.name}"
    client, events = await connect_without_token(server, codec, data={"user": user, "expire_in": 1})
    await events.wait("connected")
    await wait_for_request(backend, "refresh", lambda body: body["user"] == user)
    assert isinstance(codec.into((await client.rpc("server.time", codec.out({}))).data)["ts"], int)
    assert not events.of("disconnected") and not events.of("connecting")[1:]
    await client.disconnect()

    short = f"short-lived-{codec.name}"
    client, events = await connect_without_token(server, codec, data={"user": short, "expire_in": 1})
    await events.wait("connected")
    await events.wait_for("connecting", lambda ctx: ctx.code == 3005)
    await client.disconnect()


async def test_the_sub_refresh_proxy_prolongs_or_ends_a_subscription(proxied, codec):
    server, backend = proxied
    client, events = await connect_without_token(server, codec, data={"user": f"subs-{codec.name}"})
    await events.wait("connected")
    renewed_events, short_events = Events(), Events()
    renewed = client.new_subscription(f"proxied:{codec.name}-renewed", events=SubEvents(renewed_events))
    short = client.new_subscription(f"proxied:{codec.name}-short", events=SubEvents(short_events))
    await renewed.subscribe()
    await short.subscribe()
    await renewed_events.wait("subscribed")
    await wait_for_request(backend, "sub_refresh", lambda body: body["channel"] == f"proxied:{codec.name}-renewed")
    await short_events.wait_for("subscribing", lambda ctx: ctx.code == 2501)
    server_api(server, "publish", {"channel": f"proxied:{codec.name}-renewed", "data": {"still": "here"}})
    publications = await renewed_events.wait("publication")
    assert codec.into(publications[0].pub.data) == {"still": "here"}
    await client.disconnect()
