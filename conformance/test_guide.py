"""The README's and docs/getting-started.md's code blocks run as a newcomer runs them: against a
hub started by `Scripts/run` (its own namespaces, default log level), from a fresh working folder
whose `var/` is that hub's data folder, each document's blocks in order, the variables a shell
block exports reaching the blocks after it.

What the harness changes in a block, and nothing else: the hub listens on a free port instead of
8000 (`127.0.0.1:8000` and `localhost:8000` are rewritten), `swift run [-q] gondola` is the built
binary, and a shell line that starts `Scripts/run` is the hub this module already started. A
block that cannot run here says why in an HTML comment on the line before it
(`<!-- guide-test: not run: <why> -->`); every other block (but diagrams) must run and exit 0."""
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
from centrifuge import Client

from conftest import GONDOLA, free_port, stop_server

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOCUMENTS = ["README.md", "docs/getting-started.md"]
NOT_RUN = re.compile(r"<!--\s*guide-test:\s*not run:\s*(.+?)\s*-->")
RUNNABLE = {"sh": "shell", "python": "python"}


def code_blocks(document):
    """The fenced blocks of `document`: (line, language, text, why it is not run or None)."""
    lines = open(os.path.join(REPOSITORY, document)).read().splitlines()
    blocks, index = [], 0
    while index < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[index])
        if not fence:
            index += 1
            continue
        start, language = index, fence.group(1)
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        marker = NOT_RUN.search(lines[start - 1]) if start > 0 else None
        blocks.append((start + 1, language, "\n".join(lines[start + 1:end]) + "\n", marker.group(1) if marker else None))
        index = end + 1
    return blocks


@pytest.fixture(scope="module")
def hub():
    """`Scripts/run` with its data in a fresh folder's `var/`, on a free port."""
    folder = tempfile.mkdtemp(prefix="gondola-guide-")
    os.makedirs(os.path.join(folder, "var"))
    port = free_port()
    environment = dict(os.environ, GONDOLA_DATABASE=os.path.join(folder, "var", "gondola.sqlite"), GONDOLA_LISTEN=f"127.0.0.1:{port}")
    environment.pop("GONDOLA_NAMESPACES", None)
    log_path = os.path.join(folder, "hub.log")
    with open(log_path, "w") as log:
        process = subprocess.Popen([os.path.join(REPOSITORY, "Scripts", "run")], stdout=log, stderr=subprocess.STDOUT, env=environment)
    deadline = time.time() + 600  # `swift run` checks the build first
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            raise RuntimeError("Scripts/run did not start: " + open(log_path).read()[-4000:])
        time.sleep(0.2)
    yield {"folder": folder, "port": port, "log": log_path}
    stop_server(process)


def as_run_here(text, port):
    """`text` with the harness's three rewrites (see the module's description)."""
    text = text.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace("localhost:8000", f"localhost:{port}")
    return re.sub(r"swift run (-q )?gondola ", '"$GONDOLA" ', text)


def run_block(language, text, hub, environment):
    """Runs one block in the hub's working folder; returns the environment the next block gets."""
    body = as_run_here(text, hub["port"])
    if language == "sh":
        body = "\n".join(line for line in body.splitlines() if not line.startswith("Scripts/run"))
        exported = os.path.join(hub["folder"], "exported.env")
        command = ["bash", "-c", f"set -euo pipefail\n{body}\nenv -0 > {exported}"]
    else:
        command = [sys.executable, "-c", body]
    result = subprocess.run(command, cwd=hub["folder"], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"exit {result.returncode}\n--- block ---\n{body}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    if language != "sh":
        return environment
    with open(exported) as f:
        return dict(entry.split("=", 1) for entry in f.read().split("\0") if "=" in entry)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_block_of_the_document_runs_as_written_or_says_why_not(document, hub):
    environment = dict(os.environ, GONDOLA=GONDOLA)
    ran = 0
    for line, language, text, not_run in code_blocks(document):
        if language == "mermaid":
            continue
        if not_run:
            continue
        assert language in RUNNABLE, f"{document} line {line}: a {language or 'plain'} block must run, or say why not with <!-- guide-test: not run: … -->"
        environment = run_block(language, text, hub, environment)
        ran += 1
    assert ran > 0 or document == "README.md"


async def test_a_refused_subscribe_is_logged_at_the_hubs_default_level_with_who_what_and_why(hub):
    token = subprocess.run(
        [GONDOLA, "token", "--user", "ned"], cwd=hub["folder"], check=True, capture_output=True, text=True, timeout=30).stdout.strip()
    client = Client(f"ws://127.0.0.1:{hub['port']}/connection/websocket", token=token)
    await client.connect()
    try:
        # The SDK tells the app only that the subscription ended; the hub's log says why.
        await client.new_subscription("vip:backstage").subscribe()
        deadline = time.time() + 10
        while True:
            lines = [line for line in open(hub["log"]) if "command refused" in line and "vip:backstage" in line]
            if lines:
                break
            assert time.time() < deadline, open(hub["log"]).read()[-4000:]
            await asyncio.sleep(0.05)
    finally:
        await client.disconnect()
    line = lines[0]
    for member in ("user=ned", "command=subscribe", "channel=vip:backstage", "code=103", "reason="):
        assert member in line, line
