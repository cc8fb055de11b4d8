"""Three nodes (started by Scripts/cluster) with the official SDKs, once on each engine: the
PostgreSQL bus, Redis (two shards; tables still in PostgreSQL), where a shard is also
stopped and started again while clients stay connected (every shard needs a password and TLS), and
Redis behind Sentinel, where a shard's master is killed under publishing and its replica takes over. On all:
publications, presence, join/leave, history and recovery across nodes, the server API
acting cluster-wide, chats and nearby between travellers on different nodes, a crash, a form and
a car rental worked on through several nodes, a fence crossing reported once (and posted once to its webhook by the three nodes' outbox workers), a broadcast's push notifications sent by three nodes' workers
(each once), every write read at once through another node, an HTTP stream's and an SSE stream's commands
posted to /emulation of nodes that do not hold the session, payloads (binary and spelled JSON) byte for byte across nodes, and a node killed with -9 while a client is subscribed through it and while a client sends chat
messages."""
import collections
import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import signal
import subprocess
import tempfile
import time
import urllib.request

import jwt
import pytest
from cent import (ChannelsRequest, Client as ApiClient, Disconnect, DisconnectRequest, HistoryRequest, InfoRequest, PresenceRequest,
                  PresenceStatsRequest, PublishRequest, UnsubscribeRequest)
from centrifuge import Client, ClientState, DeltaType, ReplyError, StreamPosition, SubscriptionState

from conftest import API_KEY, CONFIG, GONDOLA, SECRET, Codec, Endpoint, consecutive_free_ports
from http_transports import HTTPStream, emulate
from helpers import ClientEvents, Events, SubEvents, call, chat_history, metric_becomes, post, server_api, trip_mates
from http_standin import QuietHandler, serve
from otlp_receiver import OTLPReceiver
from switching_proxy import SwitchingProxy
from test_crash import fixture, http as crash_http, poppler
from test_payloads import BINARY, SPELLED, post_text
from test_push import accepted, start_standin, text_of

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Scripts", "cluster")
NODES = 3
# What every node reads; the cluster's script sets the database, port, name and secrets.
NODE_CONFIG = {key: value for key, value in CONFIG.items() if key not in ("token_hmac_secret", "api_key")}
NODE_CONFIG["cluster_node_timeout"] = "3s"
# Redis presence entries of a killed node expire after this (the PostgreSQL engine drops them with the node).
NODE_CONFIG["cluster_presence_ttl"] = "3s"
# How long `channels` waits for the other nodes (a stopped node is named after this).
NODE_CONFIG["cluster_survey_timeout"] = "500ms"
# Every node traces, the server API too, and exports its spans to the fixture's OTLP receiver.
NODE_CONFIG["opentelemetry"] = True
NODE_CONFIG["opentelemetry_api"] = True
REDIS_SHARDS = 2
# A Redis Cluster needs three masters to fail one over (a majority votes); the nodes spread the
# channels over redis_cluster_partitions (16 by default), each partition in a slot of its own.
REDIS_CLUSTER_MASTERS = 3
REDIS_CLUSTER_PARTITIONS = 16
REDIS_PASSWORD = "cluster-redis-secret"


class Node(Endpoint):
    def __init__(self, index, port):
        super().__init__(port)
        self.index = index

    def token(self, user):
        return subprocess.run([GONDOLA, "token", "--user", user, "--token-hmac-secret", SECRET, "--api-key", API_KEY],
                              check=True, capture_output=True, text=True, timeout=30).stdout.strip()

    def api(self):
        return ApiClient(self.api_url, API_KEY)


class Cluster:
    """The nodes Scripts/cluster starts in `folder` on `engine`; with `traces` (an OTLPReceiver) every
    node exports its spans there."""

    def __init__(self, folder, engine, traces=None):
        self.folder = folder
        self.engine = engine
        self.traces = traces
        base_port = consecutive_free_ports(2 * NODES)  # the nodes' ports, then their GRPC server API's
        self.nodes = [Node(i + 1, base_port + i) for i in range(NODES)]
        grpc_base = base_port + NODES
        for node in self.nodes:
            node.grpc_address = f"127.0.0.1:{grpc_base + node.index - 1}"
        self.env = dict(os.environ, CLUSTER_BINARY=GONDOLA, GONDOLA_TOKEN_HMAC_SECRET=SECRET, GONDOLA_API_KEY=API_KEY,
                        CLUSTER_GRPC_PORT=str(grpc_base), **(traces.env() if traces else {}))

    def script(self, *args):
        subprocess.run([SCRIPT, *args, "--folder", self.folder], env=self.env, check=True, timeout=120)


class WebhookStandIn:
    """A fence webhook receiver on loopback: records each call's event id, signature and body."""

    def __init__(self):
        calls = self.calls = []

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                calls.append((self.headers["X-Gondola-Event"], self.headers["X-Gondola-Signature"], body))
                self.send_response(204)
                self.end_headers()

        self.server = serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def ids(self):
        return [call[0] for call in self.calls]

    def verified(self, secret):
        for _, signature, body in self.calls:
            parts = dict(part.split("=", 1) for part in signature.split(","))
            expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(expected, parts["v1"]):
                return False
        return True

    def stop(self):
        self.server.shutdown()


@pytest.fixture(scope="module", params=["postgres", "redis", "sentinel", "rediscluster"])
def cluster(request):
    folder = tempfile.mkdtemp(prefix="gondola-cluster-")
    os.chmod(folder, 0o755)  # PostgreSQL runs as the postgres user and must reach its folder.
    config = os.path.join(folder, "nodes.json")
    standin_folder = os.path.join(folder, "standin")
    standin, _, push_settings = start_standin(standin_folder)
    with open(config, "w") as f:
        json.dump(dict(NODE_CONFIG, **push_settings), f)
    traces = OTLPReceiver()
    instance = Cluster(folder, request.param, traces)
    instance.standin_folder = standin_folder
    try:
        # Redis as production runs it: every shard needs a password and a TLS client certificate
        # (the nodes reach them as rediss://:…@host:port with the cluster's CA and client certificate);
        # "sentinel" is the same behind Sentinel: each shard a master with a replica, three Sentinels;
        # "rediscluster" a Redis Cluster of three masters, each with a replica.
        engine = {"sentinel": ["--engine", "redis", "--redis-sentinel"], "rediscluster": ["--engine", "redis", "--redis-cluster"]}.get(
            instance.engine, ["--engine", instance.engine])
        shards = REDIS_CLUSTER_MASTERS if instance.engine == "rediscluster" else REDIS_SHARDS
        instance.script("start", str(NODES), "--port", str(instance.nodes[0].port), "--config", config, "--no-build",
                        *engine, "--redis-shards", str(shards), "--redis-password", REDIS_PASSWORD, "--redis-tls")
        yield instance
    finally:
        instance.script("stop")
        traces.stop()
        standin.terminate()
        standin.wait(timeout=10)


async def client_on(node, user, codec, address=None):
    events = Events()
    client = Client(address or node.ws_url, events=ClientEvents(events), token=node.token(user), **codec.kwargs)
    await client.connect()
    await events.wait("connected", timeout=10)
    return client, events


async def subscribed(client, channel, **kwargs):
    events = Events()
    sub = client.new_subscription(channel, SubEvents(events), **kwargs)
    await sub.subscribe()
    await events.wait("subscribed", timeout=10)
    return sub, events


async def test_publications_reach_every_node_in_offset_order(cluster, codec):
    channel = f"room:cluster-pubsub-{codec.name}"
    clients = [await client_on(node, f"reader{node.index}", codec) for node in cluster.nodes]
    subs = [await subscribed(client, channel, recoverable=True) for client, _ in clients]
    writer, _ = await client_on(cluster.nodes[2], "writer", codec)
    writer_sub, _ = await subscribed(writer, channel)
    for n in range(9):
        if n % 3 == 2:
            await writer_sub.publish(codec.out({"n": n}))
        else:
            cluster.nodes[n % 3].api().publish(PublishRequest(channel=channel, data={"n": n}))
    for _, events in subs:
        publications = await events.wait("publication", 9, timeout=10)
        assert [codec.into(p.pub.data)["n"] for p in publications] == list(range(9))
        assert [p.pub.offset for p in publications] == list(range(1, 10))
    epochs = {(await sub.history(limit=0)).epoch for sub, _ in subs}
    assert len(epochs) == 1
    for client, _ in clients + [(writer, None)]:
        await client.disconnect()


