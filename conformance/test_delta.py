"""Fossil delta subscriptions with the official SDK in both encodings: the SDK applies
every delta and gets each publication back exactly; recovery comes whole."""
from cent import Client as ApiClient, PublishRequest
from centrifuge import DeltaType

from conftest import API_KEY
from helpers import Events, SubEvents, connected_client, server_api


def frame(n):
    """A position frame in which one of eight travellers moved since frame n - 1."""
    return {"type": "positions", "positions": [
        {"user": f"traveller-{i}", "lat": round(45.3 + i / 1000 + (n // 8 + (1 if i < n % 8 else 0)) / 100000, 6),
         "lon": 6.58, "name": "Zoë Übersax", "speed": 3.5} for i in range(8)]}


async def subscribe(server, user, codec, channel, **options):
    client, _ = await connected_client(server, user, codec)
    events = Events()
    sub = client.new_subscription(channel, SubEvents(events), **options)
    await sub.subscribe()
    subscribed = await events.wait("subscribed")
    return client, events, subscribed[0]


async def test_the_sdk_rebuilds_every_publication_and_recovers_whole(server, codec):
    channel = f"frames:delta-{codec.name}"
    api = ApiClient(server.api_url, API_KEY)
    delta_client, delta_events, _ = await subscribe(server, f"delta-{codec.name}", codec, channel,
                                                    delta=DeltaType.FOSSIL, recoverable=True)
    plain_client, plain_events, _ = await subscribe(server, f"plain-{codec.name}", codec, channel)
    for n in range(8):
        api.publish(PublishRequest(channel=channel, data=frame(n)))
    received = await delta_events.wait("publication", 8)
    assert [codec.into(p.pub.data) for p in received] == [frame(n) for n in range(8)]
    assert [p.pub.delta for p in received] == [False] + [True] * 7
    plain = await plain_events.wait("publication", 8)
    assert [codec.into(p.pub.data) for p in plain] == [frame(n) for n in range(8)]
    assert not any(p.pub.delta for p in plain)

    # Recovery after a disconnect sends the missed publications whole; live ones follow
    # whole first, then as deltas again.
    await delta_client.disconnect()
    for n in range(8, 10):
        api.publish(PublishRequest(channel=channel, data=frame(n)))
    await delta_client.connect()
    subscribed = await delta_events.wait("subscribed", 2, timeout=10)
    assert subscribed[1].was_recovering and subscribed[1].recovered
    for n in range(10, 13):
        api.publish(PublishRequest(channel=channel, data=frame(n)))
    received = (await delta_events.wait("publication", 13))[8:]
    assert [codec.into(p.pub.data) for p in received] == [frame(n) for n in range(8, 13)]
    assert [p.pub.offset for p in received] == list(range(9, 14))
    assert [p.pub.delta for p in received] == [False, False, False, True, True]
    await delta_client.disconnect()
    await plain_client.disconnect()


async def test_a_namespace_without_deltas_negotiates_none(server, codec):
    channel = f"room:no-delta-{codec.name}"
    client, events, _ = await subscribe(server, f"nodelta-{codec.name}", codec, channel, delta=DeltaType.FOSSIL)
    api = ApiClient(server.api_url, API_KEY)
    for n in range(3):
        api.publish(PublishRequest(channel=channel, data=frame(n)))
    received = await events.wait("publication", 3)
    assert [codec.into(p.pub.data) for p in received] == [frame(n) for n in range(3)]
    assert not any(p.pub.delta for p in received)
    await client.disconnect()


async def test_only_publications_published_with_delta_go_as_deltas(server, codec):
    """Without the namespace's delta_publish, `delta` in publish decides, publication by
    publication; every publication is the base of the next delta."""
    channel = f"patches:mixed-{codec.name}"
    client, events, _ = await subscribe(server, f"patches-{codec.name}", codec, channel, delta=DeltaType.FOSSIL)
    asked = [True, True, False, True, None, True]
    for n, delta in enumerate(asked):
        options = {} if delta is None else {"delta": delta}
        server_api(server, "publish", {"channel": channel, "data": frame(n), **options})
    received = await events.wait("publication", len(asked))
    assert [codec.into(p.pub.data) for p in received] == [frame(n) for n in range(len(asked))]
    # The first has no base; the others are deltas exactly when asked.
    assert [p.pub.delta for p in received] == [False, True, False, True, False, True]
    await client.disconnect()
