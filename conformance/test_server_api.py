"""The server API through the official cent client."""
import asyncio
import json
import time

import pytest
import websockets
from cent import (BatchRequest, BroadcastRequest, Disconnect, ChannelsRequest, Client as ApiClient, CentApiResponseError, CentUnauthorizedError,
                  DisconnectRequest, HistoryRemoveRequest, HistoryRequest, InfoRequest, PresenceRequest,
                  PresenceStatsRequest, PublishRequest, RefreshRequest, StreamPosition, SubscribeRequest, UnsubscribeRequest)
from centrifuge import ClientState

from helpers import Events, SubEvents, call, connected_client, post, server_api
from conftest import API_KEY


@pytest.fixture
def api(server):
    return ApiClient(server.api_url, "conformance-api-key")


def test_publish_history_and_remove(api):
    first = api.publish(PublishRequest(channel="room:api", data={"n": 1}))
    second = api.publish(PublishRequest(channel="room:api", data={"n": 2}))
    assert second.offset == first.offset + 1 and second.epoch == first.epoch
    history = api.history(HistoryRequest(channel="room:api", limit=10))
    assert [p.data["n"] for p in history.publications][-2:] == [1, 2]
    since = api.history(HistoryRequest(channel="room:api", limit=10, since=StreamPosition(offset=first.offset, epoch=first.epoch)))
    assert [p.offset for p in since.publications] == [second.offset]
    newest = api.history(HistoryRequest(channel="room:api", limit=1, reverse=True))
    assert newest.publications[0].offset == second.offset
    api.history_remove(HistoryRemoveRequest(channel="room:api"))
    assert api.history(HistoryRequest(channel="room:api", limit=10)).publications == []


def test_batch_answers_each_command_in_order(api):
    result = api.batch(BatchRequest(requests=[
        PublishRequest(channel="room:batch-cent", data={"n": 1}),
        PublishRequest(channel="room:batch-cent", data={"n": 2}),
        HistoryRequest(channel="room:batch-cent", limit=10),
    ]))
    first, second, history = result.replies
    assert second.offset == first.offset + 1
    assert [p.data["n"] for p in history.publications][-2:] == [1, 2]
    parallel = api.batch(BatchRequest(requests=[PublishRequest(channel=f"room:batch-p{n % 4}", data={"n": n}) for n in range(40)],
                                      parallel=True))
    for channel in range(4):
        offsets = [reply.offset for reply in parallel.replies[channel::4]]
        assert sorted(offsets) == list(range(1, 11)), (channel, offsets)


def test_broadcast_reports_each_channel(api):
    result = api.broadcast(BroadcastRequest(channels=["room:b1", "room:b2", "nowhere:b3"], data={"x": 1}))
    assert result.responses[0].result.offset >= 1
    assert result.responses[1].result.offset >= 1
    assert result.responses[2].error.code == 102


def test_errors_and_bad_key(api, server):
    with pytest.raises(CentApiResponseError) as error:
        api.publish(PublishRequest(channel="nowhere:x", data=1))
    assert error.value.code == 102
    with pytest.raises(CentUnauthorizedError):
        ApiClient(server.api_url, "wrong-key").info(InfoRequest())


def test_info_presence_channels_unsubscribe_disconnect(api, server, codec):
    async def scenario():
        client, events = await connected_client(server, "dave", codec)
        sub_events = Events()
        sub = client.new_subscription(f"room:admin-{codec.name}", SubEvents(sub_events))
        await sub.subscribe()
        await sub_events.wait("subscribed")

        info = api.info(InfoRequest())
        node = info.nodes[0]
        assert node.uid and node.name and node.num_clients >= 1 and node.num_users >= 1 and node.uptime >= 0
        presence = api.presence(PresenceRequest(channel=f"room:admin-{codec.name}"))
        assert [c.user for c in presence.presence.values()] == ["dave"]
        stats = api.presence_stats(PresenceStatsRequest(channel=f"room:admin-{codec.name}"))
        assert (stats.num_clients, stats.num_users) == (1, 1)
        channels = api.channels(ChannelsRequest(pattern="room:adm*"))
        assert channels.channels[f"room:admin-{codec.name}"].num_clients == 1

        api.unsubscribe(UnsubscribeRequest(user="dave", channel=f"room:admin-{codec.name}"))
        unsubscribed = await sub_events.wait("unsubscribed")
        assert unsubscribed[0].code == 2000
        # A channel nobody is in answers both counts as zeros (a debug build used to stop on the empty answer).
        assert server_api(server, "presence_stats", {"channel": f"room:nobody-{codec.name}"}) == {"num_clients": 0, "num_users": 0}

        api.disconnect(DisconnectRequest(user="dave"))
        disconnected = await events.wait("disconnected")
        assert disconnected[0].code == 3503
        assert client.state == ClientState.DISCONNECTED

    asyncio.run(scenario())