async def test_a_server_api_publication_is_one_trace_across_the_nodes(cluster, codec):
    """The trace a server API request carries (its traceparent) goes with the publication over the
    engine's bus: the node that took the request has its API span and the publish span under it, and
    every node that delivers the publication a deliver span whose parent is that publish span."""
    channel = f"room:cluster-trace-{codec.name}"
    clients = [await client_on(node, f"traced{node.index}", codec) for node in cluster.nodes]
    subs = [await subscribed(client, channel) for client, _ in clients]
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    answer = post(f"{cluster.nodes[0].api_url}/publish", {"channel": channel, "data": {"traced": True}},
                  {"X-API-Key": API_KEY, "traceparent": f"00-{trace_id}-{caller_span}-01"})
    assert "error" not in answer, answer
    for _, events in subs:
        await events.wait("publication", 1, timeout=10)
    node_names = {f"node-{node.index}" for node in cluster.nodes}

    def complete(spans):
        delivered = {span["attributes"].get("gondola.node") for span in spans if span["name"] == "deliver"}
        return any(span["name"] == "api.publish" for span in spans) and node_names <= delivered

    spans = await cluster.traces.spans_of(trace_id, complete, "API span and a delivery on every node")
    api = next(span for span in spans if span["name"] == "api.publish")
    assert (api["parent"], api["kind"]) == (caller_span, 2)  # a server span under the caller's
    publish = next(span for span in spans if span["name"] == "publish")
    assert publish["parent"] == api["span"]
    assert publish["attributes"]["messaging.destination.name"] == channel
    deliveries = [span for span in spans if span["name"] == "deliver"]
    assert {span["parent"] for span in deliveries} == {publish["span"]}
    assert {span["attributes"]["messaging.destination.name"] for span in deliveries} == {channel}
    # Each subscriber's node queued the publication for its subscriber.
    assert all(span["attributes"]["gondola.messages_sent"] >= 1 for span in deliveries)
    for client, _ in clients:
        await client.disconnect()


async def test_presence_and_join_leave_across_nodes(cluster, codec):
    channel = f"room:cluster-presence-{codec.name}"
    alice, _ = await client_on(cluster.nodes[0], "alice", codec)
    alice_sub, alice_events = await subscribed(alice, channel, join_leave=True)
    bob, _ = await client_on(cluster.nodes[1], "bob", codec)
    await subscribed(bob, channel)
    joins = await alice_events.wait("join", 2, timeout=10)
    assert {j.info.user for j in joins} == {"alice", "bob"}
    presence = await alice_sub.presence()
    assert sorted(info.user for info in presence.clients.values()) == ["alice", "bob"]
    api = cluster.nodes[2].api()
    assert sorted(c.user for c in api.presence(PresenceRequest(channel=channel)).presence.values()) == ["alice", "bob"]
    stats = api.presence_stats(PresenceStatsRequest(channel=channel))
    assert (stats.num_clients, stats.num_users) == (2, 2)
    await bob.disconnect()
    leaves = await alice_events.wait("leave", timeout=10)
    assert leaves[0].info.user == "bob"
    assert [c.user for c in api.presence(PresenceRequest(channel=channel)).presence.values()] == ["alice"]
    await alice.disconnect()


async def test_history_and_recovery_through_another_node(cluster, codec):
    channel = f"room:cluster-recovery-{codec.name}"
    first, _ = await client_on(cluster.nodes[0], "roamer", codec)
    _, events = await subscribed(first, channel, recoverable=True)
    for n in range(3):
        cluster.nodes[1].api().publish(PublishRequest(channel=channel, data={"n": n}))
    seen = await events.wait("publication", 3, timeout=10)
    last = seen[-1].pub.offset
    history = [node.api().history(HistoryRequest(channel=channel, limit=10)) for node in cluster.nodes]
    assert len({h.epoch for h in history}) == 1
    assert all([p.offset for p in h.publications] == [1, 2, 3] for h in history)
    epoch = history[0].epoch
    await first.disconnect()
    for n in range(3, 6):
        cluster.nodes[2].api().publish(PublishRequest(channel=channel, data={"n": n}))

    async def get_state(_channel):
        return StreamPosition(offset=last, epoch=epoch)

    second, _ = await client_on(cluster.nodes[2], "roamer", codec)
    events = Events()
    sub = second.new_subscription(channel, SubEvents(events), get_state=get_state)
    await sub.subscribe()
    subscribed_ctx = (await events.wait("subscribed", timeout=10))[0]
    assert subscribed_ctx.was_recovering and subscribed_ctx.recovered
    recovered = await events.wait("publication", 3, timeout=10)
    assert [p.pub.offset for p in recovered] == [4, 5, 6]
    assert [codec.into(p.pub.data)["n"] for p in recovered] == [3, 4, 5]
    await second.disconnect()


async def test_publication_options_across_nodes(cluster, codec):
    channel = f"room:cluster-options-{codec.name}"
    reader, _ = await client_on(cluster.nodes[1], f"tag-reader-{codec.name}", codec)
    _, events = await subscribed(reader, channel)
    api = cluster.nodes[0].api()
    first = api.publish(PublishRequest(channel=channel, data={"n": 1}, tags={"kind": "lift"}))
    skipped = api.publish(PublishRequest(channel=channel, data={"n": 2}, skip_history=True))
    assert first.offset >= 1 and skipped.offset == 0
    publications = [ctx.pub for ctx in await events.wait("publication", 2, timeout=10)]
    assert [(codec.into(p.data)["n"], p.tags, p.offset) for p in publications] == [(1, {"kind": "lift"}, first.offset), (2, {}, 0)]
    history = cluster.nodes[2].api().history(HistoryRequest(channel=channel, limit=-1))
    assert [(p.data["n"], p.tags) for p in history.publications] == [(1, {"kind": "lift"})]
    # An idempotency key retried through each node publishes once; an older version through
    # another node is skipped. The publication after them shows nothing else came.
    keyed = [server_api(node, "publish", {"channel": channel, "data": {"n": 3}, "idempotency_key": "order-3"}) for node in cluster.nodes]
    assert keyed[0]["offset"] == first.offset + 1 and keyed.count(keyed[0]) == NODES, keyed
    versioned = server_api(cluster.nodes[1], "publish", {"channel": channel, "data": {"n": 4}, "version": 7})
    older = server_api(cluster.nodes[2], "publish", {"channel": channel, "data": {"n": 5}, "version": 6})
    assert older == versioned and versioned["offset"] == first.offset + 2, (versioned, older)
    api.publish(PublishRequest(channel=channel, data={"n": 6}))
    publications = [ctx.pub for ctx in await events.wait("publication", 5, timeout=10)]
    assert [codec.into(p.data)["n"] for p in publications] == [1, 2, 3, 4, 6]
    await reader.disconnect()


async def test_deltas_cross_nodes_as_published(cluster, codec):
    """`delta` travels with the publication: a node delivers as a delta exactly what was
    published with it through another node."""
    channel = f"patches:cluster-{codec.name}"
    reader, _ = await client_on(cluster.nodes[1], f"delta-reader-{codec.name}", codec)
    _, events = await subscribed(reader, channel, delta=DeltaType.FOSSIL)
    frames = [{"positions": [{"user": f"t{i}", "lat": 45.3 + i / 1000 + n / 100000, "lon": 6.58} for i in range(8)]} for n in range(4)]
    for frame, delta in zip(frames, [True, True, False, True]):
        server_api(cluster.nodes[0], "publish", {"channel": channel, "data": frame, "delta": delta})
    publications = [ctx.pub for ctx in await events.wait("publication", 4, timeout=10)]
    assert [codec.into(p.data) for p in publications] == frames
    assert [p.delta for p in publications] == [False, True, False, True]
    await reader.disconnect()


