"""Starts a real `gondola serve` on 127.0.0.1 for the conformance tests."""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
import shutil

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Scripts", "lib"))
from free_ports import consecutive_free_ports  # noqa: E402  (Scripts/lib, shared with Scripts/cluster)

GONDOLA = os.environ.get("CONFORMANCE_GONDOLA_BINARY", os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "gondola"))
RESORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resorts")
FLEETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fleets")
FORMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "forms")
HOST_PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "web", "host")
def pytest_configure(config):
    """Every folder the tests make (servers' data, logs, clusters) goes in one folder of the run,
    searchable by the postgres user that the clusters' PostgreSQL runs as."""
    run_folder = tempfile.mkdtemp(prefix="gondola-conformance-run-")
    os.chmod(run_folder, 0o755)
    tempfile.tempdir = config.gondola_run_folder = run_folder


def pytest_sessionfinish(session, exitstatus):
    """A passing run leaves nothing behind; a failing one keeps its folders (the servers' logs) and says where."""
    run_folder = getattr(session.config, "gondola_run_folder", None)
    if run_folder is None:
        return
    if exitstatus == 0:
        shutil.rmtree(run_folder, ignore_errors=True)
    else:
        print(f"\nconformance: the servers' folders and logs of this run are kept in {run_folder}")


SECRET = "conformance-secret-of-at-least-32-bytes"
API_KEY = "conformance-api-key"

CONFIG = {
    "token_hmac_secret": SECRET,
    "api_key": API_KEY,
    "fleets": FLEETS,
    "forms": FORMS,
    "host_page": HOST_PAGE,
    "ping_interval": "2s",
    "pong_timeout": "2s",
    "max_frame_bytes": 8192,
    "namespaces": [
        {"name": "room", "history_size": 50, "history_ttl": "300s", "presence": True, "join_leave": True, "allow_tags_filter": True,
         "allow_subscribe_for_client": True, "allow_publish_for_subscriber": True,
         "allow_history_for_subscriber": True, "allow_presence_for_subscriber": True},
        {"name": "frames", "history_size": 50, "history_ttl": "300s", "allowed_delta_types": ["fossil"], "delta_publish": True,
         "allow_subscribe_for_client": True, "allow_history_for_subscriber": True},
        # Deltas only for the publications that ask for one (`delta` in publish).
        {"name": "patches", "history_size": 50, "history_ttl": "300s", "allowed_delta_types": ["fossil"],
         "allow_subscribe_for_client": True},
        {"name": "lobby", "presence": True, "join_leave": True, "force_push_join_leave": True,
         "allow_subscribe_for_client": True, "allow_publish_for_subscriber": True},
        # Closed to clients: only a subscription token opens it.
        {"name": "vip", "presence": True, "allow_presence_for_subscriber": True, "allow_publish_for_subscriber": True},
    ],
}


class Codec:
    """One of the protocol's encodings as the SDK sees it: in Protobuf mode payloads are
    bytes (Gondola's are JSON text), in JSON mode they are Python values."""

    def __init__(self, name):
        self.name = name
        self.protobuf = name == "protobuf"

    @property
    def kwargs(self):
        """Arguments of centrifuge.Client for this encoding."""
        return {"use_protobuf": True} if self.protobuf else {}

    def out(self, value):
        """A payload to send."""
        return json.dumps(value).encode() if self.protobuf else value

    def into(self, data):
        """A received payload as a Python value."""
        if self.protobuf and data is not None:
            return json.loads(data)
        return data


@pytest.fixture(params=["json", "protobuf"])
def codec(request):
    """Runs a test once per encoding of the client protocol."""
    return Codec(request.param)


def free_port():
    """A free port for a server about to start (see Scripts/lib/free_ports.py)."""
    return consecutive_free_ports(1)


class Endpoint:
    """Where a hub listens: its WebSocket and server API addresses."""

    def __init__(self, port):
        self.port = port
        self.ws_url = f"ws://127.0.0.1:{port}/connection/websocket"
        self.api_url = f"http://127.0.0.1:{port}/api"


class Server(Endpoint):
    def __init__(self, folder, port):
        super().__init__(port)
        self.folder = folder
        self.config_path = os.path.join(folder, "gondola.json")
        # Where /health answers: the internal listener when the configuration has one, with TLS when it serves TLS.
        self.health_port = port
        self.health_tls = None

    def token(self, user, ttl=None):
        args = [GONDOLA, "token", "--user", user, "--config", self.config_path, "--database", os.path.join(self.folder, "gondola.sqlite")]
        if ttl:
            args += ["--ttl", ttl]
        return subprocess.run(args, check=True, capture_output=True, text=True, timeout=30).stdout.strip()

    def healthy(self):
        scheme = "https" if self.health_tls else "http"
        with urllib.request.urlopen(f"{scheme}://127.0.0.1:{self.health_port}/health", timeout=5, context=self.health_tls) as response:
            return response.status == 200 and json.loads(response.read())["status"] == "ok"


def launch(folder, extra_args=(), port=None, settings=None, resorts=RESORTS, **serving):
    """Writes a configuration (with `settings` added) into `folder`, starts `gondola serve` (with `extra_args`,
    reading the resorts in `resorts`) on `port` (a free one when None) and waits until it is healthy. Launching
    again in the same folder and port is a restart."""
    port = port or free_port()
    config_path = os.path.join(folder, "gondola.json")
    config = dict(CONFIG, listen=f"127.0.0.1:{port}", database=os.path.join(folder, "gondola.sqlite"))
    config.update(settings or {})
    with open(config_path, "w") as f:
        json.dump(config, f)
    return serve(folder, config_path, port, extra_args, resorts, **serving)


def serve(folder, config_path, port, extra_args=(), resorts=RESORTS, health_port=None, health_tls=None, env=None):
    """Starts `gondola serve --config config_path` (the file listening on `port`, and answering /health on
    `health_port` when it has an internal listener, over TLS trusted by the `health_tls` SSL context when
    that listener serves TLS) in `env` (this process's environment when None), logging into `folder`, and
    waits until it is healthy."""
    log = open(os.path.join(folder, "server.log"), "a")
    process = subprocess.Popen([GONDOLA, "serve", "--config", config_path, "--resorts", resorts, *extra_args], stdout=log, stderr=subprocess.STDOUT,
                               env=env)
    log.close()
    instance = Server(folder, port)
    instance.health_port = health_port or port
    instance.health_tls = health_tls
    deadline = time.time() + 30
    while True:
        try:
            if instance.healthy():
                return process, instance
        except OSError:
            pass
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            raise RuntimeError("gondola did not start: " + open(os.path.join(folder, "server.log")).read())
        time.sleep(0.1)


def stop_server(process):
    """Stops a hub `launch` started: SIGTERM, and SIGKILL if it has not exited within 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.fixture(scope="session")
def server():
    grpc_port = free_port()
    process, instance = launch(tempfile.mkdtemp(prefix="gondola-conformance-"), settings={"grpc_api_listen": f"127.0.0.1:{grpc_port}"})
    instance.grpc_address = f"127.0.0.1:{grpc_port}"
    yield instance
    stop_server(process)
