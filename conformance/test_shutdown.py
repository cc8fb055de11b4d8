"""SIGTERM drains a real gondola process: clients get 3001 and the process exits within 5 s."""
import signal
import time

from centrifuge import Client

from conftest import launch
from helpers import ClientEvents, Events


async def test_sigterm_closes_clients_with_3001_and_exits(tmp_path, codec):
    process, server = launch(str(tmp_path))
    try:
        events = Events()
        client = Client(server.ws_url, events=ClientEvents(events), token=server.token("alice"), max_reconnect_delay=30, min_reconnect_delay=30, **codec.kwargs)
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
