"""What the tests' small HTTP servers (a webhook receiver, a backend, an OTLP receiver) share: a
request handler that logs nothing and answers in one call, served on a loopback port of its own."""
import http.server
import threading


class QuietHandler(http.server.BaseHTTPRequestHandler):
    def answer(self, body, content_type="application/json", status=200):
        """Answers with `body` (bytes) and its length."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(handler):
    """Serves `handler` (a QuietHandler class) on 127.0.0.1 and a free port, on threads of its own;
    answers the server (its `server_address`, `shutdown()`)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
