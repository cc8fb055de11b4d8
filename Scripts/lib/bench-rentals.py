"""Drives Scripts/bench-rentals: writes the fleet file, then measures cars.near, cell-channel
updates and logins. Prints Markdown table rows."""
import argparse
import asyncio
import glob
import json
import math
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request

from centrifuge import Client, SubscriptionEventHandler

CENTER = (47.2654, 11.3927)


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def post(url, body, headers=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def cell(lat, lon):
    n = 1 << 15
    x = int((lon + 180) / 360 * n)
    y = int((1 - math.asinh(math.tan(math.radians(lat))) / math.pi) / 2 * n)
    return x, y


def fleet(args):
    """Cars scattered over 55 x 55 km, half of them within 5 km of the centre (a city and its valleys)."""
    rng = random.Random(15)
    cars = []
    for i in range(args.cars):
        spread = 0.045 if i % 2 else 0.25
        cars.append({"id": f"b{i}", "make": "Skoda", "model": "Octavia", "year": 2020 + i % 6, "seats": 5,
                     "price_per_day_cents": 3000 + rng.randrange(0, 12000, 100),
                     "lat": round(CENTER[0] + rng.uniform(-spread, spread), 6), "lon": round(CENTER[1] + rng.uniform(-spread, spread) * 1.47, 6)})
    with open(args.out, "w") as f:
        json.dump({"cars": cars}, f)


async def near_calls(args):
    rng = random.Random(7)
    latencies = []
    deadline = time.perf_counter() + args.seconds

    async def worker():
        client = Client(f"ws://127.0.0.1:{args.port}/connection/websocket", token=args.token)
        await client.connect()
        while time.perf_counter() < deadline and len(latencies) < 200_000:
            lat, lon = CENTER[0] + rng.uniform(-0.2, 0.2), CENTER[1] + rng.uniform(-0.3, 0.3)
            started = time.perf_counter()
            result = await client.rpc("cars.near", {"lat": lat, "lon": lon, "radius": 2000, "limit": 20})
            latencies.append(time.perf_counter() - started)
            assert "cars" in result.data
        await client.disconnect()

    cpu_before, started = cpu_seconds(args.server_pid), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(4)))
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(args.server_pid) - cpu_before
    return len(latencies) / elapsed, percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000, cpu * 1e6 / len(latencies)


class Received(SubscriptionEventHandler):
    def __init__(self, sink):
        self.sink = sink

    async def on_publication(self, ctx):
        self.sink.append((time.perf_counter(), ctx.pub.data))


async def cell_updates(args):
    cars = json.load(open(args.cars_file))["cars"]
    cx, cy = cell(*CENTER)
    block = {(cx + dx, cy + dy) for dx in range(-2, 3) for dy in range(-2, 3)}
    inside = [c for c in cars if cell(c["lat"], c["lon"]) in block]
    lat_span = [min(c["lat"] for c in inside), max(c["lat"] for c in inside)]
    lon_span = [min(c["lon"] for c in inside), max(c["lon"] for c in inside)]
    received, clients = [], []
    for i in range(40):
        client = Client(f"ws://127.0.0.1:{args.port}/connection/websocket", token=args.token)
        await client.connect()
        for x, y in block:
            await client.new_subscription(f"cars:{x}.{y}", Received(received)).subscribe()
        clients.append(client)
    rng = random.Random(3)
    sent, updates = {}, 0
    loop = asyncio.get_running_loop()
    deadline = time.perf_counter() + args.seconds
    cpu_before, started = cpu_seconds(args.server_pid), time.perf_counter()
    batch_number = 0
    while time.perf_counter() < deadline and batch_number < 10_000:
        batch = []
        for car in rng.sample(inside, 200):
            moved = dict(car, lat=round(rng.uniform(*lat_span), 6), lon=round(rng.uniform(*lon_span), 6),
                         price_per_day_cents=car["price_per_day_cents"] + batch_number % 7)
            batch.append(moved)
            sent[moved["id"]] = time.perf_counter()
        status, answer = await loop.run_in_executor(None, post, f"http://127.0.0.1:{args.port}/api/car_import", {"cars": batch}, {"X-API-Key": args.api_key})
        assert status == 200 and "result" in answer, answer
        updates += len(batch)
        batch_number += 1
    elapsed = time.perf_counter() - started
    await asyncio.sleep(1.0)
    cpu = cpu_seconds(args.server_pid) - cpu_before
    latencies = []
    for at, data in received:
        car = data.get("car", {}).get("id") or data.get("id")
        if car in sent and at >= sent[car]:
            latencies.append(at - sent[car])
    for client in clients:
        await client.disconnect()
    return updates / elapsed, len(received) / elapsed, percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000, cpu * 1e6 / updates, len(inside)


def logins(args):
    base = f"http://127.0.0.1:{args.port}/api/account"
    accounts = [f"bench{i}@example.com" for i in range(8)]
    for address in accounts:
        status, answer = post(base + "/register", {"email": address, "password": "bench-password", "name": "Bench"})
        assert status == 201, answer
    deadline = time.time() + 30
    while len(glob.glob(os.path.join(args.mail, "*.eml"))) < len(accounts) and time.time() < deadline:
        time.sleep(0.1)
    for path in glob.glob(os.path.join(args.mail, "*.eml")):
        import email
        message = email.message_from_file(open(path))
        text = next(p.get_payload(decode=True).decode() for p in message.walk() if p.get_content_type() == "text/plain")
        key = re.search(r"activate\?key=([A-Za-z0-9_-]{43})", text).group(1)
        assert post(base + "/activate", {"key": key})[0] == 200
    latencies, lock = [], threading.Lock()
    stop_at = time.perf_counter() + args.seconds

    def worker(index):
        while time.perf_counter() < stop_at and len(latencies) < 100_000:
            started = time.perf_counter()
            status, answer = post(base + "/login", {"email": accounts[index % len(accounts)], "password": "bench-password"})
            assert status == 200, answer
            with lock:
                latencies.append(time.perf_counter() - started)

    cpu_before, started = cpu_seconds(args.server_pid), time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(args.server_pid) - cpu_before
    print(f"| logins at bcrypt cost {args.cost}, 4 at a time | {len(latencies) / elapsed:.1f} logins/s, p50 {percentile(latencies, 0.5) * 1000:.0f} ms, "
          f"server CPU {cpu * 1000 / len(latencies):.0f} ms per login |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["fleet", "map", "logins"])
    for name in ("port", "server-pid", "seconds", "cars", "cost"):
        parser.add_argument(f"--{name}", type=int)
    for name in ("token", "api-key", "out", "cars-file", "mail"):
        parser.add_argument(f"--{name}")
    args = parser.parse_args()
    if args.mode == "fleet":
        fleet(args)
    elif args.mode == "logins":
        logins(args)
    else:
        rate, p50, p99, cpu = asyncio.run(near_calls(args))
        print(f"| cars.near (2 km, 20 cars) among {len(json.load(open(args.cars_file))['cars']):,} cars, 4 clients | "
              f"{rate:.0f} calls/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms, server CPU {cpu:.0f} µs per call |")
        updates, pushes, p50, p99, cpu, inside = asyncio.run(cell_updates(args))
        print(f"| cell updates: {inside:,} cars in 25 cells moved in batches of 200, 40 clients on every cell | "
              f"{updates:.0f} updates/s, {pushes:.0f} pushes delivered/s, request-to-push p50 {p50:.0f} ms, p99 {p99:.0f} ms, "
              f"server CPU {cpu:.0f} µs per update |")


main()
