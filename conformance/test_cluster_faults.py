"""Network faults between three nodes and Redis, in their short form: each node reaches Redis
through its own `FaultProxy` (`Scripts/cluster`'s FOLDER/node-I.env reroutes it), and the official
SDK's clients and a server API publisher work through the fault while `History` records what was
acknowledged and received. Seeded like test_faults.py (`FAULTS_SEED`)."""
import asyncio
import json
import os
import tempfile
import time

import pytest
from centrifuge import Client

from conftest import API_KEY, CONFIG
from fault_proxy import FaultProxy
from helpers import Events, post
from history import History
from test_cluster import NODES, REDIS_PASSWORD, Cluster
from test_faults import DURABLE, Availability, Recorder, kept_history, seeded, until

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
        for node in instance.nodes:
            proxy = FaultProxy(("127.0.0.1", redis_port), seed=generator.random())
            instance.proxies.append(proxy)
            with open(os.path.join(folder, f"node-{node.index}.env"), "w") as f:
                f.write(f"GONDOLA_REDIS_ADDRESSES=redis://:{REDIS_PASSWORD}@{proxy.address}\n")
            instance.script("kill", str(node.index))
            instance.script("restart", str(node.index))
        yield instance
    finally:
        instance.script("stop")
        for proxy in instance.proxies:
            proxy.close()


def publish(node, channel, data):
    """A server API publish through `node`: its result, or its error; and how long it took."""
    started = time.monotonic()
    answer = post(f"{node.api_url}/publish", {"channel": channel, "data": data}, {"X-API-Key": API_KEY}, timeout=60)
    return answer, time.monotonic() - started


async def clients_on(cluster, history, channel, count):
    """`count` SDK clients spread over the nodes, each subscribed to `channel` (recoverable)."""
    clients, recorders, subscriptions = [], [], []
    for index in range(count):
        node = cluster.nodes[index % len(cluster.nodes)]
        name = f"u{index}-n{node.index}"
        client = Client(node.ws_url, events=Availability(Events(), history, name), token=node.token(name),
                        min_reconnect_delay=0.2, max_reconnect_delay=2.0, timeout=10.0)
        recorder = Recorder(history, name, channel)
        subscriptions.append(client.new_subscription(channel, recorder, recoverable=True))
        clients.append(client)
        recorders.append(recorder)
    await asyncio.gather(*(client.connect() for client in clients))
    await asyncio.gather(*(subscription.subscribe() for subscription in subscriptions))
    await until(lambda: all(recorder.epoch for recorder in recorders), "every client is subscribed", timeout=60)
    return clients, recorders


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
        last = max(history.acknowledged[channel])
        await until(lambda: history.reached(channel, last), f"every client reaches offset {last} {repeat}", timeout=90)
        problems = history.check({channel: kept_history(cut.nodes[0], channel)})
        print(f"redis blackhole: longest windows {history.longest_windows()}")
        assert not problems, f"{len(problems)} problems: {problems[:10]} {repeat}"
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
        last = max(history.acknowledged[channel])
        await until(lambda: history.reached(channel, last), f"every client reaches offset {last} {repeat}", timeout=90)
        problems = history.check({channel: kept_history(cut.nodes[1], channel)})
        print(f"node cut: longest windows {history.longest_windows()}")
        assert not problems, f"{len(problems)} problems: {problems[:10]} {repeat}"
    finally:
        await asyncio.gather(*(client.disconnect() for client in clients))
