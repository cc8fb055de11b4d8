"""The admin page in a real browser (Playwright driving Debian's chromium) on the internal listener:
sign-in (a wrong password refused, then the right one), the node's figures, a channel with its
subscriber in presence and its publications live, and every action — publish, broadcast,
unsubscribe, disconnect, remove history — reaching an SDK client or the stream, with the API's
errors shown on the page. The page never holds the API key, the public listener does not serve it,
and sign-ins are throttled."""
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request

import pytest
from centrifuge import Client
from playwright.async_api import async_playwright, expect

from conftest import API_KEY, free_port, launch
from helpers import ClientEvents, Events, SubEvents

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = os.environ.get("HOST_PAGE_SCREENSHOTS", os.path.join(tempfile.gettempdir(), "gondola-host-page"))
ADMIN_PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "web", "admin")
PASSWORD = "admin-password-for-the-conformance-run"


@pytest.fixture
def hub():
    folder = tempfile.mkdtemp(prefix="gondola-admin-page-")
    internal = free_port()
    settings = {"internal_listen": f"127.0.0.1:{internal}", "admin": True, "admin_password": PASSWORD,
                "admin_secret": "admin-secret-of-the-conformance-run-0123456789", "admin_web_path": ADMIN_PAGE}
    process, server = launch(folder, settings=settings, health_port=internal)
    yield server, internal
    process.terminate()
    process.wait(timeout=10)


def post(url, body, headers=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


async def test_the_admin_page_shows_the_node_and_acts_through_the_server_api(hub):
    server, internal = hub
    events, room_events, other_events = Events(), Events(), Events()
    alice = Client(server.ws_url, events=ClientEvents(events), token=server.token("alice"))
    await alice.connect()
    room = alice.new_subscription("room:admin", SubEvents(room_events))
    other = alice.new_subscription("room:other", SubEvents(other_events))
    await room.subscribe()
    await other.subscribe()
    await room_events.wait("subscribed")
    await other_events.wait("subscribed")

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await page.goto(f"http://127.0.0.1:{internal}/admin")
        assert page.url.endswith("/admin/"), "the bare path moves into the page's folder"
        assert API_KEY not in await page.content()

        # A wrong password is refused on the page; the right one opens the dashboard.
        await page.get_by_label("Admin password").fill("not the password")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#sign-in-result")).to_have_text("wrong password")
        await page.get_by_label("Admin password").fill(PASSWORD)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#dashboard")).to_be_visible()

        # The node with its figures, and the channel with its subscriber.
        await expect(page.locator("#nodes tbody tr")).to_have_count(1)
        await expect(page.locator("#nodes tbody tr td").nth(2)).to_have_text("1")  # alice's connection
        await page.get_by_label("Channels matching").fill("room:*")
        await page.get_by_role("button", name="Show").click()
        channel_row = page.locator('#channels tr[data-channel="room:admin"]')
        await expect(channel_row).to_contain_text("1")
        await channel_row.get_by_role("button", name="Inspect").click()
        await expect(page.locator("#presence tbody")).to_contain_text("alice")
        await expect(page.locator("#watch-state")).to_have_text("live")

        # Publish: the SDK client and the page's live list both get it.
        await page.get_by_label("Channel", exact=True).first.fill("room:admin")
        await page.locator("#publish-data").fill('{"text": "from the admin page"}')
        await page.get_by_role("button", name="Publish").click()
        received = await room_events.wait("publication")
        assert received[0].pub.data == {"text": "from the admin page"}
        await expect(page.locator("#publications")).to_contain_text("from the admin page")
        await expect(page.locator("form[data-method=publish] output")).to_contain_text("done")

        # The API's errors and bad input are shown, and nothing is sent.
        await page.locator("#publish-channel").fill("nowhere:x")
        await page.get_by_role("button", name="Publish").click()
        await expect(page.locator("form[data-method=publish] output")).to_have_text("error 102: unknown channel: nowhere:x")
        await page.locator("#publish-channel").fill("room:admin")
        await page.locator("#publish-data").fill("{not json")
        await page.get_by_role("button", name="Publish").click()
        await expect(page.locator("form[data-method=publish] output")).to_contain_text("data is not JSON")

        # Broadcast to both channels.
        await page.locator("#broadcast-channels").fill("room:admin room:other")
        await page.locator("#broadcast-data").fill('{"text": "to both"}')
        await page.get_by_role("button", name="Broadcast").click()
        await other_events.wait("publication")
        assert (await room_events.wait("publication", 2))[1].pub.data == {"text": "to both"}

        os.makedirs(SCREENSHOTS, exist_ok=True)
        await page.screenshot(path=os.path.join(SCREENSHOTS, "admin-page.png"), full_page=True)

        # Remove the history: the stream is empty afterwards.
        history = lambda: post(f"http://127.0.0.1:{internal}/api/history", {"channel": "room:admin", "limit": 10}, {"X-API-Key": API_KEY})
        assert history()[1]["result"].get("publications")
        await page.locator("#history-channel").fill("room:admin")
        await page.get_by_role("button", name="Remove history").click()
        await expect(page.locator("form[data-method=history_remove] output")).to_have_text("done")
        assert not history()[1]["result"].get("publications")

        # Unsubscribe alice from one channel, then disconnect her.
        await page.locator("#unsubscribe-user").fill("alice")
        await page.locator("#unsubscribe-channel").fill("room:other")
        await page.get_by_role("button", name="Unsubscribe").click()
        await other_events.wait("unsubscribed")
        await page.locator("#disconnect-user").fill("alice")
        await page.get_by_role("button", name="Disconnect").click()
        await events.wait("disconnected", timeout=10)
        await browser.close()
    await alice.disconnect()


async def test_the_admin_endpoints_refuse_without_a_sign_in_and_throttle_guesses(hub):
    server, internal = hub
    # The public listener serves no admin page when an internal one exists.
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"http://127.0.0.1:{server.port}/admin/", timeout=5)
    assert missing.value.code == 404
    # The API and the live stream need a sign-in's token; the API key opens neither.
    status, answer = post(f"http://127.0.0.1:{internal}/admin/api/info", {}, {"X-API-Key": API_KEY})
    assert status == 401 and answer["error"]["code"] == 101
    status, answer = post(f"http://127.0.0.1:{internal}/admin/api/info", {}, {"Authorization": "token 9999999999.forged"})
    assert status == 401
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{internal}/admin/watch?channel=room:a&token=forged", timeout=5)
    assert refused.value.code == 401
    # A sign-in's token opens the API.
    status, answer = post(f"http://127.0.0.1:{internal}/admin/auth", {"password": PASSWORD})
    assert status == 200
    status, answer = post(f"http://127.0.0.1:{internal}/admin/api/info", {}, {"Authorization": f"token {answer['token']}"})
    assert status == 200 and answer["result"]["nodes"][0]["uid"]
    # Guessing is throttled: at most ten attempts a minute, then 429 with the right password too.
    statuses = [post(f"http://127.0.0.1:{internal}/admin/auth", {"password": f"guess {n}"})[0] for n in range(10)]
    assert statuses.count(401) <= 9 and statuses[-1] == 429, statuses
    status, answer = post(f"http://127.0.0.1:{internal}/admin/auth", {"password": PASSWORD})
    assert status == 429 and answer["error"]["code"] == 111
