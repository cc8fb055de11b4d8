"""A TCP proxy that makes a link bad on purpose, for the fault scenarios: placed between a client
and a node (or a node and Redis or PostgreSQL), it adds latency and jitter, caps bandwidth,
blackholes (accepts and reads, delivers nothing), resets connections, and holds them half-open
(nothing forwarded, no FIN, no RST: a peer that vanished). This machine's kernel has no netem, so
the faults are made in user space, on loopback. What a fault does to the bytes is what TCP would
make of it: a blackhole delays them (never drops them from a stream that stays open), a reset
ends the stream for both sides.

The proxy runs its own event loop in a thread; every control method is safe to call from the tests'
loop or any thread and takes effect for the connections open now and those to come. Randomness
(jitter, which connections a reset picks) comes from one generator seeded by the caller, so a run
can be repeated.
"""
import asyncio
import random
import socket
import struct
import threading
import time

# How much one read takes from a socket: small enough that a bandwidth cap paces smoothly.
CHUNK = 16 * 1024


async def cancel_other_tasks():
    """Cancels every task of the running loop but the caller's and waits for them to end."""
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


class Link:
    """One proxied connection: the client's socket and the upstream one, and the two pumps."""

    def __init__(self, proxy, client_reader, client_writer):
        self.proxy = proxy
        self.client_reader, self.client_writer = client_reader, client_writer
        self.upstream_reader = self.upstream_writer = None
        self.tasks = []
        self.half_open = False
        self.closed = False

    async def run(self):
        # A blackholed network answers no SYN either: the upstream connection waits for the heal.
        await self.proxy.while_blackholed()
        try:
            if isinstance(self.proxy.target, str):
                self.upstream_reader, self.upstream_writer = await asyncio.open_unix_connection(self.proxy.target)
            else:
                self.upstream_reader, self.upstream_writer = await asyncio.open_connection(*self.proxy.target)
        except OSError:
            self.abort()
            return
        self.tasks = [
            asyncio.ensure_future(self.pump(self.client_reader, self.upstream_writer, "up")),
            asyncio.ensure_future(self.pump(self.upstream_reader, self.client_writer, "down")),
        ]
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if not self.half_open:
            self.close()

    async def pump(self, reader, writer, direction):
        """Moves bytes one way: each chunk is delivered at its arrival time plus the latency and a
        jitter, not before the chunk ahead of it, and no faster than the bandwidth allows."""
        queue = asyncio.Queue()
        deliverer = asyncio.ensure_future(self.deliver(queue, writer))
        ready_at = 0.0
        try:
            while True:
                await self.proxy.while_blackholed()
                data = await reader.read(CHUNK)
                if not data:
                    break
                settings = self.proxy.settings
                delay = settings["latency"] + (self.proxy.jitter() if settings["jitter"] else 0.0)
                ready_at = max(time.monotonic() + max(0.0, delay), ready_at)
                if settings["bandwidth"]:
                    ready_at += len(data) / settings["bandwidth"]
                queue.put_nowait((ready_at, data))
        except (ConnectionError, OSError):
            pass
        finally:
            queue.put_nowait(None)
            await asyncio.gather(deliverer, return_exceptions=True)
            if not self.half_open and not self.closed:
                try:
                    writer.write_eof()
                except (OSError, RuntimeError):
                    pass

    async def deliver(self, queue, writer):
        while True:
            item = await queue.get()
            if item is None:
                return
            ready_at, data = item
            wait = ready_at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self.proxy.while_blackholed()
            if self.half_open:
                return
            try:
                writer.write(data)
                await writer.drain()
            except (ConnectionError, OSError):
                return

    def hold_half_open(self):
        """Stops both pumps and leaves both sockets open: neither side hears anything again."""
        self.half_open = True
        for task in self.tasks:
            task.cancel()

    def abort(self):
        """Closes both sockets with a reset (SO_LINGER 0), as a dropped mobile link or a firewall does."""
        for writer in (self.client_writer, self.upstream_writer):
            if writer is None:
                continue
            sock = writer.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            writer.transport.abort()
        self.closed = True
        for task in self.tasks:
            task.cancel()

    def close(self):
        for writer in (self.client_writer, self.upstream_writer):
            if writer is not None:
                writer.close()
        self.closed = True


class FaultProxy:
    """Listens on 127.0.0.1 (`port`) and forwards each connection to `target` — (host, port), or the
    path of a Unix socket (PostgreSQL's) — with the faults set on it. `seed` seeds the jitter and
    the choice of connections to reset."""

    def __init__(self, target, seed):
        self.target = target
        self.seed = seed
        self.random = random.Random(seed)
        self.settings = {"latency": 0.0, "jitter": 0.0, "bandwidth": None}
        self.blackholed = False
        self.links = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"fault-proxy-{target}", daemon=True)
        self.thread.start()
        self.server = self.run(asyncio.start_server(self.accept, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]

    def run(self, coroutine, timeout=10):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call(self, function):
        """Runs `function` on the proxy's loop and answers what it returns."""
        async def body():
            return function()
        return self.run(body())

    async def accept(self, reader, writer):
        link = Link(self, reader, writer)
        self.links.append(link)
        await link.run()

    async def while_blackholed(self):
        """Returns once the link is not blackholed."""
        while self.blackholed:
            await asyncio.sleep(0.02)

    def jitter(self):
        spread = self.settings["jitter"]
        return self.random.uniform(-spread, spread)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def shape(self, latency=0.0, jitter=0.0, bandwidth=None):
        """One-way `latency` and ±`jitter` in seconds, `bandwidth` in bytes per second per direction
        of each connection (None: unbounded)."""
        self.call(lambda: self.settings.update(latency=latency, jitter=jitter, bandwidth=bandwidth))

    def blackhole(self, on=True):
        """While on, nothing moves: connections stay open, new ones are accepted but not connected
        upstream, and bytes wait (in the proxy and then in the senders' socket buffers, as TCP
        keeps unacknowledged data) until the link heals and they arrive in order, as over a
        network that drops every packet for a while."""
        self.call(lambda: setattr(self, "blackholed", on))

    def open_links(self):
        return [link for link in self.links if not link.closed and not link.half_open]

    def hold_half_open(self):
        """Every open connection goes silent with both sockets left open; answers how many."""
        def hold():
            links = self.open_links()
            for link in links:
                link.hold_half_open()
            return len(links)
        return self.call(hold)

    def reset(self, fraction=1.0):
        """Resets that share of the open connections, chosen with the seeded generator (at least one
        when any is open and `fraction` > 0); answers how many."""
        def reset():
            links = self.open_links()
            count = min(len(links), max(1, round(fraction * len(links)))) if links and fraction > 0 else 0
            chosen = self.random.sample(links, count)
            for link in chosen:
                link.abort()
            return count
        return self.call(reset)

    def close(self):
        """Stops listening, resets every connection and ends the proxy's loop."""
        async def close_all():
            self.server.close()
            for link in self.links:
                link.abort()
            await cancel_other_tasks()
        self.run(close_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()
