"""The GRPC server API through a client generated from Centrifugo's api.proto: every method
Gondola serves, its options and errors as the HTTP API answers them, with payloads byte for
byte; the API key in metadata; methods Gondola does not have answer UNIMPLEMENTED."""
import asyncio
import json
import time

import grpc
import pytest

from grpc_api import METADATA, call, pb, stub
from helpers import Events, SubEvents, connected_client


@pytest.fixture(scope="module")
def api(server):
    return stub(server.grpc_address)


def test_publish_with_every_option_and_history_byte_for_byte(api):
    channel = "room:grpc-history"
    spelled = b'{"n": 1.50, "big": 12345678901234567890}'
    first = call(api, "Publish", pb.PublishRequest(channel=channel, data=spelled, tags={"kind": "lift"}))
    binary = call(api, "Publish", pb.PublishRequest(channel=channel, data=b"\x00\xff\x0a"))
    skipped = call(api, "Publish", pb.PublishRequest(channel=channel, data=b"{}", skip_history=True))
    keyed = [call(api, "Publish", pb.PublishRequest(channel=channel, data=b'{"k": 1}', idempotency_key="order-1")) for _ in range(2)]
    versioned = call(api, "Publish", pb.PublishRequest(channel=channel, data=b'{"v": 2}', version=2))
    older = call(api, "Publish", pb.PublishRequest(channel=channel, data=b'{"v": 1}', version=1))
    assert (first.result.offset, binary.result.offset, skipped.result.offset) == (1, 2, 0)
    assert keyed[0].result == keyed[1].result and keyed[0].result.offset == 3
    assert versioned.result.offset == 4 and older.result == versioned.result
    history = call(api, "History", pb.HistoryRequest(channel=channel, limit=-1)).result
    assert [p.data for p in history.publications] == [spelled, b"\x00\xff\x0a", b'{"k": 1}', b'{"v": 2}']
    assert dict(history.publications[0].tags) == {"kind": "lift"} and history.epoch == first.result.epoch
    call(api, "HistoryRemove", pb.HistoryRemoveRequest(channel=channel))
    assert len(call(api, "History", pb.HistoryRequest(channel=channel, limit=-1)).result.publications) == 0


def test_subscribers_get_what_grpc_publishes_and_the_user_methods_reach_them(api, server, codec):
    async def scenario():
        user, channel = f"grpc-{codec.name}", f"room:grpc-{codec.name}"
        (client, events), (other, other_events) = [await connected_client(server, user, codec) for _ in range(2)]
        ids = [events.of("connected")[0].client, other_events.of("connected")[0].client]
        # Server-side subscribe, with data, through GRPC.
        call(api, "Subscribe", pb.SubscribeRequest(user=user, channel=channel, client=ids[0], data=b'{"why": "grpc"}',
                                                   expire_at=int(time.time()) + 600))
        assert (await events.wait("server_subscribed", timeout=10))[0].channel == channel
        broadcast = call(api, "Broadcast", pb.BroadcastRequest(channels=[channel, "nowhere:x"], data=b'{"n": 1.50}'))
        assert [r.HasField("error") for r in broadcast.result.responses] == [False, True]
        assert broadcast.result.responses[1].error.code == 102
        publication = (await events.wait("server_publication", timeout=10))[0].pub
        assert (codec.into(publication.data) if codec.protobuf else publication.data) == {"n": 1.5}
        presence = call(api, "Presence", pb.PresenceRequest(channel=channel)).result.presence
        assert set(presence) == {ids[0]} and presence[ids[0]].user == user
        assert call(api, "PresenceStats", pb.PresenceStatsRequest(channel=channel)).result.num_clients == 1
        channels = call(api, "Channels", pb.ChannelsRequest(pattern="room:grpc-*")).result.channels
        assert channels[channel].num_clients == 1
        call(api, "Unsubscribe", pb.UnsubscribeRequest(user=user, channel=channel, client=ids[0]))
        assert (await events.wait("server_unsubscribed", timeout=10))[0].channel == channel
        # Refresh and disconnect aimed at one connection: the other stays.
        call(api, "Refresh", pb.RefreshRequest(user=user, client=ids[0], expired=True))
        assert (await events.wait("connecting", 2, timeout=10))[1].code == 3005
        await events.wait("connected", 2, timeout=10)
        call(api, "Disconnect", pb.DisconnectRequest(user=user, whitelist=[ids[1]], disconnect=pb.Disconnect(code=4501, reason="moved")))
        closed = (await events.wait("disconnected", timeout=10))[0]
        assert (closed.code, closed.reason) == (4501, "moved")
        assert len(other_events.of("connecting")) == 1
        await other.disconnect()

    asyncio.run(scenario())


