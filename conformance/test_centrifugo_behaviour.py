"""Two Centrifugo behaviours SDK users rely on: a recovery with an empty epoch reads
the stream from the start, and `force_push_join_leave` sends join and leave to every
subscriber of its namespace."""
from cent import Client as ApiClient, PublishRequest
from centrifuge import StreamPosition

from conftest import API_KEY
from helpers import Events, SubEvents, connected_client


async def test_get_state_with_an_empty_epoch_recovers_the_whole_stream(server, codec):
    channel = f"room:state-{codec.name}"
    api = ApiClient(server.api_url, API_KEY)
    for n in range(3):
        api.publish(PublishRequest(channel=channel, data={"n": n}))
    asked = []

    async def get_state(name):
        # An app with no state yet: position zero, no epoch. The SDK subscribes with
        # recover, offset 0, epoch "" and the flag that asks for 112 instead of a gap.
        asked.append(name)
        return StreamPosition(offset=0, epoch="")

    client, _ = await connected_client(server, "stateful", codec)
    events = Events()
    sub = client.new_subscription(channel, SubEvents(events), get_state=get_state)
    await sub.subscribe()
    subscribed = (await events.wait("subscribed", timeout=10))[0]
    assert asked == [channel]
    assert subscribed.was_recovering and subscribed.recovered
    publications = await events.wait("publication", 3)
    assert [codec.into(p.pub.data)["n"] for p in publications] == [0, 1, 2]
    assert [p.pub.offset for p in publications] == [1, 2, 3]
    assert not events.of("sub_error")
    await client.disconnect()


async def test_force_push_join_leave_reaches_subscribers_that_did_not_ask(server, codec):
    channel = f"lobby:{codec.name}"
    watcher, _ = await connected_client(server, "lobby-watcher", codec)
    events = Events()
    sub = watcher.new_subscription(channel, SubEvents(events))  # no join_leave=True
    await sub.subscribe()
    await events.wait("subscribed")
    guest, _ = await connected_client(server, "lobby-guest", codec)
    guest_sub = guest.new_subscription(channel, SubEvents(Events()))
    await guest_sub.subscribe()
    await guest_sub.ready(timeout=5)
    joins = await events.wait("join", 2)
    assert {j.info.user for j in joins} == {"lobby-watcher", "lobby-guest"}
    await guest.disconnect()
    leaves = await events.wait("leave")
    assert leaves[0].info.user == "lobby-guest"
    await watcher.disconnect()
