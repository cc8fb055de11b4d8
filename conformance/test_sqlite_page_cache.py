"""SQLite's page caches take their pages from one block that `gondola serve` reserves at its start (sized to the
caches' limits), not from the heap as they fill: /metrics shows the block's use, and a few megabytes of new
pages fill its slots without raising SQLite's heap memory."""
import tempfile

import pytest

from conftest import CONFIG, launch, stop_server
from helpers import metric, server_api

PAGE = 4096
# The writer's 32 MiB and five readers' 2,000 KiB each, in pages.
SLOTS = (32 * 1024 * 1024 + 5 * 2000 * 1024) // PAGE


@pytest.fixture(scope="module")
def server():
    """A hub whose `stored` namespace keeps its history in SQLite (`history_durable`)."""
    stored = {"name": "stored", "history_size": 50, "history_ttl": "300s", "history_durable": True}
    process, instance = launch(tempfile.mkdtemp(prefix="gondola-page-cache-"), settings={"namespaces": CONFIG["namespaces"] + [stored]})
    yield instance
    stop_server(process)


def block(server):
    """Bytes of the block's slots in use and free."""
    return (metric(server, 'gondola_sqlite_page_cache_bytes{state="in_use"}'),
            metric(server, 'gondola_sqlite_page_cache_bytes{state="free"}'))


def test_the_block_is_reserved_at_start_and_counted_as_sqlites_memory(server):
    in_use, free = block(server)
    assert in_use is not None and free is not None, "/metrics shows no page-cache block"
    block_bytes = in_use + free
    # Each slot holds a page and SQLite's header for it: a few hundred bytes.
    assert SLOTS * PAGE < block_bytes < SLOTS * (PAGE + 1024), f"a block of {block_bytes} bytes for {SLOTS} slots"
    sqlite = metric(server, "gondola_sqlite_memory_bytes")
    assert sqlite >= block_bytes, f"SQLite's memory {sqlite} leaves out the {block_bytes}-byte block"
    assert metric(server, 'gondola_heap_bytes{state="in_use"}') >= sqlite


def test_new_pages_fill_slots_not_the_heap(server):
    in_use_before, _ = block(server)
    sqlite_before = metric(server, "gondola_sqlite_memory_bytes")
    # 1,000 publications of 3,000 bytes kept in SQLite's history: about 4 MB of new pages through the writer's
    # cache (40 channels of 25, within the namespace's history of 50 each).
    text = "p" * 3000
    for n in range(1000):
        server_api(server, "publish", {"channel": f"stored:page-cache-{n % 40}", "data": {"text": text, "n": n}})
    in_use_after, free_after = block(server)
    sqlite_after = metric(server, "gondola_sqlite_memory_bytes")
    assert in_use_after - in_use_before >= 3_000_000, f"the block's bytes in use went from {in_use_before} to {in_use_after}"
    assert free_after > 0
    assert metric(server, 'gondola_sqlite_page_cache_bytes{state="heap"}') == 0
    # Without the block those pages would have come from the heap: 3 MB and more.
    assert sqlite_after - sqlite_before < 1024 * 1024, f"SQLite's memory went from {sqlite_before} to {sqlite_after}"
