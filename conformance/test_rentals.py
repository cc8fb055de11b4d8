"""Car rentals end to end: accounts whose activation and reset mails go through a real SMTP
server (aiosmtpd) and whose links are followed, the demo fleet on the live map with
centrifuge-python, planned rentals, many clients racing for one car, and every bad input
followed by a check that other clients are still served."""
import asyncio
import email
import email.policy
import json
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest
from aiosmtpd.controller import Controller
from centrifuge import Client, ReplyError

from conftest import API_KEY, GONDOLA, free_port, launch
from helpers import ClientEvents, Events, SubEvents, post, server_api
from test_bad_input import assert_healthy

INNSBRUCK = {"lat": 47.2654, "lon": 11.3927}


class Mailbox:
    """An SMTP server's receiving end: keeps every message it is handed."""

    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 OK"

    def wait(self, count, timeout=15):
        deadline = time.time() + timeout
        while len(self.messages) < count and time.time() < deadline:
            time.sleep(0.05)
        assert len(self.messages) >= count, f"{len(self.messages)} mails arrived, expected {count}"
        return self.messages[count - 1]


def text_of(message):
    return message.get_body(preferencelist=("plain",)).get_content()


@pytest.fixture(scope="module")
def rentals():
    mailbox = Mailbox()
    smtp = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    port = free_port()
    process, server = launch(tempfile.mkdtemp(prefix="gondola-rentals-"), ["--demo"], port=port, settings={
        "smtp_url": f"smtp://127.0.0.1:{smtp.port}", "bcrypt_cost": 4, "public_url": f"http://127.0.0.1:{port}",
        "mail_from": "Automagic <hello@automagic.test>"})
    yield server, mailbox
    process.terminate()
    process.wait(timeout=10)
    smtp.stop()


