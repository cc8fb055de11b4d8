"""permessage-deflate with the official SDK (whose WebSocket library offers it) in both
encodings, alone and with fossil deltas; bad compressed input closes only its connection."""
import asyncio
import json
import tempfile

import pytest
import websockets
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from cent import Client as ApiClient, PublishRequest
from centrifuge import DeltaType

from conftest import API_KEY, Codec, launch
from helpers import Events, SubEvents, connected_client
from test_delta import frame


@pytest.fixture(scope="module", params=["shared", "own-context"])
def compressing(request):
    """A hub that compresses: by default each message on its own (no context takeover, a
    publication deflated once per event loop), or with every connection keeping its context."""
    settings = {"websocket_compression": True, "websocket_compression_min_bytes": 128,
                "websocket_compression_context_takeover": request.param == "own-context"}
    process, instance = launch(tempfile.mkdtemp(prefix="gondola-compression-"), settings=settings)
    instance.keeps_context = request.param == "own-context"
    yield instance
    process.terminate()
    process.wait(timeout=10)


async def test_the_handshake_negotiates_deflate_only_when_enabled(compressing, server):
    async with websockets.connect(compressing.ws_url) as ws:
        agreed = ws.response.headers.get("Sec-WebSocket-Extensions")
        # Without context takeover the server declares it for both sides, as RFC 7692 lets it.
        assert agreed == ("permessage-deflate" if compressing.keeps_context
                          else "permessage-deflate;client_no_context_takeover;server_no_context_takeover")
    async with websockets.connect(server.ws_url) as ws:
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None


@pytest.mark.parametrize("delta", [False, True])
async def test_sdk_publications_arrive_whole_through_deflate(compressing, codec, delta):
    channel = f"frames:deflate-{codec.name}-{delta}"
    options = {"delta": DeltaType.FOSSIL} if delta else {}
    client, _ = await connected_client(compressing, f"deflate-{codec.name}", codec)
    events = Events()
    sub = client.new_subscription(channel, SubEvents(events), **options)
    await sub.subscribe()
    await events.wait("subscribed")
    api = ApiClient(compressing.api_url, API_KEY)
    for n in range(10):
        api.publish(PublishRequest(channel=channel, data=frame(n)))
    received = await events.wait("publication", 10)
    assert [codec.into(p.pub.data) for p in received] == [frame(n) for n in range(10)]
    assert [p.pub.delta for p in received] == ([False] + [True] * 9 if delta else [False] * 10)
    # The client's own large messages go compressed too and come back intact: a publication of its
    # own, read by the server and sent back to it as a subscriber.
    room_events = Events()
    room = client.new_subscription(f"room:deflate-{codec.name}-{delta}", SubEvents(room_events))
    await room.subscribe()
    await room_events.wait("subscribed")
    large = {"text": "powder day " * 500}
    await room.publish(codec.out(large))
    assert [codec.into(p.pub.data) for p in await room_events.wait("publication")] == [large]
    await client.disconnect()


@pytest.mark.parametrize("offer", [{"server_no_context_takeover": True}, {"server_max_window_bits": 9},
                                   {"server_no_context_takeover": True, "server_max_window_bits": 10}])
async def test_the_clients_terms_for_the_servers_stream_are_kept(compressing, offer):
    # websockets inflates with exactly the window and context it agreed to: a frame that reaches
    # further back, or into an earlier message, fails to inflate and closes the connection.
    channel = f"frames:terms-{len(offer)}-{offer.get('server_max_window_bits', 15)}"
    factory = ClientPerMessageDeflateFactory(client_max_window_bits=True, **offer)
    async with websockets.connect(compressing.ws_url, extensions=[factory]) as ws:
        agreed = ws.response.headers.get("Sec-WebSocket-Extensions")
        expected = "server_no_context_takeover" in offer or not compressing.keeps_context
        assert ("server_no_context_takeover" in agreed) == expected
        await ws.send(json.dumps({"id": 1, "connect": {"token": compressing.token("terms")}}) + "\n"
                      + json.dumps({"id": 2, "subscribe": {"channel": channel}}))
        replies = []
        while len(replies) < 2:
            replies += [json.loads(line) for line in (await asyncio.wait_for(ws.recv(), 5)).splitlines()]
        assert [reply["id"] for reply in replies] == [1, 2]
        api = ApiClient(compressing.api_url, API_KEY)
        for n in range(30):
            api.publish(PublishRequest(channel=channel, data=frame(n)))
        received = []
        while len(received) < 30:
            received += [json.loads(line)["push"]["pub"]["data"] for line in (await asyncio.wait_for(ws.recv(), 5)).splitlines()]
        assert received == [frame(n) for n in range(30)]


async def test_a_message_inflating_past_the_limit_closes_only_its_connection(compressing):
    # The limit is 4x max_frame_bytes (8192) or 64 KiB; a megabyte of spaces deflates to about 1 KiB.
    async with websockets.connect(compressing.ws_url, max_size=None) as ws:
        await ws.send("[" + " " * 1_000_000 + "]")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await ws.recv()
        assert closed.value.rcvd.code == 1009
    client, _ = await connected_client(compressing, "after-bomb", Codec("json"))
    assert "ts" in (await client.rpc("server.time", {})).data
    await client.disconnect()
