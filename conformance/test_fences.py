"""Trip fences with the official SDK: a host defines a fence, a traveller's positions cross it,
the host hears each crossing once on `fences:<trip>` (and recovers what it missed while
offline), the traveller hears it on the personal channel, and bad fences are refused naming the
problem. The three-node cluster's test is in test_cluster.py."""
import time

from centrifuge import Client, ReplyError

from helpers import ClientEvents, Events, SubEvents, call, connected_client, server_api, trip_mates

CENTER = (45.31, 6.60)
DEGREES_PER_METRE = 1 / 111_195


def position(metres_north, ts):
    return {"lat": CENTER[0] + metres_north * DEGREES_PER_METRE, "lon": CENTER[1], "ts": ts}


def circle(trip, radius=200):
    return {"trip": trip, "name": "Meeting point", "circle": {"lat": CENTER[0], "lon": CENTER[1], "radius": radius}}


def kinds(publications, codec):
    return [codec.into(p.pub.data)["event"] for p in publications]


async def test_a_host_hears_each_crossing_once_and_recovers_the_missed_ones(server, codec):
    host, traveller = f"fence-host-{codec.name}", f"fence-walker-{codec.name}"
    trip = trip_mates(server, host, traveller)
    host_events = Events()
    hana = Client(server.ws_url, events=ClientEvents(host_events), token=server.token(host), min_reconnect_delay=0.1,
                  max_reconnect_delay=0.5, **codec.kwargs)
    await hana.connect()
    fence = (await call(hana, codec, "fence.create", circle(trip)))["fence"]
    assert fence["circle"]["radius"] == 200 and fence["detect"] == ["enter", "exit"]
    sub_events = Events()
    sub = hana.new_subscription(f"fences:{trip}", SubEvents(sub_events))
    await sub.subscribe()
    await sub_events.wait("subscribed")
    alice, _ = await connected_client(server, traveller, codec)
    personal = Events()
    personal_sub = alice.new_subscription(f"personal:#{traveller}", SubEvents(personal))
    await personal_sub.subscribe()
    await personal.wait("subscribed")

    start = int(time.time() * 1000)
    # Outside, inside, jitter 17 m outside the edge (within the margin), inside, outside.
    for step, metres in enumerate([450, 110, 217, 120, 560]):
        await call(alice, codec, "location.update", position(metres, start + step * 1000))
    publications = await sub_events.wait("publication", count=2, timeout=10)
    assert kinds(publications, codec) == ["enter", "exit"]
    enter = codec.into(publications[0].pub.data)
    assert (enter["fence"], enter["user"], enter["ts"]) == (fence["id"], traveller, start + 1000)
    told = await personal.wait_for("publication", lambda ctx: codec.into(ctx.pub.data).get("event") == "exit")
    assert codec.into(told.pub.data)["id"] == codec.into(publications[1].pub.data)["id"]

    # The host goes offline; the traveller crosses twice more; the SDK recovers both.
    await hana.disconnect()
    await call(alice, codec, "location.update", position(0, start + 6000))
    await call(alice, codec, "location.update", position(900, start + 7000))
    await hana.connect()
    publications = await sub_events.wait("publication", count=4, timeout=15)
    assert kinds(publications, codec) == ["enter", "exit", "enter", "exit"]
    assert sub_events.of("subscribed")[-1].recovered
    await hana.disconnect()
    await alice.disconnect()


async def test_bad_fences_are_refused_naming_the_problem(server, codec):
    host = f"fence-bad-{codec.name}"
    trip = trip_mates(server, host, f"fence-bad-t-{codec.name}")
    hana, events = await connected_client(server, host, codec)
    crossing = {"type": "Polygon", "coordinates": [[[6.58, 45.3], [6.59, 45.31], [6.59, 45.3], [6.58, 45.31], [6.58, 45.3]]]}
    for data, words in [
        (dict(circle(trip), circle=None, geometry=crossing), "crosses itself"),
        (dict(circle(trip), circle=None, geometry={"type": "Point", "coordinates": [6.58, 45.3]}), "Polygon or MultiPolygon"),
        (dict(circle(trip), circle=None, roaming={"user": "nobody-here", "radius": 100}), "not a member"),
        (dict(circle(trip), dwell_ms=-1), "dwell_ms"),
    ]:
        try:
            await hana.rpc("fence.create", codec.out(data))
            raise AssertionError(f"accepted {data}")
        except ReplyError as error:
            assert error.code == 107 and words in error.message, error.message
    assert server_api(server, "fence_list", {"trip": trip})["fences"] == []
    # Still connected and served.
    assert (await call(hana, codec, "fence.create", circle(trip)))["fence"]["name"] == "Meeting point"
    assert not events.of("disconnected")
    await hana.disconnect()


async def test_a_traveller_standing_still_at_the_meeting_point_is_reported_inside_on_time(server, codec):
    """A phone lying still sends no position: the hub reports `inside` once the dwell time has
    passed since the one position it sent, without waiting for another."""
    host, traveller = f"fence-dwell-host-{codec.name}", f"fence-dwell-{codec.name}"
    trip = trip_mates(server, host, traveller)
    hana, _ = await connected_client(server, host, codec)
    fence = (await call(hana, codec, "fence.create", dict(circle(trip), detect=["enter", "inside"], dwell_ms=1500)))["fence"]
    sub_events = Events()
    sub = hana.new_subscription(f"fences:{trip}", SubEvents(sub_events))
    await sub.subscribe()
    await sub_events.wait("subscribed")
    alice, _ = await connected_client(server, traveller, codec)
    start = int(time.time() * 1000)
    await call(alice, codec, "location.update", position(20, start))
    publications = await sub_events.wait("publication", count=2, timeout=15)
    assert kinds(publications, codec) == ["enter", "inside"]
    inside = codec.into(publications[1].pub.data)
    assert (inside["fence"], inside["user"], inside["ts"]) == (fence["id"], traveller, start + 1500)
    await hana.disconnect()
    await alice.disconnect()
