"""The travel domain with the official SDK: demo mode, nearby, bad input."""
import tempfile
import time

import pytest
from centrifuge import Client, DeltaType, ReplyError

from conftest import launch
from helpers import ClientEvents, Events, SubEvents, connected_client, post, server_api


@pytest.fixture(scope="module")
def demo():
    process, instance = launch(tempfile.mkdtemp(prefix="gondola-demo-"), extra_args=("--demo",))
    yield instance
    process.terminate()
    process.wait(timeout=10)


async def test_demo_host_sees_travellers_move(demo, codec):
    token = post(f"http://127.0.0.1:{demo.port}/api/auth/dev", {"user": "demo-host"})["token"]
    events = Events()
    client = Client(demo.ws_url, events=ClientEvents(events), token=token, **codec.kwargs)
    await client.connect()
    trips = codec.into((await client.rpc("trip.list", codec.out({}))).data)["trips"]
    assert [(t["id"], t["role"], t["running"]) for t in trips] == [("demo", "host", True)]
    sub_events = Events()
    sub = client.new_subscription("locations:demo", SubEvents(sub_events))
    await sub.subscribe()
    subscribed = await sub_events.wait("subscribed")
    snapshot = codec.into(subscribed[0].data)["positions"] if subscribed[0].data else []
    publications = await sub_events.wait("publication", count=3, timeout=10)
    seen = {}
    for publication in publications:
        for position in codec.into(publication.pub.data)["positions"]:
            seen.setdefault(position["user"], []).append((position["lat"], position["lon"]))
    assert {"demo-anna", "demo-ben", "demo-chloe", "demo-dan"} <= set(seen) | {p["user"] for p in snapshot}
    assert any(len(set(track)) > 1 for track in seen.values()), "positions did not move"
    await client.disconnect()


async def test_position_frames_as_fossil_deltas_match_whole_ones(demo, codec):
    """A host subscribed twice to the demo trip, once with deltas: the SDK rebuilds the
    same frames the plain subscription gets."""
    clients, recorded = [], []
    for options in ({}, {"delta": DeltaType.FOSSIL}):
        token = post(f"http://127.0.0.1:{demo.port}/api/auth/dev", {"user": "demo-host"})["token"]
        client = Client(demo.ws_url, events=ClientEvents(Events()), token=token, **codec.kwargs)
        await client.connect()
        events = Events()
        sub = client.new_subscription("locations:demo", SubEvents(events), **options)
        await sub.subscribe()
        await events.wait("subscribed")
        clients.append(client)
        recorded.append(events)
    with_deltas = await recorded[1].wait("publication", count=6, timeout=15)
    frames = [codec.into(p.pub.data) for p in with_deltas]
    assert [p.pub.delta for p in with_deltas][1:] == [True] * 5 and not with_deltas[0].pub.delta
    plain = [codec.into(p.pub.data) for p in recorded[0].of("publication")]
    start = plain.index(frames[0])
    plain = [codec.into(p.pub.data) for p in await recorded[0].wait("publication", count=start + 6, timeout=15)]
    assert plain[start:start + 6] == frames
    for client in clients:
        await client.disconnect()


async def test_nearby_enter_and_bad_input_through_the_sdk(server, codec):
    near_a, near_b = f"near-a-{codec.name}", f"near-b-{codec.name}"
    lat = 45.295 if codec.protobuf else 45.30  # out of reach of the other encoding's pair
    for user in (near_a, near_b):
        server_api(server, "user_set_staff", {"user": user, "staff": False})
    alice, _ = await connected_client(server, near_a, codec)
    bob, _ = await connected_client(server, near_b, codec)
    sub_events = Events()
    sub = alice.new_subscription(f"nearby:#{near_a}", SubEvents(sub_events), data=codec.out({"radius": 300, "limit": 10}))
    await sub.subscribe()
    await sub_events.wait("subscribed")
    now = int(time.time() * 1000)
    located = await alice.rpc("location.update", codec.out({"lat": lat, "lon": 6.58, "ts": now}))
    assert codec.into(located.data)["map"] == {"mode": "mountain", "resort": "demo"}
    await bob.rpc("location.update", codec.out({"lat": lat + 0.001, "lon": 6.58}))
    publication = (await sub_events.wait("publication", timeout=5))[0]
    event = codec.into(publication.pub.data)["events"][0]
    assert (event["type"], event["user"]) == ("enter", near_b)
    assert 100 < event["distance"] < 125
    with pytest.raises(ReplyError) as refused:
        await bob.rpc("location.update", codec.out({"lat": "NaN", "lon": 6.58}))
    assert refused.value.code == 107 and "lat must be a number" in refused.value.message
    with pytest.raises(ReplyError) as refused:
        await bob.rpc("location.update", codec.out({"lat": 45.3, "lon": 6.58, "accuracy": -5}))
    assert refused.value.code == 107 and "accuracy" in refused.value.message
    assert "ts" in codec.into((await bob.rpc("server.time", codec.out({}))).data)
    await alice.disconnect()
    await bob.disconnect()
