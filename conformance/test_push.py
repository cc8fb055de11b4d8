"""Push notifications with the official SDK against a real hub and the APNs/FCM stand-in (a process
of its own, HTTP/2 over TLS): devices registered over the client protocol, and a hub killed with -9
while notifications wait in its outbox delivers each of them exactly once after its restart."""
import asyncio
import collections
import json
import os
import subprocess
import tempfile
import time

from conftest import GONDOLA, launch
from helpers import call, connected_client, metric_becomes, trip_mates

STANDIN = os.environ.get("CONFORMANCE_STANDIN_BINARY", os.path.join(os.path.dirname(GONDOLA), "gondola-push-standin"))


def start_standin(folder, port=0):
    """Starts the stand-in; answers the process, its port and the hub settings it wrote."""
    process = subprocess.Popen([STANDIN, "--folder", folder, "--port", str(port)], stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline().split()
    assert line and line[0] == "ready", f"stand-in did not start: {line}"
    with open(os.path.join(folder, "standin.json")) as f:
        return process, int(line[1]), json.load(f)


def accepted(folder):
    path = os.path.join(folder, "accepted.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def stop(process, kill=False):
    process.kill() if kill else process.terminate()
    process.wait(timeout=10)


def text_of(push):
    """The broadcast text a pushed notification carries, on either service."""
    if push["service"] == "apns":
        return push["body"]["aps"]["alert"]["body"]
    return push["body"]["message"]["notification"]["body"]


async def test_a_hub_killed_with_notifications_waiting_delivers_each_once_after_restart(codec):
    standin_folder = tempfile.mkdtemp(prefix="gondola-standin-")
    standin, standin_port, settings = start_standin(standin_folder)
    hub_folder = tempfile.mkdtemp(prefix="gondola-push-")
    hub, server = launch(hub_folder, settings=settings)
    travellers = [f"push-{codec.name}-{n}" for n in range(20)]
    trip = trip_mates(server, f"push-{codec.name}-host", *travellers)
    tokens = {}
    for n, user in enumerate(travellers):
        client, _ = await connected_client(server, user, codec)
        if n % 2 == 0:
            tokens[user] = f"{n + 1:064x}"
            await call(client, codec, "device.register", {"platform": "apns", "token": tokens[user], "locale": "en"})
        else:
            tokens[user] = f"fcm-{n}:APA91b" + "x" * 140
            await call(client, codec, "device.register", {"platform": "fcm", "token": tokens[user]})
        await client.disconnect()

    # The services are unreachable: the notifications wait in the outbox.
    stop(standin)
    host, _ = await connected_client(server, f"push-{codec.name}-host", codec)
    texts = ["first", "second", "third"]
    for text in texts:
        await call(host, codec, "broadcast.send", {"trip": trip, "text": text})
    await host.disconnect()
    await metric_becomes(server, "gondola_push_outbox_depth", len(travellers) * len(texts))
    stop(hub, kill=True)
    assert accepted(standin_folder) == []

    standin, _, settings = start_standin(standin_folder, port=standin_port)
    hub, server = launch(hub_folder, port=server.port, settings=settings)
    deadline = time.time() + 60
    while len(accepted(standin_folder)) < len(travellers) * len(texts) and time.time() < deadline:
        await asyncio.sleep(0.2)
    # Every notification is recorded as sent: none is left for a second send.
    await metric_becomes(server, "gondola_push_outbox_depth", 0)
    pushes = accepted(standin_folder)
    by_token = collections.defaultdict(list)
    for push in pushes:
        by_token[push["token"]].append(text_of(push))
    assert len(pushes) == len(travellers) * len(texts), f"{len(pushes)} notifications"
    for user, token in tokens.items():
        assert sorted(by_token[token]) == sorted(f"push-{codec.name}-host: {text}" for text in texts), user
    apns_ids = [push["apns_id"] for push in pushes if push["service"] == "apns"]
    assert len(apns_ids) == len(set(apns_ids)) == 10 * len(texts)
    stop(hub)
    stop(standin)


async def test_bad_device_registrations_are_refused_and_change_nothing(codec, server):
    client, _ = await connected_client(server, f"push-bad-{codec.name}", codec)
    for data, field in [
        ({"platform": "apns", "token": "xyz"}, "token"),
        ({"platform": "webpush", "token": "a" * 64}, "platform"),
        ({"platform": "fcm", "token": "bad token with spaces" * 3}, "token"),
        ({"platform": "apns", "token": "ab" * 32, "locale": "-fr"}, "locale"),
    ]:
        try:
            await call(client, codec, "device.register", data)
            raise AssertionError(f"accepted {data}")
        except Exception as error:  # the SDK raises ReplyError with the hub's code and message
            assert getattr(error, "code", None) == 107 and field in str(error), error
    assert (await call(client, codec, "device.unregister", {"token": "ab" * 32})) == {"unregistered": False}
    await client.disconnect()