async def test_channels_come_from_every_node_and_a_stopped_one_is_named(cluster, codec):
    prefix = f"room:cluster-channels-{codec.name}"
    clients = []
    for node in cluster.nodes:
        client, _ = await client_on(node, f"lister{node.index}-{codec.name}", codec)
        await subscribed(client, f"{prefix}-{node.index}")
        await subscribed(client, f"{prefix}-all")
        clients.append(client)
    expected = {f"{prefix}-all": NODES, **{f"{prefix}-{node.index}": 1 for node in cluster.nodes}}
    listed = cluster.nodes[0].api().channels(ChannelsRequest(pattern=f"{prefix}-*"))
    assert {name: info.num_clients for name, info in listed.channels.items()} == expected
    # A stopped node stays in the registry for cluster_node_timeout: it is named, not waited on.
    stopped = cluster.nodes[NODES - 1]
    with open(os.path.join(cluster.folder, f"node-{stopped.index}.pid")) as pidfile:
        pid = int(pidfile.read())
    os.kill(pid, signal.SIGSTOP)
    try:
        listed = server_api(cluster.nodes[0], "channels", {"pattern": f"{prefix}-*"})
    finally:
        os.kill(pid, signal.SIGCONT)
    assert listed["unanswered_nodes"] == [f"node-{stopped.index}"]
    del expected[f"{prefix}-{stopped.index}"]
    expected[f"{prefix}-all"] = NODES - 1
    assert {name: info["num_clients"] for name, info in listed["channels"].items()} == expected
    for client in clients:
        await client.disconnect()


async def test_the_grpc_api_acts_on_every_node(cluster, codec):
    from grpc_api import call, pb, stub
    user, channel = f"grpc-cluster-{codec.name}", f"room:grpc-cluster-{codec.name}"
    client, events = await client_on(cluster.nodes[0], user, codec)
    spared, spared_events = await client_on(cluster.nodes[1], user, codec)
    await subscribed(client, channel)
    api = stub(cluster.nodes[2].grpc_address)
    assert call(api, "Channels", pb.ChannelsRequest(pattern=channel)).result.channels[channel].num_clients == 1
    assert sorted(n.name for n in call(api, "Info", pb.InfoRequest()).result.nodes) == [f"node-{i}" for i in range(1, NODES + 1)]
    client_id = events.of("connected")[0].client
    call(api, "Disconnect", pb.DisconnectRequest(user=user, client=client_id, disconnect=pb.Disconnect(code=4501, reason="moved")))
    closed = (await events.wait("disconnected", timeout=10))[0]
    assert (closed.code, closed.reason) == (4501, "moved") and spared.state == ClientState.CONNECTED
    await spared.disconnect()


async def test_server_api_acts_on_every_node(cluster, codec):
    channel = f"room:cluster-admin-{codec.name}"
    user = f"managed-{codec.name}"
    client, client_events = await client_on(cluster.nodes[0], user, codec)
    _, sub_events = await subscribed(client, channel)
    info = cluster.nodes[1].api().info(InfoRequest())
    assert sorted(n.name for n in info.nodes) == [f"node-{i}" for i in range(1, NODES + 1)]
    assert len({n.uid for n in info.nodes}) == NODES
    cluster.nodes[2].api().unsubscribe(UnsubscribeRequest(user=user, channel=channel))
    assert (await sub_events.wait("unsubscribed", timeout=10))[0].code == 2000
    # Aimed at one connection through another node: a refresh that expires it (3005, and the
    # SDK reconnects), then a disconnect with the caller's code; a second connection is spared.
    spared, spared_events = await client_on(cluster.nodes[1], user, codec)
    client_id = client_events.of("connected")[0].client
    server_api(cluster.nodes[2], "refresh", {"user": user, "client": client_id, "expired": True})
    assert (await client_events.wait("connecting", 2, timeout=10))[1].code == 3005
    await client_events.wait("connected", 2, timeout=10)
    client_id = client_events.of("connected")[1].client
    cluster.nodes[1].api().disconnect(DisconnectRequest(user=user, client=client_id, disconnect=Disconnect(code=4501, reason="moved")))
    closed = (await client_events.wait("disconnected", timeout=10))[0]
    assert (closed.code, closed.reason) == (4501, "moved")
    assert client.state == ClientState.DISCONNECTED and spared.state == ClientState.CONNECTED
    cluster.nodes[0].api().disconnect(DisconnectRequest(user=user))
    assert (await spared_events.wait("disconnected", timeout=10))[0].code == 3503


async def test_killed_node_clients_recover_elsewhere_with_every_acknowledged_publication(cluster, codec):
    channel = f"room:cluster-kill-{codec.name}"
    doomed, survivor, publisher_node = cluster.nodes[1], cluster.nodes[2], cluster.nodes[0]
    proxy = SwitchingProxy(doomed.port)
    proxy_port = await proxy.start()
    client, client_events = await client_on(doomed, "traveller", codec, address=f"ws://127.0.0.1:{proxy_port}/connection/websocket")
    _, events = await subscribed(client, channel, recoverable=True)
    bystander, _ = await client_on(doomed, "bystander", codec)
    await subscribed(bystander, channel)
    api = publisher_node.api()
    assert {c.user for c in api.presence(PresenceRequest(channel=channel)).presence.values()} == {"traveller", "bystander"}

    acknowledged = []

    def publish_for(seconds):
        deadline = time.time() + seconds
        n = 0
        while time.time() < deadline and n < 400:
            result = api.publish(PublishRequest(channel=channel, data={"n": n}))
            acknowledged.append(result.offset)
            n += 1
            time.sleep(0.01)

    publishing = asyncio.ensure_future(asyncio.to_thread(publish_for, 3.0))
    deadline = time.time() + 10
    while len(acknowledged) < 100 and not publishing.done():  # the kill comes in the middle of the publishing
        assert time.time() < deadline, "publications not acknowledged in time"
        await asyncio.sleep(0.01)
    killed_at = time.time()
    cluster.script("kill", str(doomed.index))
    try:
        proxy.target = survivor.port
        resubscribed = await events.wait("subscribed", 2, timeout=20)
        moved_after = time.time() - killed_at
        assert resubscribed[1].was_recovering and resubscribed[1].recovered
        await publishing
        received = await events.wait("publication", len(acknowledged), timeout=20)
        offsets = [p.pub.offset for p in received]
        assert offsets == sorted(acknowledged), "every acknowledged publication exactly once, in order"
        print(f"\nclient served by another node {moved_after:.2f} s after kill -9")

        # The dead node's other client leaves the presence, and the node the list of nodes, once the node times
        # out (3 s here; on Redis a presence entry also expires on its own after cluster_presence_ttl, 3 s here).
        deadline = time.time() + 15
        while time.time() < deadline:
            users = {c.user for c in api.presence(PresenceRequest(channel=channel)).presence.values()}
            nodes = len(api.info(InfoRequest()).nodes)
            if users == {"traveller"} and nodes == NODES - 1:
                break
            await asyncio.sleep(0.25)
        assert users == {"traveller"}
        assert nodes == NODES - 1

        await client.disconnect()
        proxy.close()
        bystander_task = asyncio.ensure_future(bystander.disconnect())
        await asyncio.wait([bystander_task], timeout=2)
    finally:
        # The next tests need every node, whatever happened here.
        cluster.script("restart", str(doomed.index))


