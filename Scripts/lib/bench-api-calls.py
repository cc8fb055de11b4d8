"""Times one server API method called again and again over one keep-alive HTTP connection
(used by Scripts/bench-scale for presence_stats of a channel with 100,000 members).

  bench-api-calls.py --port P --api-key K --server-pid PID --method M --body JSON --calls N

Prints one JSON object: the calls, their p50, p99 and max in milliseconds, the hub's CPU
microseconds per call, and the last answer's result."""
import argparse
import http.client
import json
import time

from bench_common import cpu_seconds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--method", required=True)
    parser.add_argument("--body", required=True)
    parser.add_argument("--calls", type=int, default=50)
    arguments = parser.parse_args()
    if not 1 <= arguments.calls <= 100_000:
        parser.error(f"--calls must be 1...100000, got {arguments.calls}")
    body = json.dumps(json.loads(arguments.body)).encode()
    connection = http.client.HTTPConnection("127.0.0.1", arguments.port, timeout=60)
    durations, answer = [], None
    cpu_before = cpu_seconds(arguments.server_pid)
    for _ in range(arguments.calls):
        started = time.perf_counter()
        connection.request("POST", f"/api/{arguments.method}", body, {"X-API-Key": arguments.api_key})
        response = connection.getresponse()
        answer = json.loads(response.read())
        durations.append((time.perf_counter() - started) * 1000)
        if response.status != 200 or "result" not in answer:
            raise SystemExit(f"{arguments.method} answered {response.status}: {answer}")
    cpu = cpu_seconds(arguments.server_pid) - cpu_before
    durations.sort()
    print(json.dumps({
        "method": arguments.method, "calls": arguments.calls,
        "p50_ms": durations[len(durations) // 2], "p99_ms": durations[min(len(durations) - 1, int(len(durations) * 0.99))],
        "max_ms": durations[-1], "cpu_us_per_call": cpu / arguments.calls * 1e6, "result": answer["result"],
    }))


if __name__ == "__main__":
    main()
