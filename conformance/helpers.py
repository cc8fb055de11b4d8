"""Event recorders for the SDK's callbacks, with bounded waits, and JSON calls to the hub's HTTP API."""
import asyncio
import json
import time
import urllib.request

from centrifuge import Client, ClientEventHandler, ReplyError, SubscriptionEventHandler

from conftest import API_KEY


def post(url, body, headers=None, timeout=10):
    """POSTs a JSON body; answers the parsed JSON answer (waiting at most `timeout` seconds)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def server_api(server, method, body):
    """Calls a server API method with the API key; answers its result (an error fails the test)."""
    answer = post(f"{server.api_url}/{method}", body, {"X-API-Key": API_KEY})
    assert "error" not in answer, answer
    return answer["result"]


def metric(server, sample):
    """The value of `sample` (a metric's name with its labels, as /metrics prints them) on `server`; None when
    /metrics does not show it."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            name, _, value = line.rpartition(" ")
            if name == sample:
                return float(value)
    return None


def eventually(condition, what, timeout=30):
    """Waits until `condition()` holds; fails naming `what` after `timeout` seconds. For tests with no
    SDK client on the event loop (it sleeps the thread between checks)."""
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, what
        time.sleep(0.05)


async def metric_becomes(server, sample, wanted, timeout=30):
    """Waits until `sample` on `server` reads `wanted`."""
    deadline = time.time() + timeout
    while (value := metric(server, sample)) != wanted:
        assert time.time() < deadline, f"{sample} stayed {value}, expected {wanted}"
        await asyncio.sleep(0.1)


class Events:
    """Collects events by name and waits for them."""

    def __init__(self):
        self.items = []
        self.changed = asyncio.Event()

    def add(self, name, ctx):
        self.items.append((name, ctx))
        self.changed.set()

    def of(self, name):
        return [ctx for n, ctx in self.items if n == name]

    async def wait_for(self, name, predicate, timeout=10.0):
        """Waits for an event `name` whose context `predicate` accepts; answers it."""
        async def until():
            while True:
                matching = [ctx for ctx in self.of(name) if predicate(ctx)]
                if matching:
                    return matching[0]
                self.changed.clear()
                await self.changed.wait()
        return await asyncio.wait_for(until(), timeout)

    async def wait(self, name, count=1, timeout=5.0):
        async def until():
            while len(self.of(name)) < count:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(until(), timeout)
        return self.of(name)


class ClientEvents(ClientEventHandler):
    def __init__(self, events):
        self.events = events

    async def on_connected(self, ctx):
        self.events.add("connected", ctx)

    async def on_disconnected(self, ctx):
        self.events.add("disconnected", ctx)

    async def on_connecting(self, ctx):
        self.events.add("connecting", ctx)

    async def on_error(self, ctx):
        self.events.add("error", ctx)

    async def on_subscribed(self, ctx):
        self.events.add("server_subscribed", ctx)

    async def on_unsubscribed(self, ctx):
        self.events.add("server_unsubscribed", ctx)

    async def on_publication(self, ctx):
        self.events.add("server_publication", ctx)


async def connected_client(server, user, codec, **kwargs):
    """An SDK client connected as `user` in `codec`'s encoding, with its event recorder."""
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=server.token(user), **codec.kwargs, **kwargs)
    await client.connect()
    await events.wait("connected")
    return client, events


class SubEvents(SubscriptionEventHandler):
    def __init__(self, events):
        self.events = events

    async def on_subscribing(self, ctx):
        self.events.add("subscribing", ctx)

    async def on_subscribed(self, ctx):
        self.events.add("subscribed", ctx)

    async def on_unsubscribed(self, ctx):
        self.events.add("unsubscribed", ctx)

    async def on_publication(self, ctx):
        self.events.add("publication", ctx)

    async def on_join(self, ctx):
        self.events.add("join", ctx)

    async def on_leave(self, ctx):
        self.events.add("leave", ctx)

    async def on_error(self, ctx):
        self.events.add("sub_error", ctx)


def trip_mates(server, host, *travellers):
    """A running trip created through `server` (a hub or a cluster node), so its members are friends."""
    now = int(time.time() * 1000)
    trip = server_api(server, "trip_create", {"name": "Chat trip", "starts_at": now - 3_600_000, "ends_at": now + 3_600_000, "hosts": [host]})["trip"]["id"]
    for traveller in travellers:
        server_api(server, "trip_add_member", {"trip": trip, "user": traveller, "role": "traveller"})
    return trip


async def call(client, codec, method, data, timeout=5):
    """An RPC retried while the server answers 111 (over the command rate), as an app would;
    answers the result's data."""
    while True:
        try:
            return codec.into((await asyncio.wait_for(client.rpc(method, codec.out(data)), timeout)).data)
        except ReplyError as error:
            if error.code != 111:
                raise
            await asyncio.sleep(0.05)


async def chat_history(client, codec, chat):
    """Every message of a chat, oldest first, through chat.history pages."""
    messages, before = [], None
    while True:
        data = {"chat": chat, "limit": 100}
        if before is not None:
            data["before"] = before
        page = await call(client, codec, "chat.history", data)
        messages = page["messages"] + messages
        if not page["more"]:
            return messages
        before = page["messages"][0]["offset"]
