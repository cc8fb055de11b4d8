"""SIGHUP reloads the configuration of a running hub: namespaces, secrets and limits change while
1,000 connections stay open; subscriptions a namespace no longer allows end with the unsubscribe
code 2000; a configuration that does not load is refused whole, logged, and the running one stays;
a key that needs a restart is named and keeps its value."""
import asyncio
import itertools
import json
import os
import resource
import signal
import tempfile
import time

import jwt
import websockets
from centrifuge import Client, ClientState

from conftest import SECRET, launch
from helpers import ClientEvents, Events, SubEvents, eventually, server_api

CONNECTIONS = 1000
NEW_SECRET = "a-second-secret-of-at-least-thirty-two-bytes"


class RawClient:
    """A Centrifuge client over the JSON protocol on a real WebSocket: commands get their replies
    by id, pushes are kept in order, the server's pings are answered, and its close is recorded."""

    def __init__(self, ws):
        self.ws = ws
        self.ids = itertools.count(1)
        self.replies = {}
        self.pushes = []
        self.changed = asyncio.Event()
        self.close_code = None
        self.reader = asyncio.create_task(self.read())

    async def read(self):
        try:
            async for message in self.ws:
                for line in message.splitlines():
                    frame = json.loads(line)
                    if frame == {}:
                        await self.ws.send("{}")
                    elif "id" in frame:
                        self.replies[frame["id"]] = frame
                    else:
                        self.pushes.append(frame)
                    self.changed.set()
        except websockets.ConnectionClosed:
            pass
        self.close_code = self.ws.close_code if self.ws.close_code is not None else -1
        self.changed.set()

    async def until(self, condition, timeout=30):
        async def wait():
            while not condition():
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(wait(), timeout)

    async def command(self, body):
        command_id = next(self.ids)
        await self.ws.send(json.dumps({"id": command_id, **body}))
        await self.until(lambda: command_id in self.replies or self.close_code is not None)
        return self.replies.get(command_id)


async def open_client(url, token, channel=None):
    client = RawClient(await websockets.connect(url, max_queue=None))
    reply = await client.command({"connect": {"token": token}})
    if reply is None or "error" in reply:
        return client, reply
    if channel:
        subscribed = await client.command({"subscribe": {"channel": channel}})
        assert "subscribe" in subscribed, subscribed
    return client, reply


