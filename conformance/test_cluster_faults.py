"""Network faults between three nodes and Redis, in their short form: each node reaches Redis
through its own `FaultProxy` (`Scripts/cluster`'s FOLDER/node-I.env reroutes it), and the official
SDK's clients and a server API publisher work through the fault while `History` records what was
acknowledged and received. Seeded like test_faults.py (`FAULTS_SEED`)."""
import asyncio
import json
import os
import tempfile
import time
import urllib.request

import pytest
from centrifuge import Client

from conftest import API_KEY, CONFIG
from fault_proxy import FaultProxy
from helpers import ClientEvents, Events, post
from history import History
from test_cluster import NODES, REDIS_PASSWORD, Cluster
from test_faults import DURABLE, Recorder, judge, seeded, subscribed_clients, until

CLIENTS = 200
PRESENCE_TTL = 3.0


@pytest.fixture(scope="module")
def cut():
    """Three nodes on one Redis (no PostgreSQL), each through a proxy of its own."""
    generator, _ = seeded("cluster-faults")
    folder = tempfile.mkdtemp(prefix="gondola-cluster-faults-")
    config = os.path.join(folder, "nodes.json")
    with open(config, "w") as f:
        json.dump({"ping_interval": "2s", "pong_timeout": "2s", "namespaces": CONFIG["namespaces"] + [DURABLE],
                   "cluster_presence_ttl": f"{PRESENCE_TTL:.0f}s", "cluster_node_timeout": "3s"}, f)
    instance = Cluster(folder, "redis")
    instance.proxies = []
    try:
        instance.script("start", str(NODES), "--port", str(instance.nodes[0].port), "--config", config, "--no-build", "--engine", "redis",
                        "--no-postgres", "--redis-shards", "1", "--redis-password", REDIS_PASSWORD)
        redis_port = int(open(os.path.join(folder, "redis-1", "port")).read())
        through_proxies(instance, ("127.0.0.1", redis_port), generator,
                        lambda proxy: f"GONDOLA_REDIS_ADDRESSES=redis://:{REDIS_PASSWORD}@{proxy.address}")
        yield instance
    finally:
        stop(instance)


def through_proxies(cluster, target, generator, setting):
    """Restarts each node of `cluster` reaching `target` through a proxy of its own; `setting`
    (a proxy → `KEY=value`) is what points the node at it."""
    for node in cluster.nodes:
        proxy = FaultProxy(target, seed=generator.random())
        cluster.proxies.append(proxy)
        with open(os.path.join(cluster.folder, f"node-{node.index}.env"), "w") as f:
            f.write(setting(proxy) + "\n")
        cluster.script("kill", str(node.index))
        cluster.script("restart", str(node.index))


def stop(cluster):
    cluster.script("stop")
    for proxy in cluster.proxies:
        proxy.close()


def publish(node, channel, data):
    """A server API publish through `node`: its result, or its error; and how long it took."""
    started = time.monotonic()
    answer = post(f"{node.api_url}/publish", {"channel": channel, "data": data}, {"X-API-Key": API_KEY}, timeout=60)
    return answer, time.monotonic() - started


async def clients_on(cluster, history, channel, count):
    """`count` SDK clients spread over the nodes, each subscribed to `channel` (recoverable)."""
    endpoints = []
    for index in range(count):
        node = cluster.nodes[index % len(cluster.nodes)]
        name = f"u{index}-n{node.index}"
        endpoints.append((node.ws_url, name, node.token(name)))
    return await subscribed_clients(history, channel, endpoints, max_reconnect_delay=2.0, repeat="")


async def publish_through(cluster, history, channel, seconds, fault, outcomes):
    """Publishes through the nodes in turn for `seconds`, about ten a second, running `fault`
    (a coroutine) alongside; each answer's kind and time go to `outcomes`."""
    fault_task = asyncio.ensure_future(fault())
    deadline, n = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        n += 1
        node = cluster.nodes[n % len(cluster.nodes)]
        data = {"n": n}
        answer, took = await asyncio.to_thread(publish, node, channel, data)
        if "result" in answer:
            history.ack(channel, answer["result"]["offset"], answer["result"]["epoch"], data)
            history.up("publish refused", "publisher")
        else:
            history.down("publish refused", "publisher")
        outcomes.append((node.index, answer.get("error", {}).get("code"), took))
        await asyncio.sleep(0.1)
    await fault_task


