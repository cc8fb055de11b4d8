"""The hub's vital signs through a long run, for Scripts/bench-soak.

  soak.py sample --pid PID --port PORT --until-pid LOAD --every 60 --out samples.csv
      every EVERY seconds while process LOAD runs (at most 2 hours): the hub's resident memory,
      open descriptors, threads, CPU over the interval, and from its /metrics the allocator's heap
      (in use and kept free), SQLite's memory and the part of its page-cache block holding pages, the
      client write queues' bytes, SQLite's write-ahead log frames and the connections; one CSV line each
  soak.py report --samples samples.csv --timeline load.csv --out minutes.csv --skip 5
      adds to each sample the worst per-second location p99 of its minute (from gondola-load's
      timeline), writes the merged CSV for the chart, and prints one JSON object: the resident
      memory's least-squares slope after the first SKIP samples and over the run's second half
      (MiB per hour, and per hour as a share of its mean; what fills in the first minutes, such as
      the chat sends kept ten minutes, shows in the first and not in the second), the memory
      parts' first and last values and second-half slopes (SQLite's memory holds its page caches'
      whole block from the start; the block's slots in use keep filling as the database grows until
      the caches reach their limits), the descriptors and threads first and last, the queue bytes'
      and WAL frames' maxima, and the minutes' p99 range."""
import argparse
import csv
import json
import os
import re
import sys
import time
import urllib.request

from bench_common import cpu_seconds, status_kib

COLUMNS = ["minute", "rss_mib", "heap_in_use_mib", "heap_free_mib", "sqlite_mib", "sqlite_cached_pages_mib", "fds", "threads", "cpu_percent", "queue_bytes",
           "wal_frames", "connections"]
# The parts of the resident memory sampled from /metrics, in MiB, each with its slope in the report.
MEMORY_PARTS = {"heap_in_use_mib": "gondola_heap_bytes{state=\"in_use\"}", "heap_free_mib": "gondola_heap_bytes{state=\"free\"}",
                "sqlite_mib": "gondola_sqlite_memory_bytes", "sqlite_cached_pages_mib": "gondola_sqlite_page_cache_bytes{state=\"in_use\"}"}


