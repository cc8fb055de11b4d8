"""Every bad input closes (or answers) only the offending connection with the
documented code, and the server keeps serving a healthy SDK client."""
import asyncio
import base64
import json

import pytest
import websockets
from centrifuge.protocol import client_pb2 as pb

from conftest import Codec
from helpers import Events, SubEvents, connected_client


async def close_code(server, frames, read_first=0, subprotocols=None):
    """Sends frames over a raw WebSocket and returns (close code, reason, messages)."""
    messages = []
    async with websockets.connect(server.ws_url, max_size=None, subprotocols=subprotocols) as ws:
        try:
            for frame in frames:
                await ws.send(frame)
                for _ in range(read_first):
                    messages.append(await asyncio.wait_for(ws.recv(), 5))
                read_first = 0
            while True:
                messages.append(await asyncio.wait_for(ws.recv(), 5))
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code, closed.rcvd.reason, messages


def connect(server, user="eve", id=1):
    return json.dumps({"id": id, "connect": {"token": server.token(user)}})


async def assert_healthy(server):
    """An SDK client of each encoding still connects, subscribes, publishes and receives."""
    for codec in (Codec("json"), Codec("protobuf")):
        client, _ = await connected_client(server, "healthy", codec)
        sub_events = Events()
        sub = client.new_subscription(f"room:health-{codec.name}", SubEvents(sub_events))
        await sub.subscribe()
        await sub_events.wait("subscribed")
        await sub.publish(codec.out({"ok": True}))
        received = await sub_events.wait("publication")
        assert codec.into(received[0].pub.data) == {"ok": True}
        await client.disconnect()
    assert server.healthy()


@pytest.mark.parametrize("name,frames,code,reason", [
    ("invalid json", ["{not json"], 3501, "invalid JSON"),
    ("command before connect", ['{"id":1,"subscribe":{"channel":"room:x"}}'], 3501, "first command must be connect"),
    ("unknown command", [None, '{"id":2,"teleport":{}}'], 3501, "teleport"),
    ("wrong field type", ['{"id":1,"connect":{"token":5}}'], 3501, "connect.token must be a string"),
    ("bad token", ['{"id":1,"connect":{"token":"x.y.z"}}'], 3500, "invalid token"),
    ("oversized frame", [None, "[" + " " * 9000 + "]"], 3501, "exceeds max_frame_bytes 8192"),
])
async def test_bad_frames(server, name, frames, code, reason):
    frames = [connect(server) if f is None else f for f in frames]
    got_code, got_reason, _ = await close_code(server, frames, read_first=1 if frames[0].startswith('{"id": 1, "connect"') else 0)
    assert got_code == code, name
    assert reason in got_reason, got_reason
    await assert_healthy(server)


async def test_binary_frame_on_json_connection(server):
    got_code, got_reason, _ = await close_code(server, [connect(server), b"\x00\x01"], read_first=1)
    assert got_code == 3506 and "binary" in got_reason
    await assert_healthy(server)


async def test_repeated_errors_close_with_3509(server):
    bad_calls = "\n".join(json.dumps({"id": n, "rpc": {"method": "missing"}}) for n in range(2, 30))
    got_code, _, messages = await close_code(server, [connect(server), bad_calls], read_first=1)
    assert got_code == 3509
    assert any('"code":104' in m for m in messages)
    await assert_healthy(server)


async def test_command_flood_gets_111_then_3013(server):
    # Three frames of 300 pings, each under max_frame_bytes: 200 pass (the burst), then 111s, then 3013.
    floods = ["\n".join(json.dumps({"id": n, "ping": {}}) for n in range(start, start + 300)) for start in (2, 302, 602)]
    got_code, _, messages = await close_code(server, [connect(server)] + floods, read_first=1)
    assert got_code == 3013
    refused = [json.loads(line) for m in messages for line in m.split("\n") if '"code":111' in line]
    assert refused and all(r["id"] > 1 for r in refused), "each refused command is answered with its own id"
    await assert_healthy(server)


async def test_silent_client_is_closed_with_3012(server):
    async with websockets.connect(server.ws_url) as ws:
        await ws.send(connect(server))
        reply = json.loads(await asyncio.wait_for(ws.recv(), 5))
        assert reply["connect"]["ping"] == 2 and reply["connect"]["pong"] is True
        ping = await asyncio.wait_for(ws.recv(), 5)
        assert ping == "{}"
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd.code == 3012
    await assert_healthy(server)


async def test_subscribe_errors_keep_the_connection(server):
    async with websockets.connect(server.ws_url) as ws:
        await ws.send(connect(server) + "\n" + "\n".join([
            json.dumps({"id": 2, "subscribe": {"channel": "nowhere:1"}}),
            json.dumps({"id": 3, "subscribe": {"channel": "room:has space"}}),
            json.dumps({"id": 4, "subscribe": {"channel": "personal:#someone-else"}}),
            json.dumps({"id": 5, "publish": {"channel": "room:not-subscribed", "data": 1}}),
            json.dumps({"id": 6, "ping": {}}),
            json.dumps({"id": 7, "subscribe": {"channel": "room:delta", "delta": "xdelta"}}),
        ]))
        replies = {}
        while len(replies) < 7:
            for line in (await asyncio.wait_for(ws.recv(), 5)).split("\n"):
                message = json.loads(line)
                if "id" in message:
                    replies[message["id"]] = message
        assert replies[2]["error"]["code"] == 102
        assert replies[3]["error"]["code"] == 107
        assert replies[4]["error"]["code"] == 103
        assert replies[5]["error"]["code"] == 103
        assert "ping" in replies[6]
        assert replies[7]["error"]["code"] == 107 and "subscribe.delta 'xdelta'" in replies[7]["error"]["message"]
    await assert_healthy(server)


