"""A small OTLP/HTTP receiver for the tracing tests: it takes the JSON encoding of OTLP
(OTEL_EXPORTER_OTLP_PROTOCOL=http/json) at /v1/traces, as a collector would, and keeps every
span with its ids in hex and its attributes as a dict."""
import asyncio
import base64
import json
import threading
import time

from http_standin import QuietHandler, serve


def hex_id(value):
    """An id as the OTLP JSON of the exporter writes it (base64 bytes), in hex; '' when absent."""
    return base64.b64decode(value).hex() if value else ""


def attribute_value(value):
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in value:
            return value[kind]
    return int(value["intValue"]) if "intValue" in value else value


class OTLPReceiver:
    def __init__(self):
        self.spans = []
        lock = self.lock = threading.Lock()
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                spans = []
                for resource_spans in body.get("resourceSpans", []):
                    resource = {a["key"]: attribute_value(a["value"]) for a in resource_spans.get("resource", {}).get("attributes", [])}
                    for scope in resource_spans.get("scopeSpans", []):
                        for span in scope.get("spans", []):
                            spans.append({
                                "trace": hex_id(span.get("traceId")), "span": hex_id(span.get("spanId")),
                                "parent": hex_id(span.get("parentSpanId")), "name": span["name"], "kind": span.get("kind"),
                                "status": span.get("status", {}), "service": resource.get("service.name"),
                                "attributes": {a["key"]: attribute_value(a["value"]) for a in span.get("attributes", [])},
                            })
                with lock:
                    receiver.spans += spans
                self.answer(b"{}")

        self.server = serve(Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def env(self):
        """What a node's environment needs to export here at once (batches every 100 ms)."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "100"}

    async def spans_where(self, select, holds, what, timeout=20):
        """The spans `select` picks once `holds(those spans)` is true; fails naming `what` and the spans
        picked after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = [span for span in self.spans if select(span)]
            if holds(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} after {timeout} s; seen: {spans}")
            await asyncio.sleep(0.05)

    async def spans_of(self, trace_id, holds, what, timeout=20):
        """The spans of trace `trace_id` once `holds(spans)` is true."""
        return await self.spans_where(lambda span: span["trace"] == trace_id, holds, f"{what} in trace {trace_id}", timeout)

    def all_spans(self):
        with self.lock:
            return list(self.spans)

    def stop(self):
        self.server.shutdown()
