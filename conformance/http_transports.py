"""A client of the HTTP transports written from Centrifugo's transport docs, not an SDK: it opens
/connection/http_stream (JSON lines, or varint-length-prefixed Protobuf Replies) or /connection/sse
(`data:` events) with the connect command as the request, reads the server's messages off the
streamed answer, and posts later commands to /emulation with the session and node the connect
reply named. Protobuf uses centrifuge-python's generated protocol messages."""
import asyncio
import json

import aiohttp
from centrifuge.protocol import client_pb2
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.json_format import MessageToDict, ParseDict


def encode_commands(commands, protobuf):
    """Commands (dicts in the JSON protocol's shape) as one request body."""
    if not protobuf:
        return "\n".join(json.dumps(command) for command in commands).encode()
    body = b""
    for command in commands:
        message = ParseDict(command, client_pb2.Command()).SerializeToString()
        body += _VarintBytes(len(message)) + message
    return body


class HTTPStream:
    def __init__(self, http, response, protobuf, sse):
        self.http = http
        self.response = response
        self.protobuf = protobuf
        self.sse = sse
        self.buffer = b""
        self.session = ""
        self.node = ""

    @classmethod
    async def open(cls, base_url, commands, protobuf=False, sse=False):
        http = aiohttp.ClientSession()
        headers = {"Content-Type": "application/octet-stream" if protobuf else "application/json"}
        path = "/connection/sse" if sse else "/connection/http_stream"
        response = await http.post(base_url + path, data=encode_commands(commands, protobuf), headers=headers)
        assert response.status == 200, await response.text()
        return cls(http, response, protobuf, sse)

    async def next(self, timeout=10):
        """The next message as a dict in the JSON protocol's shape (Protobuf ones converted); None at the end."""
        while True:
            message = self._take()
            if message is not None:
                return message
            chunk = await asyncio.wait_for(self.response.content.readany(), timeout)
            if not chunk:
                return None
            self.buffer += chunk

    async def until(self, predicate, timeout=10):
        seen = []
        while True:
            message = await self.next(timeout)
            assert message is not None, f"the stream ended after {seen}"
            seen.append(message)
            if predicate(message):
                return seen

    async def connected(self):
        reply = await self.next()
        self.session, self.node = reply["connect"]["session"], reply["connect"]["node"]
        return reply["connect"]

    def _take(self):
        if self.sse:
            self.buffer = self.buffer.lstrip(b"\r\n")
            end = self.buffer.find(b"\n\n")
            if end < 0:
                return None
            event, self.buffer = self.buffer[:end], self.buffer[end + 2:]
            assert event.startswith(b"data: "), event
            return json.loads(event[6:])
        if not self.protobuf:
            end = self.buffer.find(b"\n")
            if end < 0:
                return None
            line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
            return json.loads(line)
        if not self.buffer:
            return None
        try:
            length, start = _DecodeVarint32(self.buffer, 0)
        except IndexError:
            return None
        if len(self.buffer) < start + length:
            return None
        reply = client_pb2.Reply.FromString(self.buffer[start:start + length])
        self.buffer = self.buffer[start + length:]
        return MessageToDict(reply, preserving_proto_field_name=True)

    async def close(self):
        self.response.close()
        await self.http.close()


async def emulate(base_url, node, session, commands, protobuf=False):
    """Posts commands to /emulation as the SDKs do; answers the HTTP status and body."""
    async with aiohttp.ClientSession() as http:
        if protobuf:
            body = client_pb2.EmulationRequest(node=node, session=session, data=encode_commands(commands, True)).SerializeToString()
            headers = {"Content-Type": "application/octet-stream"}
        else:
            body = json.dumps({"node": node, "session": session, "data": encode_commands(commands, False).decode()})
            headers = {"Content-Type": "application/json"}
        async with http.post(base_url + "/emulation", data=body, headers=headers) as response:
            return response.status, await response.text()