# Protobuf connections: the same rules for binary frames of length-prefixed Commands.

PROTOBUF = ["centrifuge-protobuf"]


def varint(number):
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def framed(message):
    """A Command message (or raw bytes) preceded by its length."""
    data = message if isinstance(message, bytes) else message.SerializeToString()
    return varint(len(data)) + data


def pb_connect(server, user="eve"):
    command = pb.Command(id=1)
    command.connect.token = server.token(user)
    return framed(command)


async def test_protobuf_handshake_answers_the_subprotocol(server):
    async with websockets.connect(server.ws_url, subprotocols=PROTOBUF) as ws:
        assert ws.subprotocol == "centrifuge-protobuf"
        await ws.send(pb_connect(server))
        frame = await asyncio.wait_for(ws.recv(), 5)
        assert isinstance(frame, bytes)
        reply = pb.Reply()
        reply.ParseFromString(frame[1:] if frame[0] < 0x80 else frame[2:])
        assert reply.id == 1 and reply.connect.client and reply.connect.ping == 2 and reply.connect.pong


async def test_unknown_format_closes_with_3501_naming_it(server):
    async with websockets.connect(server.ws_url + "?format=xml") as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 5)
    assert closed.value.rcvd.code == 3501
    assert closed.value.rcvd.reason == "bad request: format must be json or protobuf, got 'xml'"
    await assert_healthy(server)


def unknown_method():
    # id 2 and field 20 (varint 1): no method of the protocol has that number.
    return framed(b"\x08\x02\xa0\x01\x01")


@pytest.mark.parametrize("name,frames,code,reason", [
    ("truncated varint", [None, b"\x80"], 3501, "truncated length prefix"),
    ("length past the frame", [None, b"\x09\x08\x02"], 3501, "remain in the frame"),
    ("unknown method number", [None, unknown_method()], 3501, "unknown method"),
    ("not a Command", [None, framed(b"\xff\xff\xff")], 3501, "not a Protobuf Command"),
    ("command before connect", [framed(pb.Command(id=1, subscribe=pb.SubscribeRequest(channel="room:x")))], 3501, "first command must be connect"),
    ("text frame", [None, '{"id":2,"ping":{}}'], 3501, "text frame on a Protobuf connection"),
    ("oversized frame", [None, framed(pb.Command(id=2, publish=pb.PublishRequest(channel="room:x", data=b"1" * 9000)))], 3501, "exceeds max_frame_bytes 8192"),
])
async def test_bad_protobuf_frames(server, name, frames, code, reason):
    frames = [pb_connect(server) if f is None else f for f in frames]
    connects_first = len(frames) > 1
    got_code, got_reason, _ = await close_code(server, frames, read_first=1 if connects_first else 0, subprotocols=PROTOBUF)
    assert got_code == code, name
    assert reason in got_reason, got_reason
    await assert_healthy(server)


async def test_protobuf_rpc_data_that_is_not_json_is_refused_with_107_while_any_publication_passes(server, codec):
    # A Protobuf client's RPC data must be JSON (a domain reads it): 107, and the connection
    # stays. A publication may be any bytes: subscribers get them (JSON ones as base64).
    watcher, _ = await connected_client(server, "watcher", codec)
    watcher_events = Events()
    watch = watcher.new_subscription("room:payloads", SubEvents(watcher_events))
    await watch.subscribe()
    await watcher_events.wait("subscribed")
    async with websockets.connect(server.ws_url, subprotocols=PROTOBUF) as ws:
        await ws.send(pb_connect(server, "sender"))
        await asyncio.wait_for(ws.recv(), 5)
        subscribe = pb.Command(id=2, subscribe=pb.SubscribeRequest(channel="room:payloads"))
        bad = pb.Command(id=3, rpc=pb.RPCRequest(method="server.time", data=b"{not json"))
        binary = pb.Command(id=4, publish=pb.PublishRequest(channel="room:payloads", data=b"{not json"))
        await ws.send(framed(subscribe) + framed(bad) + framed(binary))
        replies = {}
        while len(replies) < 3:
            frame = await asyncio.wait_for(ws.recv(), 5)
            position = 0
            while position < len(frame):
                length, shift = 0, 0
                while True:
                    byte = frame[position]
                    position += 1
                    length |= (byte & 0x7F) << shift
                    shift += 7
                    if byte < 0x80:
                        break
                reply = pb.Reply()
                reply.ParseFromString(frame[position:position + length])
                position += length
                if reply.id:
                    replies[reply.id] = reply
        assert replies[3].error.code == 107 and "rpc.data is not JSON" in replies[3].error.message
        assert replies[4].HasField("publish")
    received = await watcher_events.wait("publication")
    expected = b"{not json" if codec.protobuf else base64.b64encode(b"{not json").decode()
    assert [p.pub.data for p in received] == [expected]
    await watcher.disconnect()
    await assert_healthy(server)