async def test_chat_sent_through_one_node_is_read_and_recovered_through_others(cluster, codec):
    ann_id, bo_id = f"cl-ann-{codec.name}", f"cl-bo-{codec.name}"
    trip_mates(cluster.nodes[2], f"cl-host-{codec.name}", ann_id, bo_id)
    ann, _ = await client_on(cluster.nodes[0], ann_id, codec)
    chat = (await call(ann, codec, "chat.create", {"members": [bo_id]}))["chat"]["id"]
    bo, _ = await client_on(cluster.nodes[1], bo_id, codec)
    # The chat created on node 1 is known on node 2: opening it again answers the same one.
    assert (await call(bo, codec, "chat.create", {"members": [ann_id]}))["chat"]["id"] == chat
    _, bo_events = await subscribed(bo, f"chat:{chat}", recoverable=True)
    for text in ["one", "two"]:
        await call(ann, codec, "chat.send", {"chat": chat, "text": text, "client_message_id": text})
    live = await bo_events.wait("publication", 2, timeout=10)
    assert [(p.pub.offset, codec.into(p.pub.data)["text"]) for p in live] == [(1, "one"), (2, "two")]
    await bo.disconnect()
    for text in ["three", "four"]:
        await call(ann, codec, "chat.send", {"chat": chat, "text": text, "client_message_id": text})
    epoch = cluster.nodes[1].api().history(HistoryRequest(channel=f"chat:{chat}", limit=0)).epoch

    again, _ = await client_on(cluster.nodes[2], bo_id, codec)
    history = await chat_history(again, codec, chat)
    assert [m["text"] for m in history] == ["one", "two", "three", "four"]

    async def get_state(_channel):
        return StreamPosition(offset=2, epoch=epoch)

    events = Events()
    sub = again.new_subscription(f"chat:{chat}", SubEvents(events), get_state=get_state)
    await sub.subscribe()
    assert (await events.wait("subscribed", timeout=10))[0].recovered
    recovered = await events.wait("publication", 2, timeout=10)
    assert [(p.pub.offset, codec.into(p.pub.data)["text"]) for p in recovered] == [(3, "three"), (4, "four")]
    summary = (await call(again, codec, "chat.list", {}))["chats"]
    assert [c["unread"] for c in summary if c["id"] == chat] == [4]
    for client in (ann, again):
        await client.disconnect()


async def test_nearby_between_travellers_on_different_nodes(cluster, codec):
    watcher, walker = f"cl-near-a-{codec.name}", f"cl-near-b-{codec.name}"
    lat = 45.285 if codec.protobuf else 45.29
    alice, _ = await client_on(cluster.nodes[0], watcher, codec)
    bob, _ = await client_on(cluster.nodes[1], walker, codec)
    events = Events()
    sub = alice.new_subscription(f"nearby:#{watcher}", SubEvents(events), data=codec.out({"radius": 300, "limit": 10}))
    await sub.subscribe()
    await events.wait("subscribed", timeout=10)
    await alice.rpc("location.update", codec.out({"lat": lat, "lon": 6.58}))
    await bob.rpc("location.update", codec.out({"lat": lat + 0.001, "lon": 6.58}))
    entered = [e for p in await events.wait("publication", timeout=10) for e in codec.into(p.pub.data)["events"]]
    assert [(e["type"], e["user"]) for e in entered] == [("enter", walker)]
    assert 100 < entered[0]["distance"] < 125
    # Visibility set on node 2 applies to the watcher on node 1.
    await bob.rpc("location.visibility", codec.out({"mode": "nobody"}))
    deadline = time.time() + 10
    left = []
    while not left and time.time() < deadline:
        publications = await events.wait("publication", len(events.of("publication")) + 1, timeout=10)
        left = [e for e in codec.into(publications[-1].pub.data)["events"] if e["type"] == "leave"]
    assert [e["user"] for e in left] == [walker]
    await bob.rpc("location.visibility", codec.out({"mode": "everyone"}))
    for client in (alice, bob):
        await client.disconnect()


async def test_killed_node_loses_no_acknowledged_chat_message(cluster, codec):
    sender_id, reader_id = f"cl-kill-ann-{codec.name}", f"cl-kill-bo-{codec.name}"
    trip_mates(cluster.nodes[0], f"cl-kill-host-{codec.name}", sender_id, reader_id)
    doomed, survivor = cluster.nodes[1], cluster.nodes[2]
    proxy = SwitchingProxy(doomed.port)
    proxy_port = await proxy.start()
    sender, _ = await client_on(doomed, sender_id, codec, address=f"ws://127.0.0.1:{proxy_port}/connection/websocket")
    chat = (await call(sender, codec, "chat.create", {"members": [reader_id]}))["chat"]["id"]
    reader, _ = await client_on(survivor, reader_id, codec)
    _, reader_events = await subscribed(reader, f"chat:{chat}")

    acknowledged = {}
    total = 300
    killed = []

    async def killer():
        while len(acknowledged) < 100:
            await asyncio.sleep(0.005)
        cluster.script("kill", str(doomed.index))
        killed.append(doomed.index)
        proxy.target = survivor.port

    kill_task = asyncio.create_task(killer())
    try:
        await send_through_a_kill(sender, reader, reader_events, codec, chat, acknowledged, total, kill_task)
    finally:
        kill_task.cancel()
        proxy.close()
        # The next tests need every node, whatever happened here.
        if killed:
            cluster.script("restart", str(doomed.index))


async def send_through_a_kill(sender, reader, reader_events, codec, chat, acknowledged, total, kill_task):
    """Sends `total` chat messages, each retried with its client id until acknowledged, while `kill_task`
    kills the sender's node; then checks that the reader has each message once, in order."""
    deadline = time.time() + 60
    for index in range(total):
        message_id = f"m-{index}"
        # As an app does: the same client id until the hub acknowledges it, across the reconnect.
        while time.time() < deadline:
            try:
                reply = await call(sender, codec, "chat.send", {"chat": chat, "text": f"message {index}", "client_message_id": message_id}, timeout=2)
                acknowledged[message_id] = reply["offset"]
                break
            except Exception:
                await asyncio.sleep(0.1)
    await kill_task
    assert len(acknowledged) == total, "every message acknowledged in the end"
    history = await chat_history(reader, codec, chat)
    ids = [m["client_message_id"] for m in history]
    assert len(ids) == len(set(ids)) == total, "no message twice, none lost"
    assert {m["client_message_id"]: m["offset"] for m in history} == acknowledged
    assert [m["offset"] for m in history] == list(range(1, total + 1))
    live = await reader_events.wait("publication", total, timeout=20)
    assert [p.pub.offset for p in live] == list(range(1, total + 1)), "the reader on a surviving node got each message once, in order"
    for client in (sender, reader):
        try:
            await asyncio.wait_for(client.disconnect(), 5)
        except Exception:
            pass


async def test_crash_collected_through_three_nodes_keeps_one_draft_and_one_report(cluster, codec):
    owner = f"cl-driver-{codec.name}"
    first, second, third = cluster.nodes
    detected = server_api(first, "crash_detected", {"user": owner, "lat": 47.4979, "lon": 19.0402, "ts": 1763800000000})
    crash = detected["id"]
    tablet, _ = await client_on(third, owner, codec)
    live = Events()
    await tablet.new_subscription(f"crash:{crash}", SubEvents(live)).subscribe()
    await live.wait("subscribed")
    phone, _ = await client_on(second, owner, codec)
    await call(phone, codec, "crash.update", {"crash": crash, "note": "Slid on ice"})
    # The photo is uploaded to one node and its bytes are served by another.
    token = second.token(owner)
    status, body = crash_http(second, "POST", f"/api/crash/{crash}/photos/crash_scene?name=scene.png", token, fixture("scene.png"))
    assert status == 201, body
    photo = json.loads(body)["id"]
    status, served = crash_http(first, "GET", f"/api/crash/{crash}/photos/{photo}", token)
    assert status == 200 and served == fixture("scene.png")
    reported = await call(phone, codec, "crash.report", {"crash": crash})
    changes = [codec.into(p.pub.data)["type"] for p in await live.wait("publication", count=3)]
    assert changes == ["crash.updated", "photo.added", "report.created"]
    status, pdf = crash_http(third, "GET", reported["report"], token)
    assert status == 200 and pdf.startswith(b"%PDF-") and "Slid on ice" in poppler("pdftotext", pdf)
    listed = (await call(tablet, codec, "crash.list", {}))["crashes"]
    assert [(c["id"], c["status"]) for c in listed] == [(crash, "report")]
    for client in (tablet, phone):
        await client.disconnect()


