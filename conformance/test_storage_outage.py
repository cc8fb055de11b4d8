"""The SQLite file's disk fills up under a connected SDK client (the database on a small tmpfs):
durable publishes answer the temporary error 100 at once, the client stays connected however many
fail in a row (the server's failures never count toward the consecutive-errors limit, 3509), and
once space is freed publishing works again with every acknowledged publication in the stream.
Needs root to mount the tmpfs, as CI has."""
import os
import subprocess
import tempfile
import time

import pytest
from centrifuge import ClientState, ReplyError

from conftest import CONFIG, launch
from helpers import server_api
from test_cluster import client_on, subscribed


@pytest.fixture
def small_disk():
    mount = tempfile.mkdtemp(prefix="gondola-small-disk-")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mount], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"mounting a tmpfs needs root: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", mount], check=False)
        os.rmdir(mount)


def fill(folder):
    """Writes a file until the disk is full; answers its path."""
    path = os.path.join(folder, "filler")
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return path


async def test_a_full_disk_answers_temporary_errors_and_keeps_the_client(small_disk, codec):
    folder = tempfile.mkdtemp(prefix="gondola-disk-full-")
    ledger = {"name": "ledger", "history_size": 10000, "history_ttl": "3600s", "history_durable": True,
              "allow_subscribe_for_client": True, "allow_publish_for_subscriber": True, "allow_history_for_subscriber": True}
    process, server = launch(folder, settings={"database": os.path.join(small_disk, "gondola.sqlite"),
                                               "namespaces": CONFIG["namespaces"] + [ledger]})
    try:
        client, _ = await client_on(server, f"disk-{codec.name}", codec)
        channel = f"ledger:ops-{codec.name}"
        sub, _ = await subscribed(client, channel, recoverable=True)
        acknowledged = []
        for n in range(5):
            await sub.publish(codec.out({"n": n}))
            acknowledged.append(n)

        filler = fill(small_disk)
        refused = 0
        n = 5
        while refused < 30 and n < 2000:
            try:
                await sub.publish(codec.out({"n": n}))
                acknowledged.append(n)  # pages SQLite still had free
            except ReplyError as error:
                assert error.code == 100 and error.temporary, error
                refused += 1
            n += 1
        assert refused == 30, "the full disk refused publications"
        assert client.state == ClientState.CONNECTED, "30 of the server's failures in a row did not close the client"

        os.remove(filler)
        deadline = time.time() + 15
        while True:
            try:
                await sub.publish(codec.out({"n": n}))
                acknowledged.append(n)
                break
            except ReplyError as error:
                assert error.code == 100 and time.time() < deadline, error
        stored = server_api(server, "history", {"channel": channel, "limit": -1})["publications"]
        numbers = [publication["data"]["n"] for publication in stored]
        assert numbers == acknowledged, "every acknowledged publication is in the stream, in order, and nothing else"
        await client.disconnect()
    finally:
        process.terminate()
        process.wait(timeout=10)
