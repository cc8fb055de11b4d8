"""JSON and Protobuf clients of the official SDK on the same channels: the same
publications, with the same offsets, whichever encoding published them."""
from cent import Client as ApiClient, PublishRequest
from centrifuge import StreamPosition

from conftest import API_KEY, Codec
from helpers import Events, SubEvents, connected_client

JSON, PROTOBUF = Codec("json"), Codec("protobuf")


async def subscribed_client(server, user, codec, channel):
    client, _ = await connected_client(server, user, codec)
    events = Events()
    sub = client.new_subscription(channel, SubEvents(events), recoverable=True)
    await sub.subscribe()
    await events.wait("subscribed")
    return client, sub, events


async def test_json_and_protobuf_clients_share_a_channel_both_ways(server):
    channel = "room:mixed"
    json_client, json_sub, json_events = await subscribed_client(server, "mix-json", JSON, channel)
    pb_client, pb_sub, pb_events = await subscribed_client(server, "mix-pb", PROTOBUF, channel)
    await json_sub.publish(JSON.out({"from": "json", "text": "héllo"}))
    await pb_sub.publish(PROTOBUF.out({"from": "protobuf", "n": [1, 2.5, None]}))
    ApiClient(server.api_url, API_KEY).publish(PublishRequest(channel=channel, data={"from": "api"}))
    expected = [{"from": "json", "text": "héllo"}, {"from": "protobuf", "n": [1, 2.5, None]}, {"from": "api"}]
    for codec, events in ((JSON, json_events), (PROTOBUF, pb_events)):
        publications = await events.wait("publication", 3)
        assert [codec.into(p.pub.data) for p in publications] == expected, codec.name
        assert [p.pub.offset for p in publications] == [1, 2, 3], codec.name
        assert [p.pub.info.user if p.pub.info else None for p in publications] == ["mix-json", "mix-pb", None]
    json_epoch = json_events.of("subscribed")[0].stream_position.epoch
    pb_epoch = pb_events.of("subscribed")[0].stream_position.epoch
    assert json_epoch == pb_epoch
    json_history = await json_sub.history(limit=10, since=StreamPosition(offset=0, epoch=json_epoch))
    pb_history = await pb_sub.history(limit=10, since=StreamPosition(offset=0, epoch=pb_epoch))
    assert [JSON.into(p.data) for p in json_history.publications] == [PROTOBUF.into(p.data) for p in pb_history.publications] == expected
    await json_client.disconnect()
    await pb_client.disconnect()


async def test_a_protobuf_client_sees_json_clients_join_and_leave(server):
    pb_client, _ = await connected_client(server, "watch-pb", PROTOBUF)
    events = Events()
    sub = pb_client.new_subscription("room:mixed-presence", SubEvents(events), join_leave=True)
    await sub.subscribe()
    await events.wait("subscribed")
    json_client, _ = await connected_client(server, "join-json", JSON)
    json_sub = json_client.new_subscription("room:mixed-presence", SubEvents(Events()))
    await json_sub.subscribe()
    await json_sub.ready(timeout=5)
    joins = await events.wait("join", 2)
    assert {j.info.user for j in joins} == {"watch-pb", "join-json"}
    presence = await sub.presence()
    assert {info.user for info in presence.clients.values()} == {"watch-pb", "join-json"}
    await json_client.disconnect()
    leaves = await events.wait("leave")
    assert leaves[0].info.user == "join-json"
    await pb_client.disconnect()
