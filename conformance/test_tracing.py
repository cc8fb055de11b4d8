"""OpenTelemetry tracing (`opentelemetry`, `opentelemetry_api`), exported over OTLP as the standard
OTEL_* variables say to a receiver the tests start: a client's RPC through the proxy is one trace
down to the backend's request (its traceparent header), a log line written within a span names
the span's trace, the GRPC server API continues the caller's trace from its metadata, a malformed
`traceparent` is ignored (the call answered, its span the start of a trace, other clients served), and
without `opentelemetry_api` the server API makes no span of its own. (A publication's trace across the
nodes of a cluster is in test_cluster.py.)"""
import json
import os
import secrets
import subprocess
import tempfile

import pytest
from centrifuge import ReplyError

from conftest import API_KEY, CONFIG, GONDOLA, free_port, launch
from grpc_api import METADATA, pb, stub
from helpers import connected_client, post
from http_standin import QuietHandler, serve
from otlp_receiver import OTLPReceiver


class Backend:
    """The app's RPC backend: records each request's traceparent header; answers `tracing.garbled`
    with JSON the proxy does not understand, any other method with its data echoed."""

    def __init__(self):
        calls = self.calls = []

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                calls.append((body["method"], self.headers.get("traceparent")))
                answer = {"error": {"code": "not a number"}} if body["method"] == "tracing.garbled" else {"result": {"data": body.get("data")}}
                self.answer(json.dumps(answer).encode())

        self.server = serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rpc"

    def traceparent(self, method):
        return next(parent for called, parent in self.calls if called == method)


def start_traced(receiver, settings):
    process, server = launch(tempfile.mkdtemp(prefix="gondola-tracing-"), settings=settings, env=dict(os.environ, **receiver.env()))
    return process, server


def stop(process):
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def traced():
    receiver, backend = OTLPReceiver(), Backend()
    grpc_port = free_port()
    process, server = start_traced(receiver, {"opentelemetry": True, "opentelemetry_api": True, "proxy_rpc_endpoint": backend.url,
                                       "grpc_api_listen": f"127.0.0.1:{grpc_port}"})
    server.grpc_address = f"127.0.0.1:{grpc_port}"
    yield server, receiver, backend
    stop(process)
    receiver.stop()
    backend.server.shutdown()


def by_name(spans, name):
    return next(span for span in spans if span["name"] == name)


async def test_an_rpc_through_the_proxy_is_one_trace_down_to_the_backend(traced, codec):
    server, receiver, backend = traced
    client, _ = await connected_client(server, "tracer", codec)
    method = f"tracing.echo.{codec.name}"
    await client.rpc(method, codec.out({"n": 1}))
    version, trace_id, parent, flags = backend.traceparent(method).split("-")
    assert (version, flags) == ("00", "01")
    spans = await receiver.spans_of(trace_id, lambda spans: {"client.rpc", "proxy.rpc", "POST"} <= {s["name"] for s in spans},
                                    "client, proxy and HTTP spans")
    rpc, proxy, request = by_name(spans, "client.rpc"), by_name(spans, "proxy.rpc"), by_name(spans, "POST")
    assert (rpc["parent"], rpc["kind"], rpc["attributes"]["rpc.method"]) == ("", 2, method)
    assert (proxy["parent"], proxy["kind"]) == (rpc["span"], 3)
    # The backend's traceparent names the HTTP call's span, a child of the proxy's.
    assert (request["parent"], request["span"]) == (proxy["span"], parent)
    assert rpc["service"] == "gondola"
    await client.disconnect()


async def test_a_log_line_within_a_span_names_its_trace(traced, codec):
    server, receiver, backend = traced
    client, _ = await connected_client(server, "tracer", codec)
    with pytest.raises(ReplyError):
        await client.rpc("tracing.garbled", codec.out({}))
    trace_id = backend.traceparent("tracing.garbled").split("-")[1]
    spans = await receiver.spans_of(trace_id, lambda spans: any(s["name"] == "proxy.rpc" for s in spans), "proxy span")
    assert by_name(spans, "proxy.rpc")["status"].get("code") == 2  # an error
    with open(os.path.join(server.folder, "server.log")) as log:
        lines = [line for line in log if "proxy answer not understood" in line]
    assert any(f"trace_id={trace_id}" in line for line in lines), lines
    await client.disconnect()


