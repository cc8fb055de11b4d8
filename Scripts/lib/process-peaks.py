"""Samples a process's CPU and resident memory every 0.2 s for a number of seconds (used by
Scripts/bench-storm to watch the hub through a reconnect storm) and prints one JSON object: the
peak resident memory in MiB, the busiest second's CPU and the mean CPU over the whole time, in
percent of one core. A process that ends early ends the sampling.

  process-peaks.py --pid PID --seconds S"""
import argparse
import json
import time

from bench_common import cpu_seconds, status_kib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    arguments = parser.parse_args()
    if not 0 < arguments.seconds <= 3600:
        parser.error(f"--seconds must be in (0, 3600], got {arguments.seconds}")
    started = time.monotonic()
    first_cpu = cpu_seconds(arguments.pid)
    window = [(started, first_cpu)]
    peak_rss, peak_cpu, last = 0.0, 0.0, (started, first_cpu)
    while time.monotonic() - started < arguments.seconds:
        time.sleep(0.2)
        try:
            now, cpu = time.monotonic(), cpu_seconds(arguments.pid)
            peak_rss = max(peak_rss, status_kib(arguments.pid, "VmRSS") / 1024)
        except (FileNotFoundError, ProcessLookupError):
            break
        window.append((now, cpu))
        while now - window[0][0] > 1.0:
            window.pop(0)
        if now - window[0][0] >= 0.8:
            peak_cpu = max(peak_cpu, (cpu - window[0][1]) / (now - window[0][0]) * 100)
        last = (now, cpu)
    elapsed = max(last[0] - started, 1e-9)
    print(json.dumps({"pid": arguments.pid, "seconds": round(elapsed, 1), "peak_rss_mib": round(peak_rss, 1),
                      "peak_cpu_percent": round(peak_cpu, 1), "mean_cpu_percent": round((last[1] - first_cpu) / elapsed * 100, 1)}))


if __name__ == "__main__":
    main()
