"""Free loopback ports for the servers that tests and scripts start, taken below the kernel's
ephemeral range (net.ipv4.ip_local_port_range): a server takes a moment to start (a cluster
seconds, a killed Redis waits to be started again on its port), and a port inside that range could
meanwhile become the local end of any outgoing connection, which the server would then fail to bind.

Callers that may choose ports at the same time take them from separate regions: the conformance
suite's servers ("servers") and Scripts/cluster's Redis servers ("redis"). Within a region each call
starts at a block of its own (by process and call) and takes the first block whose ports are all free.

Run as a script it prints one port of the region named by its argument (default "redis")."""
import itertools
import os
import socket
import sys

BLOCK = 64
REGIONS = {"servers": (10_000, 21_000), "redis": (21_000, None)}  # None: up to the ephemeral range
_calls = itertools.count()


def ephemeral_low():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        return int(f.read().split()[0])


def consecutive_free_ports(count, region="servers"):
    """The first of `count` (at most BLOCK) consecutive free ports of `region`."""
    if not 1 <= count <= BLOCK:
        raise ValueError(f"count must be 1...{BLOCK}, got {count}")
    first, end = REGIONS[region]
    end = min(end or ephemeral_low(), ephemeral_low())
    blocks = (end - first) // BLOCK
    if blocks < 1:
        raise RuntimeError(f"no room for ports of region '{region}' below the ephemeral range, which starts at {ephemeral_low()}")
    start = (os.getpid() + next(_calls)) % blocks
    for block in [*range(start, blocks), *range(start)]:
        base = first + block * BLOCK
        try:
            for port in range(base, base + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports in {first}...{end - 1}")


if __name__ == "__main__":
    print(consecutive_free_ports(1, sys.argv[1] if len(sys.argv) > 1 else "redis"))
