"""SIGTERM drains a real gondola process: clients get 3001 and the process exits within 5 s."""
import json
import os
import signal
import subprocess
import time

from centrifuge import Client

from conftest import CONFIG, GONDOLA, Server, free_port
from helpers import ClientEvents, Events


async def test_sigterm_closes_clients_with_3001_and_exits(tmp_path):
    port = free_port()
    folder = str(tmp_path)
    config = dict(CONFIG, listen=f"127.0.0.1:{port}", database=os.path.join(folder, "gondola.sqlite"))
    with open(os.path.join(folder, "gondola.json"), "w") as f:
        json.dump(config, f)
    process = subprocess.Popen([GONDOLA, "serve", "--config", os.path.join(folder, "gondola.json")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server = Server(folder, port)
        deadline = time.time() + 30
        while True:
            try:
                if server.healthy():
                    break
            except OSError:
                pass
            assert process.poll() is None and time.time() < deadline, "gondola did not start"
            time.sleep(0.1)
        events = Events()
        client = Client(server.ws_url, events=ClientEvents(events), token=server.token("alice"), max_reconnect_delay=30, min_reconnect_delay=30)
        await client.connect()
        await events.wait("connected")
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        connecting = await events.wait("connecting", count=2, timeout=5)
        assert connecting[-1].code == 3001
        process.wait(timeout=5)
        assert time.monotonic() - started < 5
        assert process.returncode == 0
        await client.disconnect()
    finally:
        if process.poll() is None:
            process.kill()
