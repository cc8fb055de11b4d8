"""The fault scenarios' own tools, checked before they judge the server: the proxy makes the fault it
is asked for, and the history checker finds each kind of broken promise and passes a kept one."""
import asyncio
import socket
import threading

import pytest

from fault_proxy import FaultProxy, cancel_other_tasks
from history import History


@pytest.fixture
def echo():
    """An echo server on loopback, on its own thread's loop (the proxy's target)."""
    loop = asyncio.new_event_loop()

    async def handle(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        writer.close()

    server = loop.run_until_complete(asyncio.start_server(handle, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield server.sockets[0].getsockname()[1]
    async def stop():
        server.close()
        await cancel_other_tasks()

    asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


def connect(proxy):
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def test_the_proxy_forwards_shapes_blackholes_resets_and_holds_half_open(echo):
    proxy = FaultProxy(("127.0.0.1", echo), seed=1)
    try:
        sock = connect(proxy)
        sock.sendall(b"hello")
        assert sock.recv(100) == b"hello"
        # Blackholed: the connection stays open and nothing comes back; once healed, what was
        # sent meanwhile arrives, in order, as TCP would deliver it.
        proxy.blackhole()
        sock.sendall(b"held")
        sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            sock.recv(100)
        proxy.blackhole(False)
        sock.settimeout(5)
        sock.sendall(b"back")
        received = b""
        while len(received) < 8:
            received += sock.recv(100)
        assert received == b"heldback"
        # Shaped: the bytes still arrive whole and in order.
        proxy.shape(latency=0.05, jitter=0.02, bandwidth=64 * 1024)
        payload = bytes(range(256)) * 256
        sock.sendall(payload)
        received = b""
        while len(received) < len(payload):
            received += sock.recv(65536)
        assert received == payload
        proxy.shape()
        # Reset: the client's socket sees a reset, not an orderly end.
        assert proxy.reset(fraction=1.0) == 1
        with pytest.raises(ConnectionResetError):
            sock.sendall(b"x")
            sock.recv(100)
        # Half-open: neither an end nor a reset, and no answer.
        other = connect(proxy)
        other.sendall(b"ping")
        assert other.recv(100) == b"ping"
        assert proxy.hold_half_open() == 1
        other.sendall(b"anyone?")
        other.settimeout(0.5)
        with pytest.raises(socket.timeout):
            other.recv(100)
        other.close()
    finally:
        proxy.close()


def test_the_checker_passes_a_kept_history_and_a_told_gap():
    history = History()
    for offset in range(1, 6):
        history.ack("c", offset, "e", {"n": offset})
    for offset in (1, 2):
        history.received("a", "c", offset, "e", {"n": offset})
    history.subscribed("a", "c", recovered=False, was_recovering=True, epoch="e")
    history.received("a", "c", 5, "e", {"n": 5})
    kept = {offset: ("e", history.acknowledged["c"][offset][1]) for offset in range(1, 6)}
    assert history.check({"c": kept}) == []


@pytest.mark.parametrize("case, expected", [
    ("duplicate", "offset 2 received twice"),
    ("backwards", "offset 1 after 2"),
    ("untold gap", "offsets 2–3 missed and not told"),
    ("altered", "offset 2 is not what was acknowledged"),
    ("tail", "offsets 4–5 acknowledged after its last receipt never arrived"),
    ("not kept", "c: acknowledged offset 3 is missing in history"),
])
def test_the_checker_finds_each_broken_promise(case, expected):
    history = History()
    for offset in range(1, 6):
        history.ack("c", offset, "e", {"n": offset})
    received = {"duplicate": [1, 2, 2, 3, 4, 5], "backwards": [2, 1, 3, 4, 5], "untold gap": [1, 4, 5], "tail": [1, 2, 3]}.get(
        case, [1, 2, 3, 4, 5])
    for offset in received:
        history.received("a", "c", offset, "e", {"n": offset, "altered": True} if case == "altered" and offset == 2 else {"n": offset})
    kept = {offset: ("e", history.acknowledged["c"][offset][1]) for offset in range(1, 6) if not (case == "not kept" and offset == 3)}
    problems = history.check({"c": kept})
    assert any(expected in problem for problem in problems), problems
