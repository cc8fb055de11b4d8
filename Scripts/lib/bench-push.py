"""Drives Scripts/bench-push: registers USERS devices straight into the hub's SQLite file (as
device.register would store them), sends one announcement with the Python SDK, and follows the
stand-in's accepted.jsonl until every notification arrived. Prints Markdown table rows."""
import argparse
import asyncio
import json
import os
import sqlite3
import time
import urllib.request

from bench_common import cpu_seconds, token
from centrifuge import Client


def rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def lines(path):
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def seed(database, users):
    now = int(time.time() * 1000)
    rows = []
    for n in range(users):
        if n % 2 == 0:
            rows.append((f"{n + 1:064x}", "apns", f"user-{n}", None, "en", now))
        else:
            rows.append((f"fcm-{n}:APA91b" + "x" * 140, "fcm", f"user-{n}", None, "de", now))
    with sqlite3.connect(database, timeout=30) as db:
        db.executemany("INSERT INTO push_device (token, platform, user_id, app, locale, registered_at_ms) VALUES (?, ?, ?, ?, ?, ?)", rows)


async def main(args):
    seed(args.database, args.users)
    request = urllib.request.Request(f"http://127.0.0.1:{args.port}/api/user_set_staff", data=json.dumps({"user": "staff", "staff": True}).encode(),
                                     headers={"X-API-Key": "bench", "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()
    staff = Client(f"ws://127.0.0.1:{args.port}/connection/websocket", token=token(args.secret, "staff"))
    await staff.connect()
    rss_before = rss_mib(args.server_pid)
    cpu_before, standin_before = cpu_seconds(args.server_pid), cpu_seconds(args.standin_pid)
    started = time.time()
    await staff.rpc("broadcast.send", {"scope": "all", "text": "The lifts close early today because of the wind."})
    rpc_done = time.time()
    peak, done, first = rss_before, 0, None
    deadline = started + args.timeout
    while time.time() < deadline:
        done = lines(args.accepted)
        if done and first is None:
            first, first_done, cpu_at_first = time.time(), done, cpu_seconds(args.server_pid)
        peak = max(peak, rss_mib(args.server_pid))
        if done >= args.users:
            break
        await asyncio.sleep(0.1)
    finished = time.time()
    cpu_end = cpu_seconds(args.server_pid)
    cpu = cpu_end - cpu_before
    standin_cpu = cpu_seconds(args.standin_pid) - standin_before
    await staff.disconnect()
    elapsed = finished - started
    print(f"| users with a device (offline) | {args.users:,} |")
    print(f"| notifications accepted by the stand-in | {done:,} |")
    print(f"| broadcast.send answered after | {(rpc_done - started) * 1000:.0f} ms |")
    print(f"| first notification accepted after | {((first or finished) - started) * 1000:.0f} ms |")
    print(f"| last notification accepted after | {elapsed:.1f} s |")
    print(f"| notifications accepted per second | {done / elapsed:,.0f} |")
    print(f"| hub CPU | {cpu:.1f} s ({cpu / max(done, 1) * 1e6:.0f} µs per notification) |")
    if first is not None and done > first_done:
        sending_cpu, sent = cpu_end - cpu_at_first, done - first_done
        print(f"| while sending (first to last accepted): notifications per second, hub CPU | {sent / max(finished - first, 1e-9):,.0f}/s, "
              f"{sending_cpu / sent * 1e6:.0f} µs per notification |")
    print(f"| stand-in CPU | {standin_cpu:.1f} s |")
    print(f"| hub RSS before / peak while draining | {rss_before:.0f} / {peak:.0f} MiB |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ["port", "server-pid", "standin-pid", "users"]:
        parser.add_argument(f"--{name}", type=int, required=True)
    for name in ["secret", "database", "accepted"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--timeout", type=float, default=600)
    asyncio.run(main(parser.parse_args()))
