"""Three nodes on Redis alone (`Scripts/cluster --engine redis --no-postgres`): two Redis shards
that need a password over TLS, no PostgreSQL and no domain — a bare hub, as a team moving from
Centrifugo runs one. The official SDK and cent see publications, presence, history and recovery
across the nodes; /health names only the Redis shards; a node asked to run what needs PostgreSQL
on Redis alone refuses to start, naming it."""
import json
import os
import subprocess
import tempfile

import pytest
from cent import HistoryRequest, PresenceRequest, PublishRequest
from centrifuge import StreamPosition

from conftest import API_KEY, CONFIG, GONDOLA, SECRET
from helpers import Events, SubEvents
from test_cluster import REDIS_PASSWORD, Cluster, client_on, health, subscribed, NODES

SHARDS = 2


@pytest.fixture(scope="module")
def alone():
    folder = tempfile.mkdtemp(prefix="gondola-redis-alone-")
    config = os.path.join(folder, "nodes.json")
    with open(config, "w") as f:
        json.dump({"ping_interval": "2s", "pong_timeout": "2s", "namespaces": CONFIG["namespaces"], "cluster_presence_ttl": "3s",
                   "cluster_node_timeout": "3s"}, f)
    instance = Cluster(folder, "redis")
    try:
        instance.script("start", str(NODES), "--port", str(instance.nodes[0].port), "--config", config, "--no-build", "--engine", "redis",
                        "--no-postgres", "--redis-shards", str(SHARDS), "--redis-password", REDIS_PASSWORD, "--redis-tls")
        yield instance
    finally:
        instance.script("stop")


async def test_publications_presence_history_and_recovery_cross_nodes_on_redis_alone(alone, codec):
    channel = f"room:alone-{codec.name}"
    reader, _ = await client_on(alone.nodes[0], "reader", codec)
    _, events = await subscribed(reader, channel, recoverable=True)
    watcher, _ = await client_on(alone.nodes[1], "watcher", codec)
    await subscribed(watcher, channel)
    for n in range(3):
        alone.nodes[2].api().publish(PublishRequest(channel=channel, data={"n": n}))
    seen = await events.wait("publication", 3, timeout=10)
    assert [codec.into(p.pub.data)["n"] for p in seen] == [0, 1, 2]
    presence = alone.nodes[2].api().presence(PresenceRequest(channel=channel)).presence
    assert sorted(info.user for info in presence.values()) == ["reader", "watcher"]
    history = [node.api().history(HistoryRequest(channel=channel, limit=10)) for node in alone.nodes]
    assert len({h.epoch for h in history}) == 1 and all([p.offset for p in h.publications] == [1, 2, 3] for h in history)

    # The reader leaves, misses two publications and comes back through another node, recovering them.
    await reader.disconnect()
    for n in range(3, 5):
        alone.nodes[1].api().publish(PublishRequest(channel=channel, data={"n": n}))

    async def get_state(_channel):
        return StreamPosition(offset=seen[-1].pub.offset, epoch=history[0].epoch)

    again, _ = await client_on(alone.nodes[2], "reader", codec)
    events = Events()
    await again.new_subscription(channel, SubEvents(events), get_state=get_state).subscribe()
    context = (await events.wait("subscribed", timeout=10))[0]
    assert context.was_recovering and context.recovered
    recovered = await events.wait("publication", 2, timeout=10)
    assert [codec.into(p.pub.data)["n"] for p in recovered] == [3, 4]
    await again.disconnect()
    await watcher.disconnect()


async def test_health_names_only_the_redis_shards(alone):
    state = health(alone.nodes[0])
    assert state["status"] == "ok" and state["engine"] == "redis"
    assert [part["name"] for part in state["parts"]] == [part["name"] for part in state["parts"] if part["name"].startswith("redis ")]
    assert len(state["parts"]) == SHARDS


@pytest.mark.parametrize("setting, named", [
    ({}, "set domains to [] or database to a postgres:// URL"),
    ({"GONDOLA_DOMAINS": "", "GONDOLA_DEV_LOGIN": "true"}, "dev_login"),
    ({"GONDOLA_DOMAINS": "", "GONDOLA_NAMESPACES": json.dumps([{"name": "ledger", "history_durable": True}])}, "namespace 'ledger'"),
])
def test_what_needs_postgresql_is_refused_on_redis_alone(setting, named):
    environment = dict(os.environ, GONDOLA_ENGINE="redis", GONDOLA_TOKEN_HMAC_SECRET=SECRET, GONDOLA_API_KEY=API_KEY, **setting)
    environment.pop("GONDOLA_DATABASE", None)
    ran = subprocess.run([GONDOLA, "serve", "--listen", "127.0.0.1:0"], env=environment, capture_output=True, text=True, timeout=60,
                         cwd=tempfile.mkdtemp(prefix="gondola-redis-alone-refused-"))
    assert ran.returncode != 0 and named in ran.stderr + ran.stdout, ran.stderr + ran.stdout