async def test_redis_blackholed_for_10_s_under_three_nodes_and_200_clients_loses_nothing(cut):
    """Redis stops answering every node for 10 s without closing a socket: publishes are refused
    with the temporary 100 within a bound instead of hanging, and once Redis answers again every
    client has every acknowledged publication in order, once, or was told what it missed, and
    every acknowledged publication is in history."""
    generator, repeat = seeded("redis-blackhole")
    history = History()
    channel = f"faults:blackhole-{generator.randrange(1 << 30)}"
    clients, _ = await clients_on(cut, history, channel, CLIENTS)
    outcomes = []

    async def blackhole():
        await asyncio.sleep(3)
        for proxy in cut.proxies:
            proxy.blackhole()
        await asyncio.sleep(10)
        for proxy in cut.proxies:
            proxy.blackhole(False)

    try:
        await publish_through(cut, history, channel, 20, blackhole, outcomes)
        refused = [o for o in outcomes if o[1] is not None]
        print(f"redis blackhole: {len(outcomes) - len(refused)} publishes acknowledged, {len(refused)} refused "
              f"(codes {sorted({o[1] for o in refused})}), the slowest answer {max(o[2] for o in outcomes):.2f} s")
        assert refused, f"no publish was refused while Redis was silent {repeat}"
        assert {code for _, code, _ in refused} == {100}, f"{refused[:5]} {repeat}"
        assert max(took for _, _, took in outcomes) < 15, f"a publish waited past its bound {repeat}"
        await judge(history, channel, cut.nodes[0], "redis blackhole", repeat)
    finally:
        await asyncio.gather(*(client.disconnect() for client in clients))


async def test_a_node_cut_from_redis_alone_moves_or_refuses_its_clients_and_its_presence_expires(cut):
    """Node 1 loses Redis (blackholed) while its clients stay connected to it: its clients are told
    (a temporary refusal, an unsubscribe to come back from, or a reconnect elsewhere), never left
    waiting in silence; its users' presence expires on the other nodes within
    `cluster_presence_ttl`; and after the link is back every promise of the history is kept."""
    generator, repeat = seeded("node-cut")
    history = History()
    channel = f"faults:cut-{generator.randrange(1 << 30)}"
    clients, _ = await clients_on(cut, history, channel, 30)
    outcomes = []
    cut_users = {f"u{index}-n1" for index in range(0, 30, 3)}

    def present_users(node):
        answer = post(f"{node.api_url}/presence", {"channel": channel}, {"X-API-Key": API_KEY})
        return {info["user"] for info in answer["result"]["presence"].values()}

    assert cut_users <= present_users(cut.nodes[1])
    expired_after = []

    async def cut_node_one():
        await asyncio.sleep(2)
        cut.proxies[0].blackhole()
        started = time.monotonic()
        await until(lambda: not cut_users & present_users(cut.nodes[1]), f"node 1's users leave presence on node 2 {repeat}",
                    timeout=PRESENCE_TTL + 10)
        expired_after.append(time.monotonic() - started)
        await asyncio.sleep(max(0.0, 10 - (time.monotonic() - started)))
        cut.proxies[0].blackhole(False)

    try:
        await publish_through(cut, history, channel, 16, cut_node_one, outcomes)
        print(f"node cut: node 1's users left presence on node 2 after {expired_after[0]:.2f} s (cluster_presence_ttl {PRESENCE_TTL} s); "
              f"publishes through node 1 refused {sum(1 for o in outcomes if o[0] == 1 and o[1] is not None)}, "
              f"through the others {sum(1 for o in outcomes if o[0] != 1 and o[1] is not None)}")
        assert all(code in (None, 100) for _, code, _ in outcomes), f"{outcomes} {repeat}"
        assert all(code is None for index, code, _ in outcomes if index != 1), f"the other nodes kept publishing {repeat}"
        await judge(history, channel, cut.nodes[1], "node cut", repeat)
    finally:
        await asyncio.gather(*(client.disconnect() for client in clients))


@pytest.fixture(scope="module")
def far_database():
    """Two nodes on the PostgreSQL engine, each reaching PostgreSQL through a proxy of its own."""
    generator, _ = seeded("far-database")
    folder = tempfile.mkdtemp(prefix="gondola-far-database-")
    os.chmod(folder, 0o755)  # PostgreSQL runs as the postgres user and must reach its folder.
    config = os.path.join(folder, "nodes.json")
    with open(config, "w") as f:
        json.dump({"ping_interval": "2s", "pong_timeout": "2s", "namespaces": CONFIG["namespaces"], "cluster_node_timeout": "3s"}, f)
    instance = Cluster(folder, "postgres")
    instance.nodes = instance.nodes[:2]
    instance.proxies = []
    try:
        instance.env["CLUSTER_DOMAINS"] = "travel"
        instance.script("start", "2", "--port", str(instance.nodes[0].port), "--config", config, "--no-build", "--engine", "postgres")
        through_proxies(instance, os.path.join(folder, "postgres", "run", ".s.PGSQL.5432"), generator,
                        lambda proxy: f"GONDOLA_DATABASE=postgres://postgres@{proxy.address}/gondola")
        yield instance
    finally:
        stop(instance)