def metric(text, name):
    """The value of the first sample of metric NAME (with or without labels), or of exactly NAME{labels}."""
    pattern = re.escape(name) if "{" in name else rf"{name}(?:{{[^}}]*}})?"
    match = re.search(rf"^{pattern} ([0-9.e+-]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def sample(arguments):
    if not 1 <= arguments.every <= 600:
        sys.exit(f"--every must be 1...600 seconds, got {arguments.every}")
    started = time.monotonic()
    with open(arguments.out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        minute, last_cpu, last_time = 0, cpu_seconds(arguments.pid), started
        while alive(arguments.until_pid) and time.monotonic() - started < 7200:
            deadline = started + (minute + 1) * arguments.every
            while time.monotonic() < deadline and alive(arguments.until_pid):
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            if not alive(arguments.until_pid):
                break
            minute += 1
            now, cpu = time.monotonic(), cpu_seconds(arguments.pid)
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{arguments.port}/metrics", timeout=10).read().decode()
            parts = [round(metric(metrics, name) / 1048576, 1) for name in MEMORY_PARTS.values()]
            writer.writerow([minute, round(status_kib(arguments.pid, "VmRSS") / 1024, 1), *parts, len(os.listdir(f"/proc/{arguments.pid}/fd")),
                             status_kib(arguments.pid, "Threads"), round((cpu - last_cpu) / (now - last_time) * 100, 1),
                             int(metric(metrics, "gondola_queue_bytes")), int(metric(metrics, "gondola_sqlite_wal_frames")),
                             int(metric(metrics, "gondola_connections"))])
            handle.flush()
            last_cpu, last_time = cpu, now


def slope(points):
    """Least-squares slope of (x, y) points (0 for fewer than two)."""
    return fit(points)[0]


def fit(points):
    """Least-squares line through (x, y) points: its slope, and the standard deviation of the points
    around it (0 and 0 for fewer than two points; the deviation is 0 for two)."""
    if len(points) < 2:
        return 0.0, 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    per_x = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0
    residuals = [y - (mean_y + per_x * (x - mean_x)) for x, y in points]
    return per_x, (sum(r * r for r in residuals) / (len(points) - 2)) ** 0.5 if len(points) > 2 else 0.0


def flatness(points):
    """Whether a series is flat within noise: the rise its fitted line makes over the points' span
    is at most twice the points' scatter around that line (their standard deviation)."""
    per_hour, scatter = fit(points)
    rise = per_hour * (points[-1][0] - points[0][0]) if points else 0.0
    return {"slope_mib_per_hour": round(per_hour, 2), "rise_mib": round(rise, 2), "scatter_mib": round(scatter, 2),
            "flat": abs(rise) <= 2 * scatter}


def report(arguments):
    samples = list(csv.DictReader(open(arguments.samples)))
    seconds = list(csv.DictReader(open(arguments.timeline)))
    if not samples:
        sys.exit(f"{arguments.samples} has no samples")
    # The load's timeline counts seconds from its own start, which is within a second of the sampler's.
    worst = {}
    for row in seconds:
        minute = (int(row["second"]) - 1) // 60 + 1
        worst[minute] = max(worst.get(minute, 0.0), float(row["p99_ms"]))
    for row in samples:
        row["rss_less_sqlite_mib"] = round(float(row["rss_mib"]) - float(row["sqlite_mib"]), 1)
    with open(arguments.out, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS + ["rss_less_sqlite_mib", "location_p99_ms"])
        for row in samples:
            writer.writerow([row[column] for column in COLUMNS] + [row["rss_less_sqlite_mib"], worst.get(int(row["minute"]), 0.0)])
    steady = [row for row in samples if int(row["minute"]) > arguments.skip]
    def hourly(column):
        return [(int(row["minute"]) / 60, float(row[column])) for row in steady]

    def second_half(column):
        points = hourly(column)
        return points[len(points) // 2:]

    def second_half_slope(column):
        return round(slope(second_half(column)), 2)

    rss = hourly("rss_mib")
    mean_rss = sum(y for _, y in rss) / len(rss) if rss else 0.0
    per_hour = slope(rss)
    p99s = [worst[int(row["minute"])] for row in steady if int(row["minute"]) in worst]
    print(json.dumps({
        "minutes": len(samples), "steady_minutes": len(steady),
        "rss_first_mib": float(samples[0]["rss_mib"]), "rss_last_mib": float(samples[-1]["rss_mib"]),
        "rss_slope_mib_per_hour": round(per_hour, 2), "rss_slope_share_per_hour": round(per_hour / mean_rss, 4) if mean_rss else 0.0,
        "rss_slope_second_half_mib_per_hour": second_half_slope("rss_mib"),
        **{f"{part}_first": float(samples[0][part]) for part in MEMORY_PARTS},
        **{f"{part}_last": float(samples[-1][part]) for part in MEMORY_PARTS},
        **{f"{part}_slope_second_half_per_hour": second_half_slope(part) for part in MEMORY_PARTS},
        "second_half_rss": flatness(second_half("rss_mib")),
        "second_half_rss_less_sqlite": flatness(second_half("rss_less_sqlite_mib")),
        "fds_first": int(samples[0]["fds"]), "fds_last": int(samples[-1]["fds"]),
        "threads_first": int(samples[0]["threads"]), "threads_last": int(samples[-1]["threads"]),
        "queue_bytes_max": max(int(row["queue_bytes"]) for row in samples),
        "wal_frames_max": max(int(row["wal_frames"]) for row in samples),
        "cpu_percent_mean": round(sum(float(row["cpu_percent"]) for row in steady) / max(1, len(steady)), 1),
        "location_p99_ms_min": min(p99s, default=0.0), "location_p99_ms_max": max(p99s, default=0.0),
    }))


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    sampling = commands.add_parser("sample")
    sampling.add_argument("--pid", type=int, required=True)
    sampling.add_argument("--port", type=int, required=True)
    sampling.add_argument("--until-pid", type=int, required=True)
    sampling.add_argument("--every", type=float, default=60)
    sampling.add_argument("--out", required=True)
    reporting = commands.add_parser("report")
    reporting.add_argument("--samples", required=True)
    reporting.add_argument("--timeline", required=True)
    reporting.add_argument("--out", required=True)
    reporting.add_argument("--skip", type=int, default=5)
    arguments = parser.parse_args()
    {"sample": sample, "report": report}[arguments.command](arguments)


if __name__ == "__main__":
    main()
