"""Crash reports with the official SDK and plain HTTP: the whole flow from a detected crash
to a shared PDF, every bad input (followed by a healthy client), a kill -9 during
uploads that leaves no row without its file and no file without its row, and a crash text
waiting for the SMS gateway at a kill -9 sent by the restarted process."""
import asyncio
import json
import os
import sqlite3
import struct
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
import zlib

import pytest
from centrifuge import ReplyError

from conftest import launch
from helpers import Events, SubEvents, connected_client, eventually, server_api
from http_standin import QuietHandler, serve
from test_bad_input import assert_healthy

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "GondolaServicesTests", "Fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def png(seed, size=32):
    """A real PNG whose pixels depend on `seed` (so each one is a different file)."""
    raw = b"".join(b"\x00" + b"".join(bytes(((x * 7 + seed) % 256, (y * 5 + seed // 256) % 256, 90)) for x in range(size))
                   for y in range(size))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def http(server, method, path, token=None, body=None):
    """An HTTP call; answers (status, body bytes)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def poppler(tool, pdf, *args):
    with tempfile.NamedTemporaryFile(suffix=".pdf") as f:
        f.write(pdf)
        f.flush()
        extra = ["-"] if tool == "pdftotext" else []
        return subprocess.run([tool, *args, f.name, *extra], check=True, capture_output=True, text=True, timeout=30).stdout


async def rpc(client, codec, method, data):
    return codec.into((await client.rpc(method, codec.out(data))).data)


async def test_detected_crash_to_shared_report(server, codec):
    owner = f"driver-{codec.name}"
    phone, _ = await connected_client(server, owner, codec)
    personal = Events()
    await phone.new_subscription(f"personal:#{owner}", SubEvents(personal)).subscribe()
    await personal.wait("subscribed")
    detected = server_api(server, "crash_detected", {"user": owner, "lat": 47.4979, "lon": 19.0402, "ts": 1763800000000})
    assert detected["source"] == "detected" and detected["sms"] == {"status": "no_phone"}
    pushed = codec.into((await personal.wait("publication"))[0].pub.data)
    assert pushed["type"] == "crash.detected" and pushed["link"] == f"crashassistant://crash/{detected['id']}"
    crash = detected["id"]

    # A second device follows the draft live.
    tablet, _ = await connected_client(server, owner, codec)
    live = Events()
    await tablet.new_subscription(f"crash:{crash}", SubEvents(live)).subscribe()
    await live.wait("subscribed")
    await rpc(phone, codec, "crash.update", {"crash": crash, "injured": ["myself", "my_passengers"]})
    await rpc(phone, codec, "crash.update", {"crash": crash, "note": "Hit from behind at the tram stop"})
    token = server.token(owner)
    for section, name in (("licence_plate", "plate.jpg"), ("crash_scene", "scene.png"), ("your_vehicle_damage", "damage.heic")):
        status, body = http(server, "POST", f"/api/crash/{crash}/photos/{section}?name={name}", token, fixture(name))
        assert status == 201, body
        assert json.loads(body)["file_name"] == name
    changes = [codec.into(p.pub.data)["type"] for p in await live.wait("publication", count=5)]
    assert changes == ["crash.updated", "crash.updated", "photo.added", "photo.added", "photo.added"]

    listed = (await rpc(phone, codec, "crash.list", {}))["crashes"]
    mine = next(c for c in listed if c["id"] == crash)
    assert mine["status"] == "draft" and mine["counts"] == {"injured": 2, "photos": 3, "note": True}

    reported = await rpc(phone, codec, "crash.report", {"crash": crash})
    assert reported["status"] == "report"
    assert codec.into((await live.wait("publication", count=6))[5].pub.data)["type"] == "report.created"
    status, pdf = http(server, "GET", reported["report"], token)
    assert status == 200 and pdf.startswith(b"%PDF-")
    text = poppler("pdftotext", pdf)
    for expected in ("Myself", "My passenger(s)", "Hit from behind at the tram stop", "47.49790, 19.04020", "2025-11-22 08:26 UTC"):
        assert expected in text, expected
    assert len(poppler("pdfimages", pdf, "-list").splitlines()[2:]) == 3

    shared = await rpc(phone, codec, "crash.share", {"crash": crash})
    status, public = http(server, "GET", shared["url"])
    assert status == 200 and public == pdf
    await rpc(phone, codec, "crash.unshare", {"crash": crash})
    status, body = http(server, "GET", shared["url"])
    assert status == 404 and json.loads(body)["error"]["code"] == 103
    await phone.disconnect()
    await tablet.disconnect()


async def test_bad_crash_input_changes_nothing_and_others_are_served(server, codec):
    owner, intruder = f"owner-{codec.name}", f"intruder-{codec.name}"
    alice, _ = await connected_client(server, owner, codec)
    mallory, _ = await connected_client(server, intruder, codec)
    crash = (await rpc(alice, codec, "crash.start", {"lat": 47.5, "lon": 19.0}))["id"]
    with pytest.raises(ReplyError) as refused:
        await rpc(alice, codec, "crash.report", {"crash": crash})
    assert refused.value.code == 108

    for target in (crash, "crash-never-made"):
        for method, data in (("crash.get", {"crash": target}), ("crash.update", {"crash": target, "note": "mine now"}),
                             ("crash.discard", {"crash": target}), ("crash.report", {"crash": target})):
            with pytest.raises(ReplyError) as refused:
                await rpc(mallory, codec, method, data)
            assert refused.value.code == 103 and refused.value.message == f"permission denied: crash {target} is not yours"
        watching = Events()
        await mallory.new_subscription(f"crash:{target}", SubEvents(watching)).subscribe()
        assert (await watching.wait("unsubscribed"))[0].code == 103

    for data, fragment in (({"injured": ["no_one", "myself"]}, "injured: 'no_one' stands alone"),
                           ({"injured": ["unsure", "other_driver"]}, "injured: 'unsure' stands alone"),
                           ({"injured": ["bystander"]}, "injured: unknown value 'bystander'"),
                           ({"note": "x" * 2001}, "note is 2001 characters")):
        with pytest.raises(ReplyError) as refused:
            await rpc(alice, codec, "crash.update", {"crash": crash, **data})
        assert refused.value.code == 107 and fragment in refused.value.message

    token, other = server.token(owner), server.token(intruder)
    for path, body, auth, status, code in (
        (f"/api/crash/{crash}/photos/selfie", png(1), token, 400, 107),
        (f"/api/crash/{crash}/photos/crash_scene", b"GIF89a not accepted", token, 415, 107),
        (f"/api/crash/{crash}/photos/crash_scene", fixture("plate.jpg") + bytes(10 << 20), token, 413, 106),
        (f"/api/crash/{crash}/photos/crash_scene", png(2), other, 403, 103),
        (f"/api/crash/{crash}/photos/crash_scene", png(3), None, 401, 101),
    ):
        answered, answer = http(server, "POST", path, auth, body)
        assert answered == status and json.loads(answer)["error"]["code"] == code, (path, answered, answer)
    got = await rpc(alice, codec, "crash.get", {"crash": crash})
    assert got["injured"] == [] and got["note"] == "" and got["counts"]["photos"] == 0
    await alice.disconnect()
    await mallory.disconnect()
    await assert_healthy(server)


def stored_files(folder):
    root = os.path.join(folder, "files", "crash")
    return {name for shard in os.listdir(root) if len(shard) == 2 for name in os.listdir(os.path.join(root, shard))}


async def test_kill_9_during_uploads_leaves_rows_and_files_in_step(codec):
    folder = tempfile.mkdtemp(prefix=f"gondola-crash-kill-{codec.name}-")
    process, server = launch(folder)
    owner = "survivor"
    client, _ = await connected_client(server, owner, codec)
    crash = (await rpc(client, codec, "crash.start", {}))["id"]
    await client.disconnect()
    token = server.token(owner)
    statuses = []

    def upload_until_killed():
        for n in range(400):
            try:
                # A real PNG header (all the server reads to accept it) with 2 MB behind it.
                body = png(n) + os.urandom(2 << 20)
                status, _ = http(server, "POST", f"/api/crash/{crash}/photos/{['crash_scene', 'licence_plate'][n % 2]}", token, body)
                statuses.append(status)
                if status == 409:  # both sections full: delete one and go on
                    break
            except OSError:
                return
    uploader = threading.Thread(target=upload_until_killed)
    uploader.start()
    while len(statuses) < 5 and uploader.is_alive():
        await asyncio.sleep(0.01)
    process.kill()
    process.wait(timeout=10)
    uploader.join(timeout=60)
    assert statuses.count(201) > 0

    process, server = launch(folder, port=server.port)
    try:
        with sqlite3.connect(os.path.join(folder, "gondola.sqlite")) as db:
            referenced = {row[0] for row in db.execute("SELECT file_hash FROM crash_photo")}
        assert referenced == stored_files(folder)
        assert os.listdir(os.path.join(folder, "files", "crash", "tmp")) == []
        client, _ = await connected_client(server, owner, codec)
        got = await rpc(client, codec, "crash.get", {"crash": crash})
        photos = got["photos"]["crash_scene"] + got["photos"]["licence_plate"]
        assert len(photos) == len(referenced) and len(photos) >= statuses.count(201)
        for photo in photos:
            assert http(server, "GET", f"/api/crash/{crash}/photos/{photo['id']}", token)[0] == 200
        await client.disconnect()
    finally:
        process.terminate()
        process.wait(timeout=10)


class SMSGateway:
    """The SMS gateway's webhook: refuses (503) until `accepting`, then takes each text; records both."""

    def __init__(self):
        self.accepting = False
        self.refused = []
        self.texts = []
        gateway = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not gateway.accepting:
                    gateway.refused.append(body)
                    return self.answer(b'{"error":"down"}', status=503)
                gateway.texts.append((self.headers["Authorization"], body))
                self.answer(b'{"ok":true}')

        self.server = serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/sms"


def test_a_text_waiting_at_a_kill_9_is_sent_after_the_restart():
    """A crash text the gateway refused waits in the durable queue: the process killed with -9 before
    its next attempt, the restarted one sends it, once."""
    gateway = SMSGateway()
    folder = tempfile.mkdtemp(prefix="gondola-crash-sms-kill-")
    settings = {"sms_webhook_url": gateway.url, "sms_webhook_token": "gateway-token"}
    process, server = launch(folder, settings=settings)
    try:
        detected = server_api(server, "crash_detected", {"user": "texted", "phone": "+41791234567"})
        assert detected["sms"] == {"status": "queued", "to": "+41791234567"}
        eventually(lambda: gateway.refused, "the text's first attempt")
        process.kill()
        process.wait(timeout=10)
        gateway.accepting = True
        process, server = launch(folder, port=server.port, settings=settings)
        eventually(lambda: gateway.texts, "the text sent by the restarted process")
        authorization, text = gateway.texts[0]
        assert authorization == "Bearer gateway-token"
        assert text == {"to": "+41791234567", "text": f"We detected a crash. Collect what happened with Crash Assistant: crashassistant://crash/{detected['id']}"}
        with sqlite3.connect(os.path.join(folder, "gondola.sqlite")) as db:
            eventually(lambda: db.execute("SELECT COUNT(*) FROM outbound_call").fetchone()[0] == 0, "the sent text forgotten")
        assert len(gateway.texts) == 1
    finally:
        process.terminate()
        process.wait(timeout=10)
        gateway.server.shutdown()
