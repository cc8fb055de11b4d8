"""Failover time of a Gondola cluster (used by Scripts/bench-cluster): CLIENTS centrifuge-python
clients reach node 2 through a TCP forwarder standing in for a load balancer, each subscribed to a
recoverable channel while the server API publishes 20 publications a second; node 2 is killed with
-9 and the forwarder sends new connections to node 3. For each client: the time from the kill to
its subscription being recovered on node 3. Checks that every client received every acknowledged
publication exactly once, in order. Prints one JSON object.

  bench-failover.py --folder CLUSTER_FOLDER --port FIRST_NODE_PORT --secret SECRET --api-key KEY
                    --binary GONDOLA --clients N
"""
import argparse
import asyncio
import json
import statistics
import subprocess
import threading
import time
import os
import sys
import urllib.request

from centrifuge import Client, ClientEventHandler, SubscriptionEventHandler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conformance"))
from switching_proxy import SwitchingProxy  # noqa: E402


class Watcher(SubscriptionEventHandler):
    def __init__(self):
        self.offsets = []
        self.recovered_at = None
        self.subscriptions = 0

    async def on_subscribed(self, ctx):
        self.subscriptions += 1
        if self.subscriptions > 1 and ctx.recovered:
            self.recovered_at = time.time()

    async def on_publication(self, ctx):
        self.offsets.append(ctx.pub.offset)


def publish(api_url, key, channel, n):
    request = urllib.request.Request(f"{api_url}/publish", data=json.dumps({"channel": channel, "data": {"n": n}}).encode(),
                                     headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["result"]["offset"]


async def main(arguments):
    ports = [arguments.port + index for index in range(3)]
    forwarder = SwitchingProxy(ports[1])
    front = await forwarder.start()
    channel = "recover:failover"
    clients, watchers = [], []
    for index in range(arguments.clients):
        token = subprocess.run([arguments.binary, "token", "--user", f"failover{index}", "--token-hmac-secret", arguments.secret,
                                "--api-key", arguments.api_key], check=True, capture_output=True, text=True).stdout.strip()
        client = Client(f"ws://127.0.0.1:{front}/connection/websocket", events=ClientEventHandler(), token=token)
        watcher = Watcher()
        subscription = client.new_subscription(channel, watcher, recoverable=True)
        await client.connect()
        await subscription.subscribe()
        clients.append(client)
        watchers.append(watcher)
    while any(w.subscriptions == 0 for w in watchers):
        await asyncio.sleep(0.05)

    acknowledged, stop = [], threading.Event()
    api_url = f"http://127.0.0.1:{ports[0]}/api"

    def publisher():
        n = 0
        while not stop.is_set() and n < 2000:
            acknowledged.append(publish(api_url, arguments.api_key, channel, n))
            n += 1
            time.sleep(0.05)

    thread = threading.Thread(target=publisher)
    thread.start()
    await asyncio.sleep(2)
    killed_at = time.time()
    subprocess.run(["Scripts/cluster", "kill", "2", "--folder", arguments.folder], check=True)
    forwarder.target = ports[2]
    deadline = time.time() + 60
    while any(w.recovered_at is None for w in watchers) and time.time() < deadline:
        await asyncio.sleep(0.02)
    await asyncio.sleep(2)
    stop.set()
    thread.join()
    await asyncio.sleep(1)
    times = sorted(w.recovered_at - killed_at for w in watchers if w.recovered_at)
    complete = sum(1 for w in watchers if w.offsets == sorted(acknowledged))
    for client in clients:
        try:
            await asyncio.wait_for(client.disconnect(), 2)
        except Exception:
            pass
    print(json.dumps({
        "clients": arguments.clients, "recovered": len(times), "complete": complete, "publications": len(acknowledged),
        "p50": statistics.median(times) if times else None,
        "p99": times[min(len(times) - 1, int(len(times) * 0.99))] if times else None,
        "max": times[-1] if times else None,
    }))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("folder", "secret", "api-key", "binary"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--clients", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
