"""Drives `publish` through the HTTP server API and the GRPC one against the same release hub,
in alternating rounds, and prints a Markdown table: calls/s, client-side p50/p99 latency and
the hub's CPU per call (from /proc), the median round of each API."""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time

import grpc
from grpc_tools import protoc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_seconds  # noqa: E402

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conformance", "centrifugo")


def grpc_module():
    out = tempfile.mkdtemp(prefix="gondola-bench-grpc-")
    assert protoc.main(["protoc", f"-I{PROTO_DIR}", f"--python_out={out}", f"--grpc_python_out={out}", "api.proto"]) == 0
    sys.path.insert(0, out)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


def run_round(kind, args, pb, pb_grpc, payload):
    """`args.calls` publishes by `args.workers` threads; answers (calls/s, p50 ms, p99 ms, CPU µs per call)."""
    per_worker = args.calls // args.workers
    latencies = [[] for _ in range(args.workers)]
    errors = []
    if kind == "grpc":
        channel = grpc.insecure_channel(f"127.0.0.1:{args.grpc_port}")
        grpc.channel_ready_future(channel).result(timeout=15)
        stub = pb_grpc.CentrifugoApiStub(channel)
        metadata = [("authorization", f"apikey {args.api_key}")]

    def worker(index):
        channel_name = f"bench-api-{index}"
        if kind == "http":
            connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=10)
            body = json.dumps({"channel": channel_name, "data": json.loads(payload)}).encode()
            headers = {"X-API-Key": args.api_key, "Content-Type": "application/json"}
        else:
            request = pb.PublishRequest(channel=channel_name, data=payload)
        for _ in range(per_worker):
            started = time.perf_counter()
            if kind == "http":
                connection.request("POST", "/api/publish", body, headers)
                answer = json.loads(connection.getresponse().read())
                failed = "error" in answer
            else:
                failed = stub.Publish(request, metadata=metadata, timeout=10).HasField("error")
            latencies[index].append(time.perf_counter() - started)
            if failed:
                errors.append(kind)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.workers)]
    cpu_before, started = cpu_seconds(args.server_pid), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(args.server_pid) - cpu_before
    if errors:
        raise SystemExit(f"{len(errors)} {kind} publishes answered an error")
    every = sorted(sum(latencies, []))
    calls = len(every)
    return calls / elapsed, every[calls // 2] * 1000, every[int(calls * 0.99)] * 1000, cpu / calls * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pb, pb_grpc = grpc_module()
    payload = json.dumps({"type": "positions", "positions": [{"user": f"t{i}", "lat": 45.3 + i / 1000, "lon": 6.58} for i in range(8)]}).encode()
    # Warm both paths (connections, the hub's channel state) before measuring.
    warm = argparse.Namespace(**{**vars(args), "calls": args.workers * 100})
    for kind in ("http", "grpc"):
        run_round(kind, warm, pb, pb_grpc, payload)
    results = {"http": [], "grpc": []}
    for _ in range(args.rounds):
        for kind in ("http", "grpc"):
            results[kind].append(run_round(kind, args, pb, pb_grpc, payload))
    print(f"{args.rounds} alternating rounds of {args.calls} `publish` calls ({len(payload)}-byte JSON payload, channels without"
          f" history) from {args.workers} threads each; the median round by CPU per call:")
    print()
    print("| API | publishes/s | p50 | p99 | hub CPU per publish | every round's CPU per publish |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind, label in (("http", "HTTP (`POST /api/publish`, keep-alive)"), ("grpc", "GRPC (`CentrifugoApi/Publish`)")):
        rounds = sorted(results[kind], key=lambda r: r[3])
        rate, p50, p99, cpu = rounds[len(rounds) // 2]
        print(f"| {label} | {rate:,.0f} | {p50:.2f} ms | {p99:.2f} ms | {cpu:.1f} µs | {', '.join(f'{r[3]:.1f}' for r in results[kind])} µs |")
    http_cpu = statistics.median(r[3] for r in results["http"])
    grpc_cpu = statistics.median(r[3] for r in results["grpc"])
    print()
    print(f"GRPC / HTTP hub CPU per publish: {grpc_cpu / http_cpu:.2f}×")


if __name__ == "__main__":
    main()
