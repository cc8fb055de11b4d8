"""One transport's figures against a fresh hub: opens N idle sessions (connect and subscribe to one
channel in the opening request: a WebSocket frame, an HTTP-streaming body, an SSE `cf_connect`),
reads the hub's RSS growth per session, then publishes to the channel through the server API at a
fixed rate and counts what every session receives: deliveries/s, the hub's CPU per delivery, and
the time from a publication until its last delivery. Raw asyncio sockets, written from the
transport docs, so the client's own cost per connection stays small. Prints the figures as a JSON
object, then as a row of the benchmark's table."""
import argparse
import asyncio
import base64
import json
import os
import time
import urllib.parse
import urllib.request

from bench_common import cpu_seconds, token

CHANNEL = "bench:fan"


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def commands(secret, user):
    return (json.dumps({"id": 1, "connect": {"token": token(secret, user)}}) + "\n"
            + json.dumps({"id": 2, "subscribe": {"channel": CHANNEL}})).encode()


class Session:
    """One connection; `delivered` counts publications, `last` keeps each publication's latest arrival."""

    def __init__(self):
        self.subscribed = asyncio.Event()
        self.delivered = 0

    async def open(self, port, transport, body, stats):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        if transport == "websocket":
            key = base64.b64encode(os.urandom(16)).decode()
            self.writer.write((f"GET /connection/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
            length = len(body)
            header = bytes([0x81, 0x80 | 126]) + length.to_bytes(2, "big") if length >= 126 else bytes([0x81, 0x80 | length])
            self.writer.write(header + b"\0\0\0\0" + body)
        elif transport == "http_stream":
            self.writer.write((f"POST /connection/http_stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
        else:
            query = urllib.parse.quote(body.decode())
            self.writer.write(f"GET /connection/sse?cf_connect={query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        await self.writer.drain()
        await self.reader.readuntil(b"\r\n\r\n")
        asyncio.get_running_loop().create_task(self.read(stats))

    async def read(self, stats):
        # Publications and replies are found by their text: each carries `"pub"` or `"id":2` once,
        # whatever the framing around them (WebSocket frames, chunks, SSE events).
        carry = b""
        while True:
            chunk = await self.reader.read(65536)
            if not chunk:
                return
            data = carry + chunk
            if not self.subscribed.is_set() and b'"id":2' in data:
                self.subscribed.set()
            count = data.count(b'"pub":') - carry.count(b'"pub":')
            if count > 0:
                self.delivered += count
                stats["deliveries"] += count
                stats["last_delivery"] = time.monotonic()
            carry = data[-16:]

    def close(self):
        self.writer.close()


def publish(port, data):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/publish", data=json.dumps({"channel": CHANNEL, "data": data}).encode(),
                                     headers={"X-API-Key": "bench", "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--transport", choices=["websocket", "http_stream", "sse"], required=True)
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--rate", type=float, default=2.0, help="publications a second during the fan-out")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()

    stats = {"deliveries": 0, "last_delivery": 0.0}
    await asyncio.sleep(1)
    before = rss_kib(args.server_pid)
    sessions = [Session() for _ in range(args.connections)]
    opened = time.monotonic()
    batch = 200
    for start in range(0, len(sessions), batch):
        await asyncio.gather(*(session.open(args.port, args.transport, commands(args.secret, f"u{start + i}"), stats)
                               for i, session in enumerate(sessions[start:start + batch])))
    await asyncio.wait_for(asyncio.gather(*(session.subscribed.wait() for session in sessions)), 120)
    open_seconds = time.monotonic() - opened
    await asyncio.sleep(2)
    idle = rss_kib(args.server_pid)

    loop = asyncio.get_running_loop()
    cpu_before = cpu_seconds(args.server_pid)
    started = time.monotonic()
    published = 0
    tails = []
    interval = 1 / args.rate
    while time.monotonic() - started < args.seconds:
        target = (published + 1) * args.connections
        sent = time.monotonic()
        await loop.run_in_executor(None, publish, args.port, {"n": published})
        published += 1
        deadline = sent + 30
        while stats["deliveries"] < target and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        tails.append(stats["last_delivery"] - sent)
        await asyncio.sleep(max(0, started + published * interval - time.monotonic()))
    elapsed = time.monotonic() - started
    cpu = cpu_seconds(args.server_pid) - cpu_before
    expected = published * args.connections
    for session in sessions:
        session.close()
    tails.sort()
    result = {
        "transport": args.transport, "connections": args.connections, "open_seconds": round(open_seconds, 1),
        "rss_before_kib": before, "rss_idle_kib": idle, "kib_per_session": round((idle - before) / args.connections, 2),
        "published": published, "deliveries": stats["deliveries"], "expected": expected,
        "deliveries_per_second": round(stats["deliveries"] / elapsed), "cpu_us_per_delivery": round(cpu / max(1, stats["deliveries"]) * 1e6, 2),
        "last_delivery_p50_ms": round(tails[len(tails) // 2] * 1000, 1), "last_delivery_max_ms": round(tails[-1] * 1000, 1),
    }
    print(json.dumps(result))
    r = result
    print(f"| {r['transport']} | {r['connections']:,} | {r['kib_per_session']} KiB | {r['deliveries']:,} of {r['expected']:,} "
          f"| {r['deliveries_per_second']:,} | {r['cpu_us_per_delivery']} µs | {r['last_delivery_p50_ms']} / {r['last_delivery_max_ms']} ms |")


asyncio.run(main())
