"""The official centrifuge-python SDK against a real gondola serve."""
import asyncio
import time

import jwt
import pytest
from centrifuge import Client, ClientState, ReplyError, StreamPosition, SubscriptionState

from conftest import SECRET
from helpers import ClientEvents, Events, SubEvents, connected_client


async def test_connect_and_rpc(server, codec):
    client, events = await connected_client(server, "alice", codec)
    assert events.of("connected")[0].client
    result = await client.rpc("server.time", codec.out({}))
    assert isinstance(codec.into(result.data)["ts"], int)
    with pytest.raises(ReplyError) as error:
        await client.rpc("no.such.method", codec.out({}))
    assert error.value.code == 104
    await client.disconnect()


async def test_bad_token_disconnects_for_good(server, codec):
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token="not.a.token", **codec.kwargs)
    await client.connect()
    disconnected = await events.wait("disconnected")
    assert disconnected[0].code == 3500
    assert client.state == ClientState.DISCONNECTED
    await client.disconnect()


async def test_expired_token_is_refreshed_with_get_token(server, codec):
    calls = []

    async def get_token():
        calls.append(1)
        return server.token("alice", ttl="1h")

    events = Events()
    # A token that expired a minute ago, signed with the server's secret (no waiting for one to expire).
    expired = jwt.encode({"sub": "alice", "exp": int(time.time()) - 60}, SECRET, algorithm="HS256")
    client = Client(server.ws_url, events=ClientEvents(events), token=expired, get_token=get_token, **codec.kwargs)
    await client.connect()
    await events.wait("connected", timeout=10)
    assert calls, "the SDK asked for a new token after error 109"
    assert any(getattr(e.error, "code", None) == 109 for e in events.of("error"))
    await client.disconnect()


async def test_connection_refresh_keeps_an_expiring_connection(server, codec):
    async def get_token():
        return server.token("alice", ttl="1h")

    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=server.token("alice", ttl="2s"), get_token=get_token, **codec.kwargs)
    await client.connect()
    await events.wait("connected")
    await asyncio.sleep(4.5)
    assert client.state == ClientState.CONNECTED
    assert not events.of("disconnected")
    assert len(events.of("connected")) == 1
    await client.disconnect()


async def test_pubsub_with_offsets_and_history(server, codec):
    alice, _ = await connected_client(server, "alice", codec)
    bob, _ = await connected_client(server, "bob", codec)
    bob_events = Events()
    bob_sub = bob.new_subscription(f"room:pubsub-{codec.name}", SubEvents(bob_events), recoverable=True)
    await bob_sub.subscribe()
    await bob_events.wait("subscribed")
    alice_sub = alice.new_subscription(f"room:pubsub-{codec.name}", SubEvents(Events()))
    await alice_sub.subscribe()
    await alice_sub.ready(timeout=5)
    for n in range(3):
        await alice_sub.publish(codec.out({"n": n, "text": "héllo"}))
    publications = await bob_events.wait("publication", 3)
    assert [p.pub.offset for p in publications] == [1, 2, 3]
    assert [codec.into(p.pub.data)["n"] for p in publications] == [0, 1, 2]
    assert publications[0].pub.info.user == "alice"
    history = await bob_sub.history(limit=2, reverse=True)
    assert [p.offset for p in history.publications] == [3, 2]
    position = bob_events.of("subscribed")[0].stream_position
    since = await bob_sub.history(limit=10, since=StreamPosition(offset=1, epoch=position.epoch))
    assert [p.offset for p in since.publications] == [2, 3]
    await alice.disconnect()
    await bob.disconnect()


async def test_recovery_after_a_disconnect(server, codec):
    from cent import Client as ApiClient, PublishRequest
    api = ApiClient(server.api_url, "conformance-api-key")
    client, client_events = await connected_client(server, "carol", codec)
    events = Events()
    sub = client.new_subscription(f"room:recover-{codec.name}", SubEvents(events), recoverable=True)
    await sub.subscribe()
    await events.wait("subscribed")
    api.publish(PublishRequest(channel=f"room:recover-{codec.name}", data={"n": 1}))
    await events.wait("publication", 1)
    await client.disconnect()
    api.publish(PublishRequest(channel=f"room:recover-{codec.name}", data={"n": 2}))
    api.publish(PublishRequest(channel=f"room:recover-{codec.name}", data={"n": 3}))
    await client.connect()
    subscribed = await events.wait("subscribed", 2, timeout=10)
    assert subscribed[1].was_recovering and subscribed[1].recovered
    publications = await events.wait("publication", 3)
    assert [codec.into(p.pub.data)["n"] for p in publications] == [1, 2, 3]
    assert [p.pub.offset for p in publications] == [1, 2, 3]
    await client.disconnect()


async def test_presence_and_join_leave(server, codec):
    alice, _ = await connected_client(server, "alice", codec)
    events = Events()
    sub = alice.new_subscription(f"room:presence-{codec.name}", SubEvents(events), join_leave=True)
    await sub.subscribe()
    await events.wait("subscribed")
    bob, _ = await connected_client(server, "bob", codec)
    bob_sub = bob.new_subscription(f"room:presence-{codec.name}", SubEvents(Events()))
    await bob_sub.subscribe()
    await bob_sub.ready(timeout=5)
    joins = await events.wait("join", 2)
    assert {j.info.user for j in joins} == {"alice", "bob"}
    presence = await sub.presence()
    assert {info.user for info in presence.clients.values()} == {"alice", "bob"}
    stats = await sub.presence_stats()
    assert (stats.num_clients, stats.num_users) == (2, 2)
    await bob.disconnect()
    leaves = await events.wait("leave")
    assert leaves[0].info.user == "bob"
    await alice.disconnect()


async def test_user_limited_channels(server, codec):
    alice, _ = await connected_client(server, "alice", codec)
    own = Events()
    sub = alice.new_subscription("personal:#alice", SubEvents(own))
    await sub.subscribe()
    await own.wait("subscribed")
    bob, _ = await connected_client(server, "bob", codec)
    other = Events()
    bob_sub = bob.new_subscription("personal:#alice", SubEvents(other))
    await bob_sub.subscribe()
    unsubscribed = await other.wait("unsubscribed")
    assert unsubscribed[0].code == 103
    assert bob_sub.state == SubscriptionState.UNSUBSCRIBED
    await alice.disconnect()
    await bob.disconnect()
