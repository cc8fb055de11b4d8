"""Three nodes on one PostgreSQL (started by Scripts/cluster) with the official SDKs:
publications, presence, join/leave, history and recovery across nodes, the server API
acting cluster-wide, and a node killed with -9 while a client is subscribed through it."""
import asyncio
import json
import os
import socket
import subprocess
import tempfile
import time

import pytest
from cent import (Client as ApiClient, DisconnectRequest, HistoryRequest, InfoRequest, PresenceRequest,
                  PresenceStatsRequest, PublishRequest, UnsubscribeRequest)
from centrifuge import Client, ClientState, StreamPosition

from conftest import API_KEY, CONFIG, GONDOLA, SECRET, Endpoint
from helpers import ClientEvents, Events, SubEvents

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Scripts", "cluster")
NODES = 3
# What every node reads; the cluster's script sets the database, port, name and secrets.
NODE_CONFIG = {key: value for key, value in CONFIG.items() if key not in ("token_hmac_secret", "api_key")}
NODE_CONFIG["cluster_node_timeout"] = "3s"


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
    def __init__(self, folder, base_port):
        self.folder = folder
        self.nodes = [Node(i + 1, base_port + i) for i in range(NODES)]
        self.env = dict(os.environ, CLUSTER_BINARY=GONDOLA, GONDOLA_TOKEN_HMAC_SECRET=SECRET, GONDOLA_API_KEY=API_KEY)

    def script(self, *args):
        subprocess.run([SCRIPT, *args, "--folder", self.folder], env=self.env, check=True, timeout=120)


def consecutive_free_ports(count):
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65000:
            continue
        try:
            for port in range(base, base + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no consecutive free ports")


@pytest.fixture(scope="module")
def cluster():
    folder = tempfile.mkdtemp(prefix="gondola-cluster-")
    os.chmod(folder, 0o755)  # PostgreSQL runs as the postgres user and must reach its folder.
    config = os.path.join(folder, "nodes.json")
    with open(config, "w") as f:
        json.dump(NODE_CONFIG, f)
    instance = Cluster(folder, consecutive_free_ports(NODES))
    try:
        instance.script("start", str(NODES), "--port", str(instance.nodes[0].port), "--config", config, "--no-build")
        yield instance
    finally:
        instance.script("stop")


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
    cluster.nodes[1].api().disconnect(DisconnectRequest(user=user))
    assert (await client_events.wait("disconnected", timeout=10))[0].code == 3503
    assert client.state == ClientState.DISCONNECTED


class SwitchingProxy:
    """A TCP forwarder standing in for a load balancer: new connections go to `target`,
    which the test changes when a node dies."""

    def __init__(self, target):
        self.target = target
        self.server = None

    async def start(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def handle(self, reader, writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def pipe(source, sink):
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    def close(self):
        self.server.close()


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
    await asyncio.sleep(1.0)
    killed_at = time.time()
    cluster.script("kill", str(doomed.index))
    proxy.target = survivor.port
    resubscribed = await events.wait("subscribed", 2, timeout=20)
    moved_after = time.time() - killed_at
    assert resubscribed[1].was_recovering and resubscribed[1].recovered
    await publishing
    received = await events.wait("publication", len(acknowledged), timeout=20)
    offsets = [p.pub.offset for p in received]
    assert offsets == sorted(acknowledged), "every acknowledged publication exactly once, in order"
    print(f"\nclient served by another node {moved_after:.2f} s after kill -9")

    # The dead node's other client leaves the presence once the node times out (3 s here).
    deadline = time.time() + 10
    while time.time() < deadline:
        users = {c.user for c in api.presence(PresenceRequest(channel=channel)).presence.values()}
        if users == {"traveller"}:
            break
        await asyncio.sleep(0.25)
    assert users == {"traveller"}
    assert len(api.info(InfoRequest()).nodes) == NODES - 1

    await client.disconnect()
    proxy.close()
    bystander_task = asyncio.ensure_future(bystander.disconnect())
    await asyncio.wait([bystander_task], timeout=2)
    cluster.script("restart", str(doomed.index))
