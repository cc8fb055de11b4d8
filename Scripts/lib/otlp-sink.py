"""An OTLP/HTTP endpoint for benchmarks: takes every export (any encoding), discards it, answers
as a collector does, and keeps the count of exports and bytes in COUNTS_FILE."""
import http.server
import sys

port, counts_file = int(sys.argv[1]), sys.argv[2]
exports = received = 0


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global exports, received
        received += len(self.rfile.read(int(self.headers["Content-Length"])))
        exports += 1
        with open(counts_file, "w") as f:
            f.write(f"{exports} {received}\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Sink).serve_forever()