async def test_a_form_edited_through_two_nodes_numbers_every_change_once(cluster, codec):
    owner, mate = f"cl-inspector-{codec.name}", f"cl-mate-{codec.name}"
    first, second, third = cluster.nodes
    # A schema stored through one node is used through another.
    schema = {"id": f"cl-tally-{codec.name}", "title": "Tally", "sections": [
        {"key": "counts", "title": "Counts", "fields": [{"key": f"count{n}", "header": f"Count {n}", "type": "int"} for n in range(8)]}]}
    server_api(first, "form_schema_put", schema)
    ann, _ = await client_on(second, owner, codec)
    doc = (await call(ann, codec, "form.create", {"schema": schema["id"]}))["id"]
    await call(ann, codec, "form.share", {"doc": doc, "user": mate})
    bo, _ = await client_on(third, mate, codec)
    watcher, _ = await client_on(first, owner, codec)
    live = Events()
    await watcher.new_subscription(f"form:{doc}", SubEvents(live)).subscribe()
    await live.wait("subscribed")
    # Sixteen edits of eight fields at once through two nodes: the document's lock is the
    # cluster's, so each edit gets its own version and the pushes come in version order.
    edits = [call(client, codec, "form.set", {"doc": doc, "key": f"count{n}", "value": n, "base_version": 0})
             for n in range(8) for client in (ann, bo)]
    answers = await asyncio.gather(*edits, return_exceptions=True)
    accepted = [a for a in answers if isinstance(a, dict)]
    refused = [a for a in answers if not isinstance(a, dict)]
    assert len(accepted) == 8 and all(getattr(r, "code", None) == 108 for r in refused), answers
    assert sorted(a["version"] for a in accepted) == list(range(1, 9))
    pushed = [codec.into(p.pub.data)["version"] for p in await live.wait("publication", count=8)]
    assert pushed == list(range(1, 9))
    state = await call(watcher, codec, "form.get", {"doc": doc})
    assert state["version"] == 8 and state["values"] == {f"count{n}": n for n in range(8)}
    for client in (ann, bo, watcher):
        await client.disconnect()


async def near_ids(client, codec):
    near = await call(client, codec, "cars.near", {"lat": 47.2654, "lon": 11.3927, "radius": 3000, "limit": 50})
    return {car["id"] for car in near["cars"]}


async def until(predicate, timeout=5):
    deadline = time.time() + timeout
    while not await predicate():
        assert time.time() < deadline, "not within the time"
        await asyncio.sleep(0.05)


async def test_a_car_rented_through_one_node_is_gone_from_every_node(cluster, codec):
    first, second, third = cluster.nodes
    car = f"cl-car-{codec.name}"
    stored = server_api(first, "car_upsert", {"id": car, "make": "Fiat", "model": "500", "year": 2023, "seats": 4,
                                              "price_per_day_cents": 3900, "lat": 47.2660, "lon": 11.3990})["car"]
    watcher, _ = await client_on(third, f"cl-watcher-{codec.name}", codec)
    cell = Events()
    await watcher.new_subscription(stored["cell"], SubEvents(cell)).subscribe()
    await cell.wait("subscribed")
    await until(lambda: near_ids_contains(watcher, codec, car))
    # Eight people on two nodes want the car at once: the shared database lets exactly one have it.
    racers = [(await client_on(node, f"cl-racer-{codec.name}-{i}", codec))[0] for i, node in enumerate([first, second] * 4)]

    async def attempt(client):
        try:
            return await call(client, codec, "rental.start", {"car": car})
        except Exception as error:
            return getattr(error, "code", error)

    outcomes = await asyncio.gather(*(attempt(client) for client in racers))
    won = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    assert len(won) == 1 and [o for o in outcomes if not isinstance(o, dict)] == [108] * 7, outcomes
    gone = [codec.into(p.pub.data) for p in await cell.wait("publication")]
    assert {"type": "car_gone", "id": car, "reason": "rented"} in gone
    await until(lambda: near_ids_lacks(watcher, codec, car))
    # The winner returns it through the third node; every node offers it again.
    winner = racers[outcomes.index(won[0])]
    await call(winner, codec, "rental.stop", {"rental": won[0]["rental"]["id"], "lat": 47.2661, "lon": 11.3991})
    racer_on_first = racers[0]
    await until(lambda: near_ids_contains(racer_on_first, codec, car))
    for client in (watcher, *racers):
        await client.disconnect()


async def near_ids_contains(client, codec, car):
    return car in await near_ids(client, codec)


async def near_ids_lacks(client, codec, car):
    return car not in await near_ids(client, codec)


async def test_a_fence_stored_or_deleted_through_one_node_is_listed_so_by_the_next_request_on_any_node(cluster):
    """Read-your-writes for fences: no waiting for the change notice to reach the other nodes."""
    trip = trip_mates(cluster.nodes[0], "cl-fence-ryw-h", "cl-fence-ryw-t")
    for attempt in range(5):
        made = server_api(cluster.nodes[attempt % 3], "fence_create",
                          {"trip": trip, "name": f"Point {attempt}", "circle": {"lat": 45.3, "lon": 6.6, "radius": 100}})["fence"]
        other = cluster.nodes[(attempt + 1) % 3]
        assert made["id"] in [f["id"] for f in server_api(other, "fence_list", {"trip": trip})["fences"]], f"attempt {attempt}"
        server_api(other, "fence_delete", {"trip": trip, "fence": made["id"]})
        third = cluster.nodes[(attempt + 2) % 3]
        assert made["id"] not in [f["id"] for f in server_api(third, "fence_list", {"trip": trip})["fences"]], f"attempt {attempt}"


async def test_a_fence_crossing_is_reported_once_whichever_nodes_carry_the_positions(cluster, codec):
    """A traveller's positions reach the cluster through two nodes (two phones), a late one among
    them; the host on the third hears each crossing once, and the three nodes' outbox workers post
    each event to the trip's webhook once."""
    host, traveller = f"cl-fence-h-{codec.name}", f"cl-fence-t-{codec.name}"
    trip = trip_mates(cluster.nodes[0], host, traveller)
    center = (45.32, 6.61)
    hook = WebhookStandIn()
    server_api(cluster.nodes[1], "fence_webhook_set", {"trip": trip, "url": hook.url, "secret": "cluster-fence-secret"})
    fence = server_api(cluster.nodes[0], "fence_create",
                       {"trip": trip, "name": "Meeting point", "circle": {"lat": center[0], "lon": center[1], "radius": 200}})["fence"]
    # Every node watches the fence once the change reached it, and agrees on the trip's owner once it
    # has read the registry since the last node started.
    deadline = time.time() + 10
    while True:
        lists = [server_api(node, "fence_list", {"trip": trip}) for node in cluster.nodes]
        if all(answer["fences"] == [fence] for answer in lists) and len({answer["owner"] for answer in lists}) == 1:
            break
        assert time.time() < deadline, f"the nodes do not agree on the fences: {lists}"
        await asyncio.sleep(0.05)
    hana, _ = await client_on(cluster.nodes[2], host, codec)
    sub, events = await subscribed(hana, f"fences:{trip}")
    phones = [(await client_on(cluster.nodes[i], traveller, codec))[0] for i in (0, 1)]
    start = int(time.time() * 1000)

    async def at(phone, metres, step):
        await call(phones[phone], codec, "location.update",
                   {"lat": center[0] + metres / 111_195, "lon": center[1], "ts": start + step * 1000})

    async def crossing(count):
        return [(codec.into(p.pub.data)["event"], codec.into(p.pub.data)["ts"] - start)
                for p in await events.wait("publication", count=count, timeout=15)]

    # The two phones' positions reach the trip's owner over two nodes, so they may arrive in another order
    # than they were sent; each step waits for the crossing before the next. Outside, then inside (phone 2).
    await at(0, 450, 0)
    await at(1, 100, 2)
    assert await crossing(1) == [("enter", 2000)]
    # A late position from before (phone 1: ignored), jitter 17 m outside the edge, then outside.
    await at(0, 600, 1)
    await at(0, 217, 3)
    await at(1, 700, 4)
    assert await crossing(2) == [("enter", 2000), ("exit", 4000)]
    await at(0, 50, 5)
    assert await crossing(3) == [("enter", 2000), ("exit", 4000), ("enter", 5000)]
    await at(1, 900, 6)
    assert await crossing(4) == [("enter", 2000), ("exit", 4000), ("enter", 5000), ("exit", 6000)]
    publications = events.of("publication")
    assert len({p.pub.offset for p in publications}) == 4
    # The three nodes' outbox workers post each event once, signed.
    ids = [codec.into(p.pub.data)["id"] for p in publications]
    deadline = time.time() + 20
    while sorted(hook.ids()) != sorted(ids):
        assert time.time() < deadline, f"the webhook got {hook.ids()}, expected {ids}"
        await asyncio.sleep(0.1)
    assert hook.verified("cluster-fence-secret")
    hook.stop()
    for client in [hana, *phones]:
        await client.disconnect()