def test_batch_answers_each_command_in_order(api):
    commands = [pb.Command(publish=pb.PublishRequest(channel="room:grpc-batch", data=b'{"i": %d}' % i)) for i in range(3)]
    commands.insert(1, pb.Command(publish=pb.PublishRequest(channel="nowhere:x", data=b"{}")))
    commands.append(pb.Command(info=pb.InfoRequest()))
    for parallel in (False, True):
        replies = api.Batch(pb.BatchRequest(commands=commands, parallel=parallel), metadata=METADATA, timeout=10).replies
        assert [r.HasField("error") for r in replies] == [False, True, False, False, False]
        assert replies[1].error.code == 102 and len(replies[4].info.nodes) == 1
        offsets = [r.publish.offset for r in replies if r.HasField("publish")]
        if not parallel:
            assert offsets == [offsets[0], offsets[0] + 1, offsets[0] + 2], offsets


def test_bad_input_is_refused_by_name_and_the_key_is_checked(api, server):
    refused = api.Publish(pb.PublishRequest(channel="room:grpc-bad", data=b"{}", version=1, skip_history=True), metadata=METADATA)
    assert refused.error.code == 107 and "version" in refused.error.message
    # `session` is taken as Centrifugo takes it (no connection has this one: nothing happens).
    session = api.Subscribe(pb.SubscribeRequest(user="u", channel="room:x", session="s1"), metadata=METADATA)
    assert not session.HasField("error"), session
    labels = api.Subscribe(pb.SubscribeRequest(user="u", channel="room:x", label_filter=pb.FilterNode(op="eq")), metadata=METADATA)
    assert labels.error.code == 107 and "label_filter" in labels.error.message
    labels = api.Disconnect(pb.DisconnectRequest(user="u", all_users=True), metadata=METADATA)
    assert labels.error.code == 107 and "all_users" in labels.error.message
    for metadata in ([], [("authorization", "apikey wrong")], [("authorization", "conformance-api-key")]):
        with pytest.raises(grpc.RpcError) as raised:
            api.Info(pb.InfoRequest(), metadata=metadata, timeout=10)
        assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # Centrifugo methods Gondola does not have (its schema leaves them out: called by their path,
    # as a client generated from Centrifugo's file would, with a ConnectionsRequest's bytes for user "u").
    with grpc.insecure_channel(server.grpc_address) as channel:
        connections = channel.unary_unary("/centrifugal.centrifugo.api.CentrifugoApi/Connections")
        with pytest.raises(grpc.RpcError) as raised:
            connections(b"\x0a\x01u", metadata=METADATA, timeout=10)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    # And the server goes on.
    assert len(call(api, "Info", pb.InfoRequest()).result.nodes) == 1


def test_the_http_and_grpc_apis_answer_alike(api, server):
    from helpers import server_api
    channel = "room:grpc-alike"
    over_http = server_api(server, "publish", {"channel": channel, "data": {"n": 1}, "tags": {"t": "1"}})
    over_grpc = call(api, "Publish", pb.PublishRequest(channel=channel, data=b'{"n": 2}', tags={"t": "2"})).result
    assert over_grpc.offset == over_http["offset"] + 1 and over_grpc.epoch == over_http["epoch"]
    history = server_api(server, "history", {"channel": channel, "limit": -1})
    assert [p["data"] for p in history["publications"]] == [{"n": 1}, {"n": 2}]
    assert json.loads(call(api, "History", pb.HistoryRequest(channel=channel, limit=-1)).result.publications[0].data) == {"n": 1}
