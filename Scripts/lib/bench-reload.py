"""Times configuration reloads of a running hub under many open WebSocket connections: the clients
subscribe to `room` channels, the file is rewritten with `room` closed to clients and the hub gets
SIGHUP; the time is from the signal to the last client reading its unsubscribe push (2000). The
namespace is opened again, the clients subscribe again, and the next round starts. Prints the
table rows for Scripts/bench-reload."""
import argparse
import asyncio
import json
import os
import resource
import signal
import statistics
import sys
import time

import jwt
import websockets


async def client(url, token, channel, unsubscribed):
    ws = await websockets.connect(url, max_queue=None)
    await ws.send(json.dumps({"id": 1, "connect": {"token": token}}))
    await ws.send(json.dumps({"id": 2, "subscribe": {"channel": channel}}))
    ids = iter(range(3, 1 << 30))
    subscribed = asyncio.Event()

    async def read():
        async for message in ws:
            for line in message.splitlines():
                frame = json.loads(line)
                if frame == {}:
                    await ws.send("{}")
                elif "subscribe" in frame:
                    subscribed.set()
                elif "unsubscribe" in frame.get("push", {}):
                    subscribed.clear()
                    unsubscribed.append(time.monotonic())
                elif "error" in frame:
                    raise RuntimeError(f"{channel}: {frame}")
    reader = asyncio.create_task(read())

    async def resubscribe():
        await ws.send(json.dumps({"id": next(ids), "subscribe": {"channel": channel}}))
        await asyncio.wait_for(subscribed.wait(), 30)
    await asyncio.wait_for(subscribed.wait(), 30)
    return ws, reader, resubscribe


def write_config(path, config, open_room):
    for namespace in config["namespaces"]:
        if namespace["name"] == "room":
            namespace["allow_subscribe_for_client"] = open_room
    with open(path, "w") as f:
        json.dump(config, f)


async def main():
    arguments = argparse.ArgumentParser()
    arguments.add_argument("--url", required=True)
    arguments.add_argument("--config", required=True)
    arguments.add_argument("--secret", required=True)
    arguments.add_argument("--server-pid", type=int, required=True)
    arguments.add_argument("--log", required=True)
    arguments.add_argument("--connections", type=int, default=1000)
    arguments.add_argument("--rounds", type=int, default=5)
    options = arguments.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, options.connections + 1024)), hard))
    token = jwt.encode({"sub": "bench"}, options.secret, algorithm="HS256")
    config = json.load(open(options.config))
    unsubscribed = []
    clients = []
    for start in range(0, options.connections, 100):
        clients += await asyncio.gather(*(client(options.url, token, f"room:r{i % 10}", unsubscribed)
                                          for i in range(start, min(start + 100, options.connections))))
    times = []
    for _ in range(options.rounds):
        unsubscribed.clear()
        write_config(options.config, config, open_room=False)
        sent = time.monotonic()
        os.kill(options.server_pid, signal.SIGHUP)
        deadline = sent + 60
        while len(unsubscribed) < options.connections:
            if time.monotonic() > deadline:
                sys.exit(f"only {len(unsubscribed)} of {options.connections} clients were told within 60 s")
            await asyncio.sleep(0.005)
        times.append((max(unsubscribed) - sent) * 1000)
        write_config(options.config, config, open_room=True)
        reloads = open(options.log).read().count("configuration reloaded")
        os.kill(options.server_pid, signal.SIGHUP)
        deadline = time.monotonic() + 60
        while open(options.log).read().count("configuration reloaded") <= reloads:
            if time.monotonic() > deadline:
                sys.exit("the hub did not log the reload that opens the namespace again")
            await asyncio.sleep(0.01)
        await asyncio.gather(*(resubscribe() for _, _, resubscribe in clients))
    closed = sum(ws.close_code is not None for ws, _, _ in clients)
    print(f"| connections kept open | {options.connections - closed} of {options.connections} |")
    print(f"| SIGHUP to the last unsubscribe read, ms ({options.rounds} rounds) | "
          f"median {statistics.median(times):.0f}, min {min(times):.0f}, max {max(times):.0f} |")
    for ws, reader, _ in clients:
        reader.cancel()
        await ws.close()

asyncio.run(main())
