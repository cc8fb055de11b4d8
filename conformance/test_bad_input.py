"""Every bad input closes (or answers) only the offending connection with the
documented code, and the server keeps serving a healthy SDK client."""
import asyncio
import json

import pytest
import websockets
from helpers import Events, SubEvents, connected_client


async def close_code(server, frames, binary=False, read_first=0):
    """Sends frames over a raw WebSocket and returns (close code, reason, messages)."""
    messages = []
    async with websockets.connect(server.ws_url, max_size=None) as ws:
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
    client, _ = await connected_client(server, "healthy")
    sub_events = Events()
    sub = client.new_subscription("room:health", SubEvents(sub_events))
    await sub.subscribe()
    await sub_events.wait("subscribed")
    await sub.publish({"ok": True})
    await sub_events.wait("publication")
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
        ]))
        replies = {}
        while len(replies) < 6:
            for line in (await asyncio.wait_for(ws.recv(), 5)).split("\n"):
                message = json.loads(line)
                if "id" in message:
                    replies[message["id"]] = message
        assert replies[2]["error"]["code"] == 102
        assert replies[3]["error"]["code"] == 107
        assert replies[4]["error"]["code"] == 103
        assert replies[5]["error"]["code"] == 103
        assert "ping" in replies[6]
    await assert_healthy(server)
