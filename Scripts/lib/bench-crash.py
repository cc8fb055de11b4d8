"""Drives Scripts/bench-crash: photo uploads over HTTP, then timed crash.report calls through
centrifuge-python. Prints a Markdown table."""
import argparse
import asyncio
import json
import os
import statistics
import struct
import subprocess
import threading
import time
import urllib.request
import zlib

from centrifuge import Client

SECTIONS = ["license_insurance", "licence_plate", "other_vehicle_damage", "your_vehicle_damage", "crash_scene"]


def call(url, body=None, method="GET", headers=None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, response.read()


def server_api(args, method, body):
    _, answer = call(f"http://127.0.0.1:{args.port}/api/{method}", json.dumps(body).encode(), "POST", {"X-API-Key": args.api_key})
    return json.loads(answer)["result"]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def png_header(seed):
    """The first bytes of a PNG (signature and IHDR): all the server reads to accept it."""
    data = struct.pack(">IIBBBBB", 1024, 1024, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(data)) + b"IHDR" + data + struct.pack(">I", zlib.crc32(b"IHDR" + data) & 0xFFFFFFFF) + seed.to_bytes(8, "big")


def uploads(args):
    crashes = [server_api(args, "crash_detected", {"user": "bench-driver", "lat": 47.5, "lon": 19.0})["id"]
               for _ in range((args.uploads + 99) // 100)]
    slots = [(crash, section) for crash in crashes for section in SECTIONS for _ in range(20)][:args.uploads]
    payload = os.urandom(1 << 20)
    latencies, lock = [], threading.Lock()
    queue = list(enumerate(slots))

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                n, (crash, section) = queue.pop()
            body = png_header(n) + payload[: (1 << 20) - 41]
            started = time.perf_counter()
            status, _ = call(f"http://127.0.0.1:{args.port}/api/crash/{crash}/photos/{section}", body, "POST",
                             {"Authorization": f"Bearer {args.token}"})
            assert status == 201, status
            with lock:
                latencies.append(time.perf_counter() - started)

    cpu_before, started = cpu_seconds(args.server_pid), time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(args.server_pid) - cpu_before
    latencies.sort()
    return {"photos": len(latencies), "seconds": elapsed, "per_second": len(latencies) / elapsed,
            "mb_per_second": len(latencies) / elapsed, "p50": latencies[len(latencies) // 2] * 1000,
            "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
            "cpu_ms_per_photo": cpu * 1000 / len(latencies)}


def jpeg(work, n):
    ppm = os.path.join(work, f"photo-{n}.ppm")
    with open(ppm, "wb") as f:
        f.write(b"P6\n1600 1200\n255\n")
        row = bytes((x * 3 + n * 17) % 256 for x in range(1600 * 3))
        f.write(b"".join(row[(y * 7) % 3:] + row[:(y * 7) % 3] for y in range(1200)))
    return subprocess.run(["cjpeg", "-quality", "85", ppm], check=True, capture_output=True).stdout


async def reports(args):
    crash = server_api(args, "crash_detected", {"user": "bench-driver", "lat": 47.5, "lon": 19.0})["id"]
    photos = [jpeg(args.work, n) for n in range(20)]
    for n, photo in enumerate(photos):
        status, _ = call(f"http://127.0.0.1:{args.port}/api/crash/{crash}/photos/{SECTIONS[n % 5]}", photo, "POST",
                         {"Authorization": f"Bearer {args.token}"})
        assert status == 201, status
    client = Client(f"ws://127.0.0.1:{args.port}/connection/websocket", token=args.token)
    await client.connect()
    await client.rpc("crash.update", {"crash": crash, "injured": ["myself"], "note": "benchmark " * 50})
    times = []
    for _ in range(5):
        started = time.perf_counter()
        await client.rpc("crash.report", {"crash": crash})
        times.append((time.perf_counter() - started) * 1000)
    _, pdf = call(f"http://127.0.0.1:{args.port}/api/crash/{crash}/report.pdf", headers={"Authorization": f"Bearer {args.token}"})
    await client.disconnect()
    return {"median": statistics.median(times), "max": max(times), "pdf_kib": len(pdf) / 1024,
            "photo_kib": sum(map(len, photos)) / 1024}


def main():
    parser = argparse.ArgumentParser()
    for name in ("port", "server-pid", "uploads"):
        parser.add_argument(f"--{name}", type=int, required=True)
    for name in ("token", "api-key", "work"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args()
    up = uploads(args)
    report = asyncio.run(reports(args))
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| photo uploads (1 MiB each, 4 at a time) | {up['photos']} in {up['seconds']:.1f} s: {up['per_second']:.1f} photos/s, {up['mb_per_second']:.1f} MiB/s |")
    print(f"| upload latency p50 / p99 | {up['p50']:.1f} ms / {up['p99']:.1f} ms |")
    print(f"| server CPU per photo | {up['cpu_ms_per_photo']:.2f} ms |")
    print(f"| crash.report with 20 photos (1600x1200 JPEG, {report['photo_kib']:.0f} KiB in all), median / slowest of 5 | {report['median']:.0f} ms / {report['max']:.0f} ms |")
    print(f"| report PDF size | {report['pdf_kib']:.0f} KiB |")


main()