async def test_a_broadcasts_notifications_are_sent_once_by_the_nodes_workers(cluster, codec):
    nodes = cluster.nodes
    host = f"push-host-{codec.name}"
    travellers = [f"push-{codec.name}-{n}" for n in range(12)]
    trip = trip_mates(nodes[0], host, *travellers)
    tokens = {}
    for n, user in enumerate(travellers):
        client, _ = await client_on(nodes[n % NODES], user, codec)
        tokens[user] = f"{0xc1a5 * 1000 + n + (0 if codec.name == 'json' else 500):064x}"
        await call(client, codec, "device.register", {"platform": "apns", "token": tokens[user]})
        await client.disconnect()
    sender, _ = await client_on(nodes[2], host, codec)
    for text in ["one", "two", "three"]:
        await call(sender, codec, "broadcast.send", {"trip": trip, "text": text})
    await sender.disconnect()
    wanted = set(tokens.values())
    deadline = time.time() + 30
    while time.time() < deadline:
        mine = [push for push in accepted(cluster.standin_folder) if push["token"] in wanted]
        if len(mine) >= len(travellers) * 3:
            break
        await asyncio.sleep(0.2)
    # Every notification is recorded as sent (the outbox is shared): none is left for a second worker.
    for node in nodes:
        await metric_becomes(node, "gondola_push_outbox_depth", 0)
    by_token = collections.defaultdict(list)
    for push in accepted(cluster.standin_folder):
        if push["token"] in wanted:
            by_token[push["token"]].append(text_of(push))
    for user, token in tokens.items():
        assert sorted(by_token[token]) == sorted(f"{host}: {text}" for text in ["one", "two", "three"]), user


def own_backend_token(user, name):
    """A connection token as an app's own backend mints it: HS256 with the shared secret,
    the user's display name in `info`."""
    return jwt.encode({"sub": user, "info": {"name": name}}, SECRET, algorithm="HS256")


async def test_a_write_through_one_node_is_read_at_once_through_every_other(cluster, codec):
    """Read-your-writes behind a load balancer: each write goes to one node and the very next
    request (no pause) to another, which must not refuse on what its memory has not yet heard."""
    first, second, third = cluster.nodes
    now = int(time.time() * 1000)
    for round_ in range(5):
        tag = f"{codec.name}-{round_}"
        host, mate = f"rw-host-{tag}", f"rw-mate-{tag}"
        # A trip created through one node takes members through another at once.
        trip = server_api(first, "trip_create", {"name": "RYW", "starts_at": now - 3_600_000, "ends_at": now + 3_600_000,
                                                 "hosts": [host]})["trip"]["id"]
        server_api(second, "trip_add_member", {"trip": trip, "user": mate, "role": "traveller"})
        # The member subscribes to the trip's channel through the third node.
        member, _ = await client_on(third, mate, codec)
        await subscribed(member, f"trip:{trip}")
        # A chat created through one node is subscribed through another (103 would be final for the SDK).
        creator, _ = await client_on(first, host, codec)
        chat = (await call(creator, codec, "chat.create", {"members": [mate]}))["chat"]["id"]
        await subscribed(member, f"chat:{chat}")
        # Staff named through one node broadcast through another.
        server_api(first, "user_set_staff", {"user": host, "staff": True})
        staff, _ = await client_on(second, host, codec)
        await call(staff, codec, "broadcast.send", {"scope": "all", "text": f"hello {tag}"})
        # A user who only connected (with a name in the token's info) is known everywhere at once.
        bob = f"rw-bob-{tag}"
        events = Events()
        newcomer = Client(first.ws_url, events=ClientEvents(events), token=own_backend_token(bob, f"Bob {round_}"), **codec.kwargs)
        await newcomer.connect()
        await events.wait("connected", timeout=10)
        asker, _ = await client_on(third, f"rw-alice-{tag}", codec)
        assert (await call(asker, codec, "friend.add", {"user": bob}))["friends"] is False
        assert (await call(asker, codec, "profile.get", {"user": bob}))["name"] == f"Bob {round_}"
        # Forms: a code table, a schema and an assessment stored through one node are used through another.
        table = f"rw-colours-{tag}"
        server_api(first, "form_code_table_put", {"name": table, "values": [{"code": "r", "label": "Red"}]})
        assert (await call(asker, codec, "form.code_table", {"name": table}))["name"] == table
        schema = {"id": f"rw-form-{tag}", "title": "RYW", "sections": [
            {"key": "main", "title": "Main", "fields": [{"key": "colour", "header": "Colour", "type": "dropdown", "code_table": table}]}]}
        server_api(second, "form_schema_put", schema)
        doc = (await call(asker, codec, "form.create", {"schema": schema["id"]}))["id"]
        assert (await call(asker, codec, "form.set", {"doc": doc, "key": "colour", "value": "r", "base_version": 0}))["version"] == 1
        assessment = {"id": f"rw-check-{tag}", "title": "Check", "display_name": "Check", "questions": [
            {"id": "q1", "title": "How are you?", "options": [{"title": "Fine", "value": 0}, {"title": "Tired", "value": 1}]}]}
        server_api(first, "assessment_put", assessment)
        server_api(third, "assessment_assign", {"assessment": assessment["id"], "user": bob})
        # A car stored through one node is rented through another.
        car = f"rw-car-{tag}"
        server_api(second, "car_upsert", {"id": car, "make": "Fiat", "model": "Panda", "year": 2022, "seats": 4,
                                          "price_per_day_cents": 2900, "lat": 47.2660, "lon": 11.3990})
        renter, _ = await client_on(first, f"rw-renter-{tag}", codec)
        rental = (await call(renter, codec, "rental.start", {"car": car}))["rental"]
        await call(renter, codec, "rental.stop", {"rental": rental["id"], "lat": 47.2661, "lon": 11.3991})
        for client in (member, creator, staff, newcomer, asker, renter):
            await client.disconnect()


def base_url(node):
    return f"http://127.0.0.1:{node.port}"


def publication_data(message, protobuf):
    data = message["push"]["pub"]["data"]
    return json.loads(base64.b64decode(data)) if protobuf else data


@pytest.mark.parametrize("sse", [False, True], ids=["http_stream", "sse"])
async def test_emulation_requests_reach_the_session_through_any_node(cluster, codec, sse):
    """A stream opened on the first node; its commands posted to the second and third nodes'
    /emulation reach the session over the engine, in order, and their replies come on the stream;
    an unknown session or node is answered 404 naming it, and once the stream is gone its session is too."""
    if sse and codec.protobuf:
        pytest.skip("SSE carries JSON only")
    holder, second, third = cluster.nodes
    tag = f"{codec.name}-{'sse' if sse else 'stream'}"
    channel = f"room:emulated-{tag}"
    stream = await HTTPStream.open(base_url(holder), [{"id": 1, "connect": {"token": holder.token(f"emu-{tag}")}}],
                                   protobuf=codec.protobuf, sse=sse)
    connect = await stream.connected()
    assert connect["node"] and len(connect["session"]) == 32
    status, _ = await emulate(base_url(second), stream.node, stream.session,
                              [{"id": 2, "subscribe": {"channel": channel}}, {"id": 3, "presence_stats": {"channel": channel}}],
                              codec.protobuf)
    assert status == 204
    replies = await stream.until(lambda message: message.get("id") == 3)
    assert [reply["id"] for reply in replies] == [2, 3] and "subscribe" in replies[0]
    assert replies[1]["presence_stats"]["num_clients"] == 1
    server_api(third, "publish", {"channel": channel, "data": {"via": "third"}})
    messages = await stream.until(lambda message: "pub" in message.get("push", {}))
    assert publication_data(messages[-1], codec.protobuf) == {"via": "third"}
    status, _ = await emulate(base_url(third), stream.node, stream.session, [{"id": 4, "rpc": {"method": "server.time"}}], codec.protobuf)
    assert status == 204
    assert "rpc" in (await stream.until(lambda message: message.get("id") == 4))[-1]

    status, body = await emulate(base_url(second), stream.node, "not-a-session", [{}], codec.protobuf)
    assert status == 404 and "no open session" in body
    status, body = await emulate(base_url(third), "no-such-node", stream.session, [{}], codec.protobuf)
    assert status == 404 and "no-such-node" in body
    await stream.close()

    async def gone():
        return (await emulate(base_url(second), stream.node, stream.session, [{}], codec.protobuf))[0] == 404
    await until(gone)


