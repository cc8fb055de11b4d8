"""A TCP forwarder standing in for a load balancer in the cluster tests and benchmarks."""
import asyncio


class SwitchingProxy:
    """A TCP forwarder standing in for a load balancer: new connections go to `target`,
    which the test changes when a node dies."""

    def __init__(self, target):
        self.target = target
        self.server = None

    async def start(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def handle(self, reader, writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def pipe(source, sink):
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    def close(self):
        self.server.close()
