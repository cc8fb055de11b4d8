"""Drives Scripts/bench-forms: documents edited by 5 clients each, every client setting its own
field in a loop while subscribed to the document. Prints Markdown table rows."""
import argparse
import asyncio
import time

from bench_common import cpu_seconds, token
from centrifuge import Client, SubscriptionEventHandler

FIELDS = [("daysOutOfWater", lambda n: n % 3000), ("distanceTravelledKm", lambda n: (n % 5000) / 4),
          ("numberOfPeopleInParty", lambda n: 1 + n % 20), ("previousWaterbody", lambda n: f"Lake {n % 1000}"),
          ("generalComment", lambda n: f"Comment number {n}")]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


class Counter(SubscriptionEventHandler):
    def __init__(self, counts):
        self.counts = counts

    async def on_publication(self, ctx):
        self.counts[0] += 1


async def main(args):
    url = f"ws://127.0.0.1:{args.port}/connection/websocket"
    owners, docs = [], []
    for d in range(args.docs):
        owner = Client(url, token=token(args.secret, f"owner-{d}"))
        await owner.connect()
        doc = (await owner.rpc("form.create", {"schema": "watercraft_inspection"})).data["id"]
        for e in range(1, 5):
            await owner.rpc("form.share", {"doc": doc, "user": f"editor-{d}-{e}"})
        owners.append(owner)
        docs.append(doc)
    pushes = [0]
    editors = []
    for d, doc in enumerate(docs):
        for e in range(5):
            client = owners[d] if e == 0 else Client(url, token=token(args.secret, f"editor-{d}-{e}"))
            if e:
                await client.connect()
            await client.new_subscription(f"form:{doc}", Counter(pushes)).subscribe()
            editors.append((client, doc, FIELDS[e]))
    latencies = []
    deadline = time.perf_counter() + args.seconds

    async def edit(client, doc, field):
        key, value = field
        version, n = 0, 0
        while time.perf_counter() < deadline and n < 100_000:
            started = time.perf_counter()
            answer = (await client.rpc("form.set", {"doc": doc, "key": key, "value": value(n), "base_version": version})).data
            latencies.append(time.perf_counter() - started)
            version = answer["version"]
            n += 1

    await asyncio.sleep(0.5)
    pushes[0] = 0
    cpu_before, started = cpu_seconds(args.server_pid), time.perf_counter()
    await asyncio.gather(*(edit(*editor) for editor in editors))
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(args.server_pid) - cpu_before
    await asyncio.sleep(0.5)
    for client, _, _ in editors:
        await client.disconnect()
    print(f"| form.set, {args.docs} documents × 5 clients each editing its own field | {len(latencies) / elapsed:.0f} round trips/s, "
          f"p50 {percentile(latencies, 0.5) * 1000:.1f} ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms |")
    print(f"| pushes on form:<doc> (5 subscribers per document) | {pushes[0] / elapsed:.0f} received/s |")
    print(f"| server CPU per form.set (validation, visibility, SQLite commit, 5 pushes) | {cpu * 1e6 / len(latencies):.0f} µs |")


parser = argparse.ArgumentParser()
for name in ("port", "server-pid", "docs", "seconds"):
    parser.add_argument(f"--{name}", type=int, required=True)
parser.add_argument("--secret", required=True)
asyncio.run(main(parser.parse_args()))