async def test_payloads_cross_nodes_byte_for_byte(cluster):
    """A binary publication from a Protobuf client on one node and a spelled JSON one from
    another node's server API reach every node's subscribers, and every node's history, as sent."""
    channel = "room:cluster-bytes"
    protobuf = Codec("protobuf")
    readers = [await client_on(node, f"bytes{node.index}", protobuf) for node in cluster.nodes]
    subs = [await subscribed(client, channel, recoverable=True) for client, _ in readers]
    await subs[0][0].publish(BINARY)
    post_text(cluster.nodes[1], "publish", '{"channel": "%s", "data": %s}' % (channel, SPELLED))
    expected = [BINARY, SPELLED.encode()]
    for sub, events in subs:
        assert [p.pub.data for p in await events.wait("publication", 2, timeout=10)] == expected
        assert [p.data for p in (await sub.history(limit=10)).publications] == expected
    for client, _ in readers:
        await client.disconnect()


def redis_shard_of(channel, count):
    """The shard (0-based) the Redis engine keeps a channel on: Jump consistent hash of FNV-1a 64."""
    mask = (1 << 64) - 1
    key = 14695981039346656037
    for byte in channel.encode():
        key = ((key ^ byte) * 1099511628211) & mask
    bucket, following = -1, 0
    while following < count:
        bucket = following
        key = (key * 2862933555777941757 + 1) & mask
        following = int((bucket + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return bucket


def redis_slot(key):
    """A Redis Cluster key's slot: CRC16/XMODEM (binascii's crc_hqx from 0) of its hash tag, modulo 16384."""
    data = key.encode()
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1:end]
    return binascii.crc_hqx(data, 0) % 16384


def redis_cluster_partition_tags(count):
    """The partitions' hash tags, as Gondola picks them: the first number whose slot falls in each of `count` even ranges."""
    tags, candidate = [None] * count, 0
    while None in tags:
        index = redis_slot(str(candidate)) * count // 16384
        if tags[index] is None:
            tags[index] = str(candidate)
        candidate += 1
    return tags


def redis_master_of(channel, engine):
    """The shard (0-based) whose master serves a channel: its shard, or on a Redis Cluster the master whose
    range of slots (as Scripts/cluster splits them) holds its partition's slot."""
    if engine != "rediscluster":
        return redis_shard_of(channel, REDIS_SHARDS)
    tag = redis_cluster_partition_tags(REDIS_CLUSTER_PARTITIONS)[redis_shard_of(channel, REDIS_CLUSTER_PARTITIONS)]
    slot = redis_slot("{" + tag + "}")
    return next(k for k in range(REDIS_CLUSTER_MASTERS) if k * 16384 // REDIS_CLUSTER_MASTERS <= slot < (k + 1) * 16384 // REDIS_CLUSTER_MASTERS)


def health(node):
    with urllib.request.urlopen(f"http://127.0.0.1:{node.port}/health", timeout=5) as response:
        return json.loads(response.read())


async def health_becomes(node, status, timeout=15):
    deadline = time.time() + timeout
    while (current := health(node))["status"] != status:
        assert time.time() < deadline, f"/health stayed {current}"
        await asyncio.sleep(0.1)
    return current


async def test_a_stopped_redis_shard_answers_a_temporary_error_and_the_sdk_subscribes_once_it_is_back(cluster, codec):
    if cluster.engine != "redis":
        pytest.skip("a Redis shard's outage concerns the Redis engine")
    names = [f"room:shard-{codec.name}-{n}" for n in range(40)]
    on_first = next(name for name in names if redis_shard_of(name, REDIS_SHARDS) == 0)
    on_second = next(name for name in names if redis_shard_of(name, REDIS_SHARDS) == 1)
    on_first_late = [name for name in names if redis_shard_of(name, REDIS_SHARDS) == 0][1]
    node = cluster.nodes[0]
    client, client_events = await client_on(node, f"shard-watcher-{codec.name}", codec)
    first_sub, first_events = await subscribed(client, on_first, recoverable=True)
    _, second_events = await subscribed(client, on_second, recoverable=True)
    api = node.api()
    api.publish(PublishRequest(channel=on_first, data={"n": 1}))
    await first_events.wait("publication", 1, timeout=10)

    cluster.script("redis-stop", "1")
    try:
        degraded = await health_becomes(node, "degraded")
        assert [part["up"] for part in degraded["parts"]] == [True, False, True], "PostgreSQL's bus, shard 1 down, shard 2 up"
        # The other shard's channels go on; the stopped shard's answer a temporary error (100) at once,
        # and nothing is delivered.
        api.publish(PublishRequest(channel=on_second, data={"n": 2}))
        await second_events.wait("publication", 1, timeout=10)
        refused = post(f"{node.api_url}/publish", {"channel": on_first, "data": {"n": 3}}, {"X-API-Key": API_KEY})
        assert refused["error"]["code"] == 100 and "Redis" in refused["error"]["message"], refused
        # A subscription asked for during the outage is refused with that temporary error, which the SDK retries.
        late_events = Events()
        late = client.new_subscription(on_first_late, SubEvents(late_events), recoverable=True)
        await late.subscribe()
        await late_events.wait("sub_error", 1, timeout=10)
        assert late_events.of("sub_error")[0].error.temporary
        # The server's failures never count toward the consecutive-errors limit (3509): 25 of them in a row.
        for n in range(25):
            with pytest.raises(ReplyError) as publish_error:
                await first_sub.publish(codec.out({"refused": n}))
            assert publish_error.value.code == 100 and publish_error.value.temporary
        assert client.state == ClientState.CONNECTED, "clients stay connected through the outage"
    finally:
        await asyncio.to_thread(cluster.script, "redis-start", "1")
        started_at = time.time()
    await health_becomes(node, "ok")
    # Back: the node asks the subscribers of the shard's channels to subscribe again and recover (2500); the
    # restarted Redis kept no stream, so the subscription is told it could not recover (a new epoch) instead
    # of being handed a wrong one. The other shard's subscription and the connection are left alone.
    resubscribed = await first_events.wait("subscribed", 2, timeout=20)
    await late_events.wait("subscribed", 1, timeout=20)
    print(f"\nRedis shard back: every subscription subscribed again {time.time() - started_at:.2f} s after the shard answered")
    assert resubscribed[1].was_recovering and not resubscribed[1].recovered
    assert len(second_events.of("subscribed")) == 1 and not client_events.of("disconnected")
    api.publish(PublishRequest(channel=on_first, data={"n": 4}))
    received = await first_events.wait("publication", 2, timeout=10)
    assert codec.into(received[-1].pub.data) == {"n": 4}
    assert len(first_events.of("publication")) == 2, "the refused publications were never delivered"
    # The subscription asked for during the outage went through once the shard was back.
    assert late.state == SubscriptionState.SUBSCRIBED
    await client.disconnect()


async def test_a_silent_redis_shard_answers_a_temporary_error_within_seconds_and_health_and_the_log_say_so(cluster):
    """A shard that stops answering without closing its sockets (SIGSTOP: what a partition or a
    blackholing firewall looks like from the node): a publish to its channel is answered with the
    temporary 100 naming the shard within seconds instead of waiting for the link, /health names the
    part down, the log says why, and all is well again once the shard answers."""
    if cluster.engine != "redis":
        pytest.skip("a silent Redis shard concerns the Redis engine")
    names = [f"room:silent-{n}" for n in range(40)]
    on_first = next(name for name in names if redis_shard_of(name, REDIS_SHARDS) == 0)
    on_second = next(name for name in names if redis_shard_of(name, REDIS_SHARDS) == 1)
    node = cluster.nodes[0]
    shard_port = open(os.path.join(cluster.folder, "redis-1", "port")).read().strip()
    cluster.script("redis-pause", "1")
    try:
        started = time.time()
        answer = await asyncio.to_thread(post, f"{node.api_url}/publish", {"channel": on_first, "data": {"n": 1}}, {"X-API-Key": API_KEY})
        waited = time.time() - started
        print(f"\nsilent Redis shard: the publish was answered after {waited:.2f} s")
        assert answer["error"]["code"] == 100 and shard_port in answer["error"]["message"], answer
        degraded = await health_becomes(node, "degraded")
        assert [part["up"] for part in degraded["parts"]] == [True, False, True], degraded
        # The other shard goes on meanwhile.
        assert "error" not in post(f"{node.api_url}/publish", {"channel": on_second, "data": {"n": 2}}, {"X-API-Key": API_KEY})
        log = open(os.path.join(cluster.folder, "node-1.log")).read()
        assert "cluster bus (Redis) down" in log and "no answer within" in log and shard_port in log, log[-3000:]
        assert REDIS_PASSWORD not in log
    finally:
        cluster.script("redis-resume", "1")
    await health_becomes(node, "ok", timeout=30)
    assert "error" not in post(f"{node.api_url}/publish", {"channel": on_first, "data": {"n": 3}}, {"X-API-Key": API_KEY})


async def test_a_silent_postgresql_answers_a_temporary_error_within_its_bound_and_health_and_the_log_say_so(cluster):
    """PostgreSQL frozen with its sessions (SIGSTOP: sockets open, nothing answered, as behind a
    partition): a publish is answered with the temporary 100 once its statement's bound (10 s)
    passes instead of waiting for the link, the bus's connection check closes the silent LISTEN
    connection so /health turns degraded, the log says why, and all is well again once PostgreSQL
    answers."""
    if cluster.engine != "postgres":
        pytest.skip("a silent PostgreSQL bus concerns the PostgreSQL engine")
    node = cluster.nodes[0]
    log_path = os.path.join(cluster.folder, "node-1.log")
    log_before = len(open(log_path).read())
    cluster.script("postgres-pause")
    try:
        started = time.time()
        # The answer comes when the statement's 10 s bound passes: the client waits longer than that.
        answer = await asyncio.to_thread(
            post, f"{node.api_url}/publish", {"channel": "room:silent-postgres", "data": {"n": 1}}, {"X-API-Key": API_KEY}, timeout=30
        )
        waited = time.time() - started
        print(f"\nsilent PostgreSQL: the publish was answered after {waited:.2f} s")
        assert answer["error"]["code"] == 100, answer
        assert waited < 25, waited
        degraded = await health_becomes(node, "degraded", timeout=30)
        assert [part["up"] for part in degraded["parts"]] == [False], degraded
        log = open(log_path).read()[log_before:]
        for line in ("cluster bus write failed", "did not answer within", "PostgreSQL connection check failed", "cluster bus (PostgreSQL) lost"):
            assert line in log, (line, log[-3000:])
    finally:
        cluster.script("postgres-resume")
    await health_becomes(node, "ok", timeout=60)
    assert "error" not in post(f"{node.api_url}/publish", {"channel": "room:silent-postgres", "data": {"n": 2}}, {"X-API-Key": API_KEY})


async def test_a_killed_master_fails_over_and_sdk_subscriptions_come_back(cluster, codec):
    """kill -9 of a shard's master while the server API publishes to one of its channels: publishes are
    refused with the temporary 100 until the Sentinels (or the Redis Cluster) promote the replica, then accepted again. The SDK
    client stays connected (never disconnected): once its node hears the new master the subscription is
    ended with 2500 (insufficient state) and the SDK subscribes again; it is told it could not recover
    (the stream goes on in a new epoch: asynchronous replication may have lost entries the old master
    acknowledged), and receives everything published from then on, in order."""
    if cluster.engine not in ("sentinel", "rediscluster"):
        pytest.skip("a failover concerns Redis behind Sentinel and Redis Cluster")
    names = [f"room:failover-{codec.name}-{n}" for n in range(40)]
    channel = next(name for name in names if redis_master_of(name, cluster.engine) == 0)
    node = cluster.nodes[0]
    client, client_events = await client_on(node, f"failover-watcher-{codec.name}", codec)
    _, events = await subscribed(client, channel, recoverable=True)
    api = node.api()

    acknowledged, refused = [], []  # (n, its stream position); (n, error code, error)
    state = {"killed_at": None, "back_after": None}

    def publish_for(seconds):
        deadline = time.time() + seconds
        n = 0
        while time.time() < deadline and n < 1000:
            try:
                result = api.publish(PublishRequest(channel=channel, data={"n": n}))
                acknowledged.append((n, (result.epoch, result.offset)))
                if state["killed_at"] and state["back_after"] is None and refused:
                    state["back_after"] = time.time() - state["killed_at"]
            except Exception as error:  # cent raises on the error answer: the outage's temporary 100
                refused.append((n, getattr(error, "code", None), str(error)))
            n += 1
            time.sleep(0.02)

    publishing = asyncio.ensure_future(asyncio.to_thread(publish_for, 15.0))
    await events.wait("publication", 20, timeout=10)
    state["killed_at"] = time.time()
    cluster.script("redis-stop", "1")
    try:
        deadline = time.time() + 30
        while state["back_after"] is None:
            assert time.time() < deadline, f"publishing did not work again within 30 s; refused: {refused[-3:]}"
            await asyncio.sleep(0.05)
        resubscribed = await events.wait("subscribed", 2, timeout=30)
        await publishing
        assert client.state == ClientState.CONNECTED and not client_events.of("disconnected"), "the connection stayed up"
    finally:
        # The killed server comes back as the new master's replica, ready for the next failover (in a
        # thread, so that the client keeps answering the node's pings meanwhile).
        await asyncio.to_thread(cluster.script, "redis-start", "1")
    print(f"\n{cluster.engine} failover: publishing accepted again {state['back_after']:.2f} s after kill -9 of the master; "
          f"{len(refused)} publishes refused meanwhile (temporary 100); the subscription came back "
          f"{'recovered' if resubscribed[1].recovered else 'not recovered (a new epoch)'}")
    assert refused and all(code == 100 for _, code, _ in refused), refused[:3]
    assert resubscribed[1].was_recovering and not resubscribed[1].recovered
    assert {ctx.code for ctx in events.of("subscribing")[1:]} == {2500}, "the node asked the subscription to recover"
    # Everything acknowledged past the position the new subscription started from (the new epoch's top
    # when it was read) reaches it, once and in order.
    since = resubscribed[1].stream_position
    later = [n for n, (epoch, offset) in acknowledged if epoch == since.epoch and offset > since.offset]
    deadline = time.time() + 10
    while missing := sorted(set(later) - {codec.into(p.pub.data)["n"] for p in events.of("publication")}):
        assert time.time() < deadline, f"publications acknowledged past the resubscription's position were not received: {missing}"
        await asyncio.sleep(0.05)
    received = [codec.into(p.pub.data)["n"] for p in events.of("publication")]
    assert later and received == sorted(set(received)), "in order, none twice"
    # The new master's stream ends with the last acknowledged publications, in their order.
    history = api.history(HistoryRequest(channel=channel, limit=10, reverse=True)).publications
    assert [p.data["n"] for p in reversed(history)] == [n for n, _ in acknowledged[-10:]]
    assert [p.offset for p in reversed(history)] == [offset for _, (_, offset) in acknowledged[-10:]]
    await client.disconnect()