async def test_the_grpc_api_continues_the_callers_trace(traced):
    server, receiver, _ = traced
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    api = stub(server.grpc_address)
    api.Publish(pb.PublishRequest(channel="room:traced-grpc", data=b'{"grpc":1}'),
                metadata=METADATA + [("traceparent", f"00-{trace_id}-{caller_span}-01")], timeout=10)
    spans = await receiver.spans_of(trace_id, lambda spans: {"api.publish", "publish", "deliver"} <= {s["name"] for s in spans},
                                    "API, publish and deliver spans")
    assert by_name(spans, "api.publish")["parent"] == caller_span
    assert by_name(spans, "publish")["parent"] == by_name(spans, "api.publish")["span"]
    assert by_name(spans, "deliver")["parent"] == by_name(spans, "publish")["span"]


async def test_without_opentelemetry_api_the_server_api_makes_no_span_of_its_own():
    receiver = OTLPReceiver()
    process, server = start_traced(receiver, {"opentelemetry": True})
    try:
        trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
        channel = "room:traced-without-api"
        post(f"{server.api_url}/publish", {"channel": channel, "data": {}}, {"X-API-Key": API_KEY, "traceparent": f"00-{trace_id}-{caller_span}-01"})
        # The publication's own trace arrives: a publish span for the channel that starts a trace.
        publish, = await receiver.spans_where(lambda span: span["name"] == "publish" and span["attributes"].get("messaging.destination.name") == channel,
                                              bool, f"publish span of {channel}")
        assert publish["parent"] == "" and publish["trace"] != trace_id
        assert not [span for span in receiver.all_spans() if span["name"].startswith("api.")]
    finally:
        stop(process)
        receiver.stop()


def test_opentelemetry_api_needs_opentelemetry(tmp_path):
    config = tmp_path / "gondola.json"
    config.write_text(json.dumps(dict(CONFIG, opentelemetry_api=True)))
    checked = subprocess.run([GONDOLA, "checkconfig", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert checked.returncode != 0
    assert "'opentelemetry_api' needs 'opentelemetry'" in checked.stdout + checked.stderr


async def test_a_traceparent_that_is_not_one_starts_a_trace_of_its_own_and_others_are_served(traced, codec):
    """W3C Trace Context has a malformed `traceparent` ignored: the call is answered as any other and its
    span starts a trace; a client and a well-formed call right after are served as usual."""
    server, receiver, _ = traced
    channel = f"room:traced-bad-parent-{codec.name}"
    for bad in ["not-a-trace-parent", "00-" + "z" * 32 + "-" + "1" * 16 + "-01", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "x" * 4000]:
        answer = post(f"{server.api_url}/publish", {"channel": channel, "data": {"bad": bad[:10]}}, {"X-API-Key": API_KEY, "traceparent": bad})
        assert "error" not in answer, (bad, answer)
    spans = await receiver.spans_where(lambda span: span["name"] == "publish" and span["attributes"].get("messaging.destination.name") == channel,
                                       lambda spans: len(spans) == 4, f"four publish spans of {channel}")
    api_spans = [s for s in receiver.all_spans() if s["name"] == "api.publish" and s["span"] in {p["parent"] for p in spans}]
    assert len(api_spans) == 4 and all(span["parent"] == "" for span in api_spans), api_spans
    client, _ = await connected_client(server, "tracer", codec)
    assert codec.into((await client.rpc("tracing.echo.after-bad", codec.out({"n": 2}))).data) == {"n": 2}
    await client.disconnect()
    trace_id, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    post(f"{server.api_url}/publish", {"channel": channel, "data": {}}, {"X-API-Key": API_KEY, "traceparent": f"00-{trace_id}-{caller_span}-01"})
    spans = await receiver.spans_of(trace_id, lambda spans: any(s["name"] == "api.publish" for s in spans), "the well-formed call's span")
    assert by_name(spans, "api.publish")["parent"] == caller_span