def test_targeted_unsubscribe_and_disconnect_reach_only_their_connections(api, server, codec):
    async def scenario():
        user, channel = f"erin-{codec.name}", f"room:aim-{codec.name}"
        clients = [await connected_client(server, user, codec) for _ in range(3)]
        ids = [events.of("connected")[0].client for _, events in clients]
        subscriptions = []
        for client, _ in clients:
            recorded = Events()
            await client.new_subscription(channel, SubEvents(recorded)).subscribe()
            await recorded.wait("subscribed")
            subscriptions.append(recorded)

        api.unsubscribe(UnsubscribeRequest(user=user, channel=channel, client=ids[1]))
        assert (await subscriptions[1].wait("unsubscribed"))[0].code == 2000
        api.publish(PublishRequest(channel=channel, data={"n": 1}))
        await subscriptions[0].wait("publication")
        await subscriptions[2].wait("publication")

        api.disconnect(DisconnectRequest(user=user, client=ids[1], disconnect=Disconnect(code=4501, reason="moved to another desk")))
        closed = (await clients[1][1].wait("disconnected"))[0]
        assert (closed.code, closed.reason) == (4501, "moved to another desk")
        assert subscriptions[1].of("publication") == [], "the unsubscribed connection got nothing"

        api.disconnect(DisconnectRequest(user=user, whitelist=[ids[0]]))
        assert (await clients[2][1].wait("disconnected"))[0].code == 3503
        assert clients[0][0].state == ClientState.CONNECTED
        assert "ts" in await call(clients[0][0], codec, "server.time", {}), "the whitelisted connection still answers"
        for client, _ in clients:
            await client.disconnect()

    asyncio.run(scenario())


def test_refresh_prolongs_or_expires_only_the_connections_it_names(api, server, codec):
    async def scenario():
        user = f"rita-{codec.name}"
        (expiring, expiring_events), (kept, kept_events) = [await connected_client(server, user, codec) for _ in range(2)]
        # A connection of the user, read as JSON off the wire: the new end comes as a refresh push.
        async with websockets.connect(server.ws_url) as ws:
            await ws.send(json.dumps({"id": 1, "connect": {"token": server.token(user)}}))
            raw_id = json.loads((await asyncio.wait_for(ws.recv(), 5)).split("\n")[0])["connect"]["client"]
            api.refresh(RefreshRequest(user=user, client=raw_id, expire_at=int(time.time()) + 600))
            push = json.loads((await asyncio.wait_for(ws.recv(), 5)).split("\n")[0])["push"]
            assert push["refresh"]["expires"] is True and 590 <= push["refresh"]["ttl"] <= 600, push
        # `expired` closes with 3005, which the SDK answers by reconnecting.
        expiring_id = expiring_events.of("connected")[0].client
        api.refresh(RefreshRequest(user=user, client=expiring_id, expired=True))
        assert (await expiring_events.wait("connecting", 2, timeout=10))[1].code == 3005
        await expiring_events.wait("connected", 2, timeout=10)
        assert kept.state == ClientState.CONNECTED and len(kept_events.of("connecting")) == 1
        # Bad input answers 107 naming the field and changes nothing; Centrifugo PRO's label
        # filter is refused rather than ignored.
        for body, field in (({"user": user, "expire_at": "soon"}, "expire_at"), ({"user": user, "expired": 1}, "expired"),
                            ({"user": user, "session": 5}, "session"), ({"user": user, "label_filter": {"op": "eq"}}, "label_filter"),
                            ({"user": user, "b64info": "%%"}, "b64info")):
            answer = post(f"{server.api_url}/refresh", body, {"X-API-Key": API_KEY})
            assert answer["error"]["code"] == 107 and field in answer["error"]["message"], answer
        assert kept.state == ClientState.CONNECTED and len(kept_events.of("connecting")) == 1
        for client in (expiring, kept):
            await client.disconnect()

    asyncio.run(scenario())


