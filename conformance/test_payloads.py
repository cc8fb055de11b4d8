"""Payloads pass byte for byte: what the server API, a JSON client or a Protobuf client
publishes is what subscribers of both encodings read — live, through history and through
recovery — with its white space, number spellings and escapes; binary payloads (Protobuf
clients, the server API's b64data) pass through Protobuf untouched and reach JSON clients
as a base64 string."""
import asyncio
import base64
import json
import urllib.request

import websockets
from centrifuge import StreamPosition

from conftest import API_KEY, Codec
from helpers import Events, SubEvents, connected_client
from test_encodings import subscribed_client

JSON, PROTOBUF = Codec("json"), Codec("protobuf")

SPELLED = '{"input": "x", "price": 1.50, "big": 12345678901234567890, "e": "\\u00e9", "s": "\\/"}'
BINARY = bytes([0x0A, 0x03, 0x66, 0x6F, 0x6F, 0x10, 0xFF, 0x01, 0x00, 0xC3, 0x28])


def post_text(server, method, body):
    """POSTs `body` exactly as given to a server API method; answers the answer's text."""
    request = urllib.request.Request(f"{server.api_url}/{method}", data=body.encode(),
                                     headers={"Content-Type": "application/json", "X-API-Key": API_KEY})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


class RawJSONClient:
    """A JSON-protocol client on a plain WebSocket, so a test sees the frames' bytes."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 1
        self.publications = []

    @classmethod
    async def connect(cls, server, user):
        client = cls(await websockets.connect(server.ws_url))
        await client.call({"connect": {"token": server.token(user)}})
        return client

    async def call(self, body):
        command_id = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps(dict(body, id=command_id)))
        while True:
            for line in (await asyncio.wait_for(self.ws.recv(), 5)).split("\n"):
                if not line.strip():
                    continue
                if '"push"' in line and '"pub"' in line:
                    self.publications.append(line)
                elif json.loads(line).get("id") == command_id:
                    return line

    async def wait_publications(self, count):
        while len(self.publications) < count:
            for line in (await asyncio.wait_for(self.ws.recv(), 5)).split("\n"):
                if '"push"' in line and '"pub"' in line:
                    self.publications.append(line)
        return self.publications


async def test_json_payloads_keep_their_spelling_in_both_encodings(server):
    channel = "room:spelled"
    pb_client, pb_sub, pb_events = await subscribed_client(server, "spell-pb", PROTOBUF, channel)
    raw = await RawJSONClient.connect(server, "spell-json")
    await raw.call({"subscribe": {"channel": channel}})
    # The server API's body and the JSON client's frame carry the payload exactly as typed.
    post_text(server, "publish", '{"channel": "%s", "data": %s}' % (channel, SPELLED))
    frame = '{"id": 90, "publish": {"channel": "%s", "data": %s}}' % (channel, SPELLED.replace("1.50", "2.50"))
    await raw.ws.send(frame)

    published = [SPELLED.encode(), SPELLED.replace("1.50", "2.50").encode()]
    received = await pb_events.wait("publication", 2)
    assert [p.pub.data for p in received] == published
    lines = await raw.wait_publications(2)
    for line, payload in zip(lines, published):
        assert '"data":' + payload.decode() in line, line
    history = await pb_sub.history(limit=10)
    assert [p.data for p in history.publications] == published
    # The server API's history answers the same bytes.
    assert '"data":' + SPELLED in post_text(server, "history", '{"channel": "%s", "limit": 10}' % channel)
    await raw.ws.close()
    await pb_client.disconnect()


async def test_binary_payloads_pass_through_protobuf_and_reach_json_clients_as_base64(server):
    channel = "room:binary"
    publisher, pub_sub, pub_events = await subscribed_client(server, "bin-pub", PROTOBUF, channel)
    json_client, _ = await connected_client(server, "bin-json", JSON)
    json_events = Events()
    json_sub = json_client.new_subscription(channel, SubEvents(json_events), recoverable=True)
    await json_sub.subscribe()
    await json_events.wait("subscribed")

    await pub_sub.publish(BINARY)
    post_text(server, "publish", json.dumps({"channel": channel, "b64data": base64.b64encode(BINARY[::-1]).decode()}))
    expected = [BINARY, BINARY[::-1]]
    assert [p.pub.data for p in await pub_events.wait("publication", 2)] == expected
    as_text = [base64.b64encode(b).decode() for b in expected]
    assert [p.pub.data for p in await json_events.wait("publication", 2)] == as_text
    history = await pub_sub.history(limit=10)
    assert [p.data for p in history.publications] == expected
    epoch = history.epoch
    await publisher.disconnect()

    # A Protobuf subscriber coming back from offset 1 recovers the second as it was sent.
    late, _ = await connected_client(server, "bin-late", PROTOBUF)
    late_events = Events()

    async def get_state(_channel):
        return StreamPosition(offset=1, epoch=epoch)

    sub = late.new_subscription(channel, SubEvents(late_events), recoverable=True, get_state=get_state)
    await sub.subscribe()
    subscribed = (await late_events.wait("subscribed"))[0]
    assert subscribed.recovered
    assert [p.pub.data for p in await late_events.wait("publication", 1)] == [BINARY[::-1]]
    await late.disconnect()
    await json_client.disconnect()