def account(server, path, body, token=None, raw=None):
    """POSTs to /api/account/<path>; answers (status, JSON body, headers)."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/account/{path}", data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers


def follow(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def signed_in(server, token):
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=token)
    await client.connect()
    await events.wait("connected")
    return client


async def rpc(client, method, data):
    return (await client.rpc(method, data)).data


async def test_account_mails_are_followed_then_cars_are_rented(rentals):
    server, mailbox = rentals
    status, created, _ = account(server, "register", {"email": "Eva@Example.com", "password": "eva-secret", "name": "Eva"})
    assert status == 201 and created["user"]["email"] == "eva@example.com"
    status, body, _ = account(server, "login", {"email": "eva@example.com", "password": "eva-secret"})
    assert status == 403 and body["error"]["code"] == "account_not_activated"

    activation = mailbox.wait(1)
    assert activation["To"] == "eva@example.com" and activation["Subject"] == "Activate your account"
    text = text_of(activation)
    assert re.search(r"automagic://activate\?key=[A-Za-z0-9_-]{43}", text)
    web_link = re.search(r"(http://127\.0\.0\.1:\d+/api/account/activate\?key=[A-Za-z0-9_-]{43})", text).group(1)
    assert "Activate your account" in activation.get_body(preferencelist=("html",)).get_content()
    status, page = follow(web_link)
    assert status == 200 and "Account activated" in page

    status, session, _ = account(server, "login", {"email": "eva@example.com", "password": "eva-secret"})
    assert status == 200
    eva = await signed_in(server, session["token"])
    user = session["user"]["id"]
    personal = Events()
    await eva.new_subscription(f"personal:#{user}", SubEvents(personal)).subscribe()

    # The demo fleet is on the map, nearest first, and a cell's subscription carries its cars.
    near = (await rpc(eva, "cars.near", {**INNSBRUCK, "radius": 1500, "limit": 10}))["cars"]
    assert len(near) == 10 and [c["distance_m"] for c in near] == sorted(c["distance_m"] for c in near)
    chosen = near[0]
    cell = Events()
    await eva.new_subscription(chosen["cell"], SubEvents(cell)).subscribe()
    snapshot = (await cell.wait("subscribed"))[0].data
    assert chosen["id"] in [c["id"] for c in snapshot["cars"]]

    starts_at = int(time.time() * 1000) + 2 * 86_400_000
    planned = (await rpc(eva, "rental.plan", {"car": chosen["id"], "starts_at": starts_at}))["rental"]
    assert planned["state"] == "planned" and planned["price_per_day_cents"] == chosen["price_per_day_cents"]
    gone = (await cell.wait("publication"))[0].pub.data
    assert gone == {"type": "car_gone", "id": chosen["id"], "reason": "reserved"}
    assert (await personal.wait("publication"))[0].pub.data["rental"]["id"] == planned["id"]
    await rpc(eva, "rental.cancel", {"rental": planned["id"]})
    assert (await cell.wait("publication", count=2))[1].pub.data["car"]["id"] == chosen["id"]

    active = (await rpc(eva, "rental.start", {"car": chosen["id"]}))["rental"]
    stopped = (await rpc(eva, "rental.stop", {"rental": active["id"], "lat": 47.2690, "lon": 11.4040}))["rental"]
    assert stopped["days"] == 1 and stopped["amount_cents"] == chosen["price_per_day_cents"]
    listed = await rpc(eva, "rental.list", {})
    assert listed["planned"] == [] and listed["active"] == [] and {r["state"] for r in listed["past"]} == {"finished", "cancelled"}

    # The reset mail's app link carries a key that sets a new password once.
    for address in ("eva@example.com", "nobody@example.com"):
        status, body, _ = account(server, "reset-password/init", {"email": address})
        assert status == 200 and body == {"status": "ok"}
    mailbox.wait(2)
    # A marker mail asked for after the unknown address: once it is out, a mail for that address would be too.
    assert account(server, "reset-password/init", {"email": "eva@example.com"})[0] == 200
    reset = mailbox.wait(3)
    assert [message["To"] for message in mailbox.messages[1:]] == ["eva@example.com"] * 2, "an unknown address gets no mail"
    key = re.search(r"automagic://resetpassword\?key=([A-Za-z0-9_-]{43})", text_of(reset)).group(1)
    assert account(server, "reset-password/finish", {"key": key, "new_password": "eva-new-secret"})[0] == 200
    assert account(server, "reset-password/finish", {"key": key, "new_password": "eva-other-secret"})[0] == 404
    assert account(server, "login", {"email": "eva@example.com", "password": "eva-new-secret"})[0] == 200
    await eva.disconnect()


async def test_many_clients_racing_for_one_car_leave_exactly_one_rental(rentals):
    server, _ = rentals
    server_api(server, "car_upsert", {"id": "race-car", "make": "Fiat", "model": "500", "year": 2023, "seats": 4,
                                      "price_per_day_cents": 3900, "lat": 47.2660, "lon": 11.3990})
    clients = [await signed_in(server, server.token(f"racer-{i}")) for i in range(16)]
    starts_at = int(time.time() * 1000) + 86_400_000

    async def attempt(index, client):
        try:
            if index % 2:
                await rpc(client, "rental.start", {"car": "race-car"})
            else:
                await rpc(client, "rental.plan", {"car": "race-car", "starts_at": starts_at})
            return "won"
        except ReplyError as error:
            return error.code

    outcomes = await asyncio.gather(*(attempt(i, c) for i, c in enumerate(clients)))
    assert outcomes.count("won") == 1 and outcomes.count(108) == len(clients) - 1, outcomes
    for client in clients:
        await client.disconnect()


async def test_bad_account_and_rental_input_is_refused_and_others_are_served(rentals):
    server, _ = rentals
    cases = [
        ("register", None, b"{", 400, "bad_body", None),
        ("register", {"email": "x@y.z", "password": "long-enough", "name": "X", "pad": "p" * 20000}, None, 413, "body_too_large", None),
        ("register", {"email": "not-an-address", "password": "long-enough", "name": "X"}, None, 422, "invalid_field", "email"),
        ("register", {"email": "x@y.z", "password": "short", "name": "X"}, None, 422, "invalid_field", "password"),
        ("register", {"email": "x@y.z", "name": "X"}, None, 400, "missing_field", "password"),
        ("login", {"email": "ghost@example.com", "password": "whatever1"}, None, 401, "invalid_credentials", None),
        ("activate", {"key": "A" * 43}, None, 404, "key_not_found", "key"),
        ("reset-password/finish", {"key": "B" * 43, "new_password": "long-enough"}, None, 404, "key_not_found", "key"),
        ("change-password", {"current_password": "a", "new_password": "long-enough"}, None, 401, 101, None),
    ]
    for path, body, raw, status, code, field in cases:
        got, answer, _ = account(server, path, body, raw=raw)
        assert got == status and answer["error"]["code"] == code and answer["error"].get("field") == field, (path, got, answer)
    assert account(server, "register", {"email": "taken@example.com", "password": "long-enough", "name": "T"})[0] == 201
    got, answer, _ = account(server, "register", {"email": "TAKEN@example.com", "password": "long-enough", "name": "T"})
    assert got == 409 and answer["error"] == {"code": "email_taken", "message": "an account with this email exists", "field": "email"}
    for _ in range(5):
        assert account(server, "login", {"email": "taken@example.com", "password": "wrong-pass"})[0] in (401, 403)
    got, answer, headers = account(server, "login", {"email": "taken@example.com", "password": "wrong-pass"})
    assert got == 429 and int(headers["Retry-After"]) > 0

    client = await signed_in(server, server.token("mallory"))
    for method, data, code in [
        ("cars.near", {"lat": 95, "lon": 11}, 107), ("cars.in_box", {"bbox": [11.5, 47.2, 11.3, 47.3]}, 107),
        ("cars.cells", {"bbox": [-10, 30, 30, 60]}, 107), ("rental.plan", {"car": "demo-001", "starts_at": 1}, 107),
        ("rental.stop", {"rental": "rental-nope", "lat": 47, "lon": 11}, 103), ("rental.start", {}, 107),
    ]:
        with pytest.raises(ReplyError) as refused:
            await rpc(client, method, data)
        assert refused.value.code == code, (method, refused.value)
    await client.disconnect()
    swapped = [{"id": f"sw{i}", "make": "VW", "model": "Up", "year": 2020, "seats": 4, "price_per_day_cents": 3000,
                "lat": 11.39 + i / 1000, "lon": 47.26} for i in range(5)]
    result = post(f"{server.api_url}/car_import", {"cars": swapped}, {"X-API-Key": API_KEY})["error"]
    assert result["code"] == 107 and "lat and lon swapped" in result["message"]
    await assert_healthy(server)


def test_import_cars_sends_a_file_and_refuses_swapped_coordinates(rentals, tmp_path):
    server, _ = rentals
    cars = [{"id": f"file-{i}", "make": "Toyota", "model": "Yaris", "year": 2021, "seats": 5, "price_per_day_cents": 4400 + i,
             "lat": 47.262 + i / 1000, "lon": 11.40} for i in range(3)]
    good = tmp_path / "cars.json"
    good.write_text(json.dumps({"cars": cars}))
    run = subprocess.run([GONDOLA, "import-cars", str(good), "--config", server.config_path], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "imported 3 cars" in run.stdout, run.stderr
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps([dict(car, id=f"swapped-{i}", lat=car["lon"], lon=car["lat"]) for i, car in enumerate(cars)]))
    run = subprocess.run([GONDOLA, "import-cars", str(swapped), "--config", server.config_path], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "lat and lon swapped" in run.stderr, (run.stdout, run.stderr)
    broken = tmp_path / "broken.json"
    broken.write_text('{"cars": [{"id": "x"}]}')
    run = subprocess.run([GONDOLA, "import-cars", str(broken), "--config", server.config_path], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "cars[0]" in run.stderr and "make" in run.stderr, run.stderr
    listed = post(f"{server.api_url}/car_import", {"cars": [dict(cars[0], price_per_day_cents=4400)]}, {"X-API-Key": API_KEY})
    assert listed == {"result": {"imported": 1}}