async def test_postgresql_300_ms_away_slows_chat_acks_but_keeps_them_correct_and_health_says_so(far_database):
    """PostgreSQL 300 ms away each way (±50 ms) from both nodes: two travellers on two nodes send
    twelve chat messages at once (each connection's commands queue behind a slow one, and their
    pongs with them): every one is acknowledged, slower, none lost or doubled, and no connection
    is closed for a pong it could not have sent; the reader gets each once in order; the history
    reads them back as acknowledged; /health stays ok and shows the round trip."""
    generator, repeat = seeded("far-database-chat")
    for proxy in far_database.proxies:
        proxy.shape(latency=0.3, jitter=0.05)
    first, second = far_database.nodes
    now = int(time.time() * 1000)
    trip = post(f"{first.api_url}/trip_create", {"name": "Far", "starts_at": now - 3_600_000, "ends_at": now + 3_600_000, "hosts": ["far-host"]},
                {"X-API-Key": API_KEY}, timeout=60)["result"]["trip"]["id"]
    for user in ("far-ann", "far-bo", "far-cy"):
        post(f"{first.api_url}/trip_add_member", {"trip": trip, "user": user, "role": "traveller"}, {"X-API-Key": API_KEY}, timeout=60)
    senders, sender_events = [], []
    for user, node in (("far-ann", first), ("far-bo", second)):
        events = Events()
        client = Client(node.ws_url, events=ClientEvents(events), token=node.token(user), timeout=90.0)
        await client.connect()
        senders.append(client)
        sender_events.append(events)
    chats = (await senders[0].rpc("chat.list", {})).data["chats"]
    chat = next(c for c in chats if c["trip"] == trip)
    history = History()
    reader = Client(second.ws_url, events=ClientEvents(Events()), token=second.token("far-cy"), timeout=90.0)
    recorder = Recorder(history, "far-cy", chat["channel"])
    subscription = reader.new_subscription(chat["channel"], recorder)
    try:
        await reader.connect()
        await subscription.subscribe()
        await until(lambda: recorder.epoch, f"the reader is subscribed {repeat}", timeout=30)
        order = list(range(12))
        generator.shuffle(order)
        started = time.monotonic()

        async def send(n):
            client = senders[n % 2]
            text = f"message {n}"
            answer = (await client.rpc("chat.send", {"chat": chat["id"], "text": text, "client_message_id": f"far-{n}"})).data
            # The publication is the message the answer holds, without its offset (the publication's own).
            history.ack(chat["channel"], answer["offset"], recorder.epoch, {k: v for k, v in answer.items() if k != "offset"})
            return time.monotonic() - started

        took = await asyncio.gather(*(send(n) for n in order), return_exceptions=True)
        failed = [t for t in took if isinstance(t, BaseException)]
        disconnects = [(ctx.code, ctx.reason) for events in sender_events for name in ("connecting", "disconnected") for ctx in events.of(name)]
        assert not failed, f"{len(failed)} sends failed ({failed[:3]}); the senders were disconnected with {disconnects} {repeat}"
        print(f"far database: 12 chat messages acknowledged, the last after {max(took):.2f} s")
        offsets = sorted(history.acknowledged[chat["channel"]])
        assert offsets == list(range(1, 13)), f"{offsets} {repeat}"
        await until(lambda: recorder.count == 12, f"the reader gets all 12 {repeat}", timeout=60)
        problems = history.check()
        assert not problems, f"{problems} {repeat}"
        stored = (await senders[1].rpc("chat.history", {"chat": chat["id"], "limit": 100})).data["messages"]
        assert sorted(m["client_message_id"] for m in stored) == sorted(f"far-{n}" for n in range(12)), repeat
        for node in far_database.nodes:
            report = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{node.port}/health", timeout=30).read())
            print(f"far database: node {node.index} /health {report}")
            assert report["status"] == "ok", report
            # Each way 300 ms ±50: a round trip of at least 500 ms, measured every 2 s.
            assert report["parts"][0]["round_trip_ms"] >= 450, report
    finally:
        for proxy in far_database.proxies:
            proxy.shape()
        for client in (*senders, reader):
            await client.disconnect()