def test_server_side_subscription_with_expire_at(api, server, codec):
    async def scenario():
        user, channel = f"sid-{codec.name}", f"vip:shift-{codec.name}"
        client, events = await connected_client(server, user, codec)
        past = post(f"{server.api_url}/subscribe", {"user": user, "channel": channel, "expire_at": int(time.time()) - 10},
                    {"X-API-Key": API_KEY})
        assert past["error"]["code"] == 107 and "expire_at" in past["error"]["message"], past
        server_api(server, "subscribe", {"user": user, "channel": channel, "expire_at": int(time.time()) + 600})
        subscribed = (await events.wait("server_subscribed", timeout=10))[0]
        assert subscribed.channel == channel
        api.publish(PublishRequest(channel=channel, data={"n": 1}))
        assert codec.into((await events.wait("server_publication", timeout=10))[0].pub.data) == {"n": 1}
        await client.disconnect()

    asyncio.run(scenario())


def test_publish_options_as_centrifugo_honours_them(api, server, codec):
    async def scenario():
        channel = f"room:options-{codec.name}"
        client, _ = await connected_client(server, f"fay-{codec.name}", codec)
        recorded = Events()
        await client.new_subscription(channel, SubEvents(recorded)).subscribe()
        await recorded.wait("subscribed")

        first = api.publish(PublishRequest(channel=channel, data={"n": 1}, tags={"kind": "lift", "zone": "Ω"}, idempotency_key="order-1"))
        retry = api.publish(PublishRequest(channel=channel, data={"n": 1}, tags={"kind": "lift", "zone": "Ω"}, idempotency_key="order-1"))
        assert (retry.offset, retry.epoch) == (first.offset, first.epoch), "a retry answers the first result"
        skipped = api.publish(PublishRequest(channel=channel, data={"n": 2}, skip_history=True))
        assert skipped.offset == 0, "no stream position without history"
        versioned = server_api(server, "publish", {"channel": channel, "data": {"n": 3}, "version": 7, "version_epoch": "e"})
        older = server_api(server, "publish", {"channel": channel, "data": {"n": 4}, "version": 6, "version_epoch": "e"})
        assert versioned["offset"] == first.offset + 1 and older == versioned, "the older version is skipped"
        broadcast = api.broadcast(BroadcastRequest(channels=[channel], data={"n": 5}, tags={"kind": "piste"}))
        assert broadcast.responses[0].result.offset == versioned["offset"] + 1

        publications = [ctx.pub for ctx in await recorded.wait("publication", count=4)]
        assert [codec.into(p.data)["n"] for p in publications] == [1, 2, 3, 5], "one publication per key and version"
        assert [p.tags for p in publications] == [{"kind": "lift", "zone": "Ω"}, {}, {}, {"kind": "piste"}]
        assert publications[1].offset == 0, "the skipped publication has no offset"
        history = api.history(HistoryRequest(channel=channel, limit=-1))
        assert [p.data["n"] for p in history.publications] == [1, 3, 5]
        assert history.publications[0].tags == {"kind": "lift", "zone": "Ω"}

        for body, message in [
            ({"channel": channel, "data": 1, "skip_histroy": True}, "bad request: unknown field 'skip_histroy'"),
            ({"channel": channel, "data": 1, "tags": {"kind": 3}}, "bad request: tags.kind must be a string"),
            ({"channel": channel, "data": 1, "idempotency_key": "k" * 257}, "bad request: idempotency_key is 257 characters, more than 256"),
            ({"channel": "lobby:v", "data": 1, "version": 1}, "bad request: version needs the channel's stream: namespace 'lobby' keeps no history"),
        ]:
            answer = post(f"{server.api_url}/publish", body, {"X-API-Key": API_KEY})
            assert answer["error"] == {"code": 107, "message": message}, answer
        assert len(recorded.of("publication")) == 4, "refused publications published nothing"
        await client.disconnect()

    asyncio.run(scenario())


def test_transport_error_mode_answers_http_statuses(server):
    import urllib.error
    headers = {"X-API-Key": API_KEY, "X-Centrifugo-Error-Mode": "transport"}
    for body, status, code in [({"channel": "nowhere:x", "data": 1}, 404, 102), ({"channel": "room:x", "data": 1, "colour": 1}, 400, 107)]:
        with pytest.raises(urllib.error.HTTPError) as refused:
            post(f"{server.api_url}/publish", body, headers)
        assert refused.value.code == status
        assert json.loads(refused.value.read())["code"] == code
    assert "offset" in post(f"{server.api_url}/publish", {"channel": "room:x", "data": 1}, headers)["result"]
