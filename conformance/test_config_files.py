"""Configuration files and logs as a team runs them: `gondola genconfig` makes a commented YAML or
TOML file with fresh secrets, `gondola checkconfig` names every problem with its key and line, the
hub runs from the file, with the SDK connecting on a token `gentoken` minted from the same file, and
`log_format: json` writes one JSON object per line with each component at its own level."""
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import tomllib
import urllib.request

import pytest
from centrifuge import Client

from conftest import GONDOLA, free_port, launch, serve
from helpers import ClientEvents, Events, SubEvents


def gondola(*arguments, cwd):
    return subprocess.run([GONDOLA, *arguments], capture_output=True, text=True, timeout=60, cwd=cwd)


def set_key(text, key, value, fmt):
    """The file with `key`'s line written anew (`value` as JSON, which YAML and TOML read the same)."""
    separator = ":" if fmt == "yaml" else " ="
    pattern = re.compile(rf"^{key}{separator} .*$", re.MULTILINE)
    assert pattern.search(text), f"{key} is not in the generated file"
    return pattern.sub(f"{key}{separator} {json.dumps(value)}", text, count=1)


@pytest.mark.parametrize("fmt", ["yaml", "toml"])
async def test_a_generated_file_checks_runs_the_hub_and_signs_the_tokens_it_accepts(fmt):
    folder = tempfile.mkdtemp(prefix=f"gondola-config-{fmt}-")
    name = f"gondola.{fmt}"
    made = gondola("genconfig", "-c", name, cwd=folder)
    assert made.returncode == 0 and made.stdout.startswith(f"wrote {name}"), made
    path = os.path.join(folder, name)
    text = open(path).read()
    # Each key's comment is its doc line (docs/configuration.md).
    assert "# HS256 secret" in text and "# engine" in text
    again = gondola("genconfig", "-c", name, cwd=folder)
    assert again.returncode == 1 and f"'{name}' exists already" in again.stderr and open(path).read() == text

    port, internal = free_port(), free_port()
    for key, value in [("listen", f"127.0.0.1:{port}"), ("internal_listen", f"127.0.0.1:{internal}"),
                       ("database", os.path.join(folder, "gondola.sqlite"))]:
        text = set_key(text, key, value, fmt)
    open(path, "w").write(text)
    checked = gondola("checkconfig", "--config", name, cwd=folder)
    assert checked.returncode == 0 and checked.stdout.strip() == f"configuration is valid: {name}", checked

    api_key = (tomllib.loads(text) if fmt == "toml" else {"api_key": re.search(r'^api_key: "(.*)"$', text, re.M)[1]})["api_key"]
    process, server = serve(folder, path, port, health_port=internal)
    try:
        token = gondola("gentoken", "-u", "ada", "-q", "--config", name, cwd=folder).stdout.strip()
        events = Events()
        client = Client(server.ws_url, events=ClientEvents(events), token=token)
        await client.connect()
        sub_events = Events()
        # `room` is the generated namespace, open to clients' subscriptions.
        subscription = client.new_subscription("room:lobby", events=SubEvents(sub_events))
        await subscription.subscribe()
        await sub_events.wait("subscribed")
        request = urllib.request.Request(
            f"http://127.0.0.1:{internal}/api/publish", data=json.dumps({"channel": "room:lobby", "data": {"hello": fmt}}).encode(),
            headers={"X-API-Key": api_key, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert "result" in json.loads(response.read())
        publication = await sub_events.wait("publication")
        assert publication[0].pub.data == {"hello": fmt}
        await client.disconnect()
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_checkconfig_and_serve_name_every_problem_with_its_key_and_line():
    folder = tempfile.mkdtemp(prefix="gondola-config-bad-")
    open(os.path.join(folder, "bad.yaml"), "w").write(
        "listen: nowhere\n"
        "ping_interval: soon\n"
        "\n"
        "namespaces:\n"
        "  - name: room\n"
        "    history_size: -1\n"
        "bogus: 1\n")
    checked = gondola("checkconfig", "--config", "bad.yaml", cwd=folder)
    assert checked.returncode == 1 and not checked.stdout, checked
    lines = checked.stderr.splitlines()
    assert lines[0] == "gondola: config file bad.yaml line 1: 'listen' expected host:port, got 'nowhere'"
    assert lines[1].startswith("gondola: config file bad.yaml line 2: 'ping_interval' expected a duration")
    assert lines[2] == "gondola: config file bad.yaml line 4: 'namespaces[0].history_size' must be at least 0, got -1"
    assert lines[3].startswith("gondola: config file bad.yaml line 7: unknown key 'bogus'")
    assert lines[4] == "gondola: 4 problem(s); the hub would not start"
    # The same file stops `serve` with the same four, and nothing is created.
    served = gondola("serve", "--config", "bad.yaml", cwd=folder)
    assert served.returncode != 0 and "line 7: unknown key 'bogus'" in served.stderr and "line 1: 'listen'" in served.stderr
    assert sorted(os.listdir(folder)) == ["bad.yaml"]
    # A flag overrides the file, and its own problem is named as a flag's.
    open(os.path.join(folder, "ok.toml"), "w").write('listen = "127.0.0.1:8000"\n')
    flagged = gondola("checkconfig", "--config", "ok.toml", "--ping-interval", "later", cwd=folder)
    assert flagged.returncode == 1 and "flag --ping-interval: 'ping_interval' expected a duration" in flagged.stderr, flagged
    syntax = gondola("checkconfig", "--config", "broken.toml", cwd=folder)
    assert syntax.returncode == 1 and "cannot read config file broken.toml" in syntax.stderr
    open(os.path.join(folder, "broken.toml"), "w").write('listen = "127.0.0.1:8000"\nping_interval = \n')
    syntax = gondola("checkconfig", "--config", "broken.toml", cwd=folder)
    assert syntax.returncode == 1 and "config file broken.toml line 2 column 17: not valid TOML" in syntax.stderr, syntax


def test_json_logs_are_one_object_per_line_with_each_component_at_its_own_level():
    folder = tempfile.mkdtemp(prefix="gondola-json-logs-")
    # push's notice about missing credentials is below its level; connections' warnings are not.
    process, server = launch(folder, settings={"log_format": "json", "log_levels": {"push": "warning", "connections": "info"}})
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
            connection.sendall((
                "GET /connection/websocket HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: https://evil.example\r\n\r\n").encode())
            assert connection.recv(4096).startswith(b"HTTP/1.1 403")
        log_path = os.path.join(folder, "server.log")

        def refusal_logged():
            return any('"component":"connections"' in line and "evil.example" in line for line in open(log_path))
        deadline = time.time() + 10
        while not refusal_logged():
            assert time.time() < deadline, open(log_path).read()
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(timeout=10)
    entries = []
    for line in open(log_path).read().splitlines():
        entry = json.loads(line)  # every line, the banner's too
        assert {"time", "level", "message", "label"} <= entry.keys(), line
        entries.append(entry)
    refused = [e for e in entries if e.get("component") == "connections" and "evil.example" in json.dumps(e)]
    assert refused and refused[0]["level"] == "warning"
    assert not [e for e in entries if e.get("component") == "push" and e["level"] in ("info", "notice")], entries
    assert [e for e in entries if e["message"].startswith("gondola listening on")], entries