async def test_sighup_changes_namespaces_and_secrets_while_a_thousand_connections_stay():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))  # the clients' and, inherited, the hub's
    folder = tempfile.mkdtemp(prefix="gondola-reload-")
    process, server = launch(folder, settings={"ping_interval": "30s", "pong_timeout": "10s"})
    log_path = os.path.join(folder, "server.log")
    try:
        token = server.token("reloader")
        clients = []
        for batch in range(0, CONNECTIONS, 100):
            opened = await asyncio.gather(*(open_client(server.ws_url, token, f"room:reload-{i % 10}") for i in range(batch, batch + 100)))
            clients += [client for client, _ in opened]
        assert len(clients) == CONNECTIONS
        assert (await asyncio.to_thread(server_api, server, "info", {}))["nodes"][0]["num_clients"] >= CONNECTIONS

        # The new configuration: `room` no longer open to clients, a new namespace `news`, a new
        # secret, and a key that needs a restart.
        config = json.load(open(server.config_path))
        for namespace in config["namespaces"]:
            if namespace["name"] == "room":
                namespace["allow_subscribe_for_client"] = False
        config["namespaces"].append({"name": "news", "allow_subscribe_for_client": True})
        config["token_hmac_secret"] = NEW_SECRET
        config["max_frame_bytes"] = 9000
        json.dump(config, open(server.config_path, "w"))
        process.send_signal(signal.SIGHUP)

        # Every connection is told its room subscription ended (2000), and none is closed.
        for client in clients:
            await client.until(lambda c=client: any("unsubscribe" in p.get("push", {}) for p in c.pushes))
            unsubscribe = next(p["push"] for p in client.pushes if "unsubscribe" in p.get("push", {}))
            assert unsubscribe["channel"].startswith("room:reload-") and unsubscribe["unsubscribe"]["code"] == 2000, unsubscribe
        assert all(client.close_code is None for client in clients)
        eventually(lambda: "configuration reloaded" in open(log_path).read(), "the reload was not logged")
        log = open(log_path).read()
        assert "max_frame_bytes" in log and "take effect only at a restart" in log, log[-2000:]
        assert (await asyncio.to_thread(server_api, server, "presence_stats", {"channel": "room:reload-3"}))["num_clients"] == 0

        # The open connections follow the new namespaces: `news` opens, `room` refuses.
        replies = await asyncio.gather(*(client.command({"subscribe": {"channel": f"news:{i % 7}"}}) for i, client in enumerate(clients)))
        assert all("subscribe" in reply for reply in replies), [r for r in replies if "subscribe" not in r][:3]
        refused = await clients[0].command({"subscribe": {"channel": "room:reload-0"}})
        assert refused["error"]["code"] == 103, refused

        # New connections need the new secret; the old token no longer gets in.
        old, reply = await open_client(server.ws_url, token)
        assert reply is None or "error" in reply
        await old.until(lambda: old.close_code is not None)
        assert old.close_code == 3500
        newer, reply = await open_client(server.ws_url, jwt.encode({"sub": "newcomer"}, NEW_SECRET, algorithm="HS256"), "news:0")
        assert "connect" in reply

        # A configuration that does not load is refused whole: the running one stays.
        config["ping_interval"] = "soon"
        config["namespaces"] = [n for n in config["namespaces"] if n["name"] != "news"]
        json.dump(config, open(server.config_path, "w"))
        process.send_signal(signal.SIGHUP)
        eventually(lambda: "configuration not reloaded" in open(log_path).read(), "the refused reload was not logged")
        assert "ping_interval\\' expected a duration" in open(log_path).read()  # swift-log's text lines escape the quote
        still = await newer.command({"subscribe": {"channel": "news:1"}})
        assert "subscribe" in still, still
        assert all(client.close_code is None for client in clients)
        for client in clients + [newer]:
            client.reader.cancel()
            await client.ws.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_config_file_secret_rotation_keeps_tokens_of_the_previous_secret_until_its_date():
    """The documented rotation: the new secret, the previous one and the date it stops being accepted."""
    folder = tempfile.mkdtemp(prefix="gondola-reload-rotation-")
    process, server = launch(folder)
    try:
        old_token = jwt.encode({"sub": "ana"}, SECRET, algorithm="HS256")
        config = json.load(open(server.config_path))
        config.update(token_hmac_secret=NEW_SECRET, token_hmac_secret_previous=SECRET,
                      token_hmac_secret_previous_until=int(time.time()) + 3600)
        json.dump(config, open(server.config_path, "w"))
        process.send_signal(signal.SIGHUP)
        log_path = os.path.join(folder, "server.log")
        eventually(lambda: "configuration reloaded" in open(log_path).read(), "the reload was not logged")

        async def connects(token):
            client, reply = await open_client(server.ws_url, token)
            client.reader.cancel()
            await client.ws.close()
            return reply is not None and "connect" in reply
        assert asyncio.run(connects(old_token))
        assert asyncio.run(connects(jwt.encode({"sub": "ana"}, NEW_SECRET, algorithm="HS256")))
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_the_sdk_is_told_2000_and_stays_connected_when_a_reload_closes_its_namespace(codec):
    folder = tempfile.mkdtemp(prefix="gondola-reload-sdk-")
    process, server = launch(folder)
    try:
        events, sub_events = Events(), Events()
        client = Client(server.ws_url, events=ClientEvents(events), token=server.token("sia"), **codec.kwargs)
        await client.connect()
        subscription = client.new_subscription(f"room:sdk-{codec.name}", events=SubEvents(sub_events))
        await subscription.subscribe()
        await sub_events.wait("subscribed")
        config = json.load(open(server.config_path))
        config["namespaces"] = [n for n in config["namespaces"] if n["name"] != "room"] + [{"name": "news", "allow_subscribe_for_client": True}]
        json.dump(config, open(server.config_path, "w"))
        process.send_signal(signal.SIGHUP)
        unsubscribed = await sub_events.wait("unsubscribed", timeout=15)
        assert unsubscribed[0].code == 2000
        news_events = Events()
        news = client.new_subscription(f"news:sdk-{codec.name}", events=SubEvents(news_events))
        await news.subscribe()
        await news_events.wait("subscribed")
        assert not events.of("disconnected") and client.state == ClientState.CONNECTED
        await client.disconnect()
    finally:
        process.terminate()
        process.wait(timeout=30)
