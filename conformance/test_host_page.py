"""The host page in a real browser (Playwright driving Debian's chromium) against `gondola serve
--demo`: dev sign-in as the demo host, the demo travellers moving on the map, a broadcast reaching
an SDK client, the trip chat both ways, an RSVP changing the count on the page, a server restart
the page reconnects from, a phone-sized viewport, an expired token landing on sign-in, and fences drawn
on the map with their events shown live, and the page falling back to HTTP-streaming, then SSE, when
WebSocket is unavailable to it (a broadcast out, the chat in, a restart survived on the fallback)."""
import asyncio
import os
import re
import shutil
import tempfile
import time

import jwt
import pytest
from centrifuge import Client
from playwright.async_api import async_playwright, expect

from conftest import SECRET, free_port, launch
from helpers import ClientEvents, Events, SubEvents, server_api

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = os.environ.get("HOST_PAGE_SCREENSHOTS", os.path.join(tempfile.gettempdir(), "gondola-host-page"))


@pytest.fixture
def demo():
    folder = tempfile.mkdtemp(prefix="gondola-host-page-")
    port = free_port()
    process, server = launch(folder, ["--demo"], port=port)
    state = {"process": process}
    yield server, folder, port, state
    state["process"].terminate()
    state["process"].wait(timeout=10)


async def sdk_client(server, user):
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=server.token(user))
    await client.connect()
    await events.wait("connected")
    return client


async def marker_position(page, user):
    marker = page.locator(f'[data-user="{user}"].leaflet-marker-icon')
    return await marker.get_attribute("data-lat"), await marker.get_attribute("data-lon")


async def wait_for_move(page, user, timeout=15):
    before = await marker_position(page, user)
    deadline = time.time() + timeout
    while time.time() < deadline:
        await asyncio.sleep(0.3)
        if await marker_position(page, user) != before:
            return
    raise AssertionError(f"{user} did not move on the map in {timeout} s")


async def sign_in(page, port):
    await page.goto(f"http://127.0.0.1:{port}/host/")
    await page.get_by_label("User id").fill("demo-host")
    await page.get_by_label("Display name").fill("Hana Host")
    await page.get_by_role("button", name="Sign in").click()
    await page.locator('button[data-trip="demo"]').click()
    await expect(page.locator("#connection")).to_have_text("live")


async def test_host_page_follows_the_demo_trip(demo):
    server, folder, port, state = demo
    host = await sdk_client(server, "demo-host")
    event = (await host.rpc("event.create", {"title": "Fondue at the chalet", "trip": "demo", "audience": {"kind": "trip"},
                                             "starts_at": int(time.time() * 1000) + 3_600_000})).data
    anna = await sdk_client(server, "demo-anna")
    broadcasts, chat = Events(), Events()
    await anna.new_subscription("trip:demo", SubEvents(broadcasts)).subscribe()
    await anna.new_subscription("chat:trip-demo", SubEvents(chat)).subscribe()
    await broadcasts.wait("subscribed")
    await chat.wait("subscribed")

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await sign_in(page, port)

        # The demo travellers appear as markers, with the resort drawn and its legend, and move.
        await expect(page.locator(".leaflet-marker-icon[data-user]")).to_have_count(4, timeout=15000)
        await expect(page.locator("#travellers li")).to_have_count(4)
        await expect(page.locator("#legend")).to_contain_text("Lift")
        await expect(page.locator("#announcement-form")).to_be_hidden()  # the demo host is not staff
        await wait_for_move(page, "demo-anna")

        # A broadcast from the page reaches an SDK client on trip:demo.
        await page.get_by_label("Message to everyone on the trip").fill("Lifts close at 16:30")
        await page.get_by_role("button", name="Send broadcast").click()
        received = (await broadcasts.wait("publication"))[0].pub.data
        assert received["type"] == "broadcast" and received["text"] == "Lifts close at 16:30" and received["from"] == "demo-host"
        await expect(page.locator("#broadcasts")).to_contain_text("Lifts close at 16:30")

        # The trip chat both ways.
        await anna.rpc("chat.send", {"chat": "trip-demo", "text": "Meet at the top station?", "client_message_id": "anna-1"})
        await expect(page.locator("#chat")).to_contain_text("Meet at the top station?")
        await page.get_by_label("Message", exact=True).fill("Yes, at noon")
        await page.get_by_role("button", name="Send", exact=True).click()
        texts = [p.pub.data["text"] for p in await chat.wait("publication", count=2)]
        assert texts == ["Meet at the top station?", "Yes, at noon"]

        # An RSVP from the SDK changes the count on the page.
        counts = page.locator(f'[data-event="{event["id"]}"] .counts')
        await expect(counts).to_have_attribute("data-going", "0")
        await anna.rpc("event.rsvp", {"event": event["id"], "response": "going"})
        await expect(counts).to_have_attribute("data-going", "1")

        # An event a traveller creates for the trip invites the host and appears on the page.
        made = (await anna.rpc("event.create", {"title": "Sledging at dusk", "trip": "demo", "audience": {"kind": "trip"},
                                                "starts_at": int(time.time() * 1000) + 7_200_000})).data
        await expect(page.locator(f'[data-event="{made["id"]}"]')).to_contain_text("Sledging at dusk")

        await page.locator(".side").evaluate("side => side.scrollTop = 0")
        await page.mouse.move(640, 400)  # the elevation under the pointer
        await expect(page.locator("#elevation")).to_contain_text(" m at ")
        os.makedirs(SCREENSHOTS, exist_ok=True)
        await page.screenshot(path=os.path.join(SCREENSHOTS, "host-dashboard.png"))

        # A restart: the page reconnects by itself and positions flow again.
        state["process"].terminate()
        state["process"].wait(timeout=10)
        await expect(page.locator("#connection")).not_to_have_text("live", timeout=10000)
        state["process"], _ = launch(folder, ["--demo"], port=port)
        await expect(page.locator("#connection")).to_have_text("live", timeout=30000)
        await wait_for_move(page, "demo-ben")

        # A phone-sized viewport shows the same trip; as staff, the host also sends announcements.
        server_api(server, "user_set_staff", {"user": "demo-host", "staff": True})
        announcements = Events()
        await anna.new_subscription("announcements", SubEvents(announcements)).subscribe()
        await announcements.wait("subscribed")
        phone = await browser.new_page(viewport={"width": 390, "height": 844})
        await sign_in(phone, port)
        await expect(phone.locator("#map")).to_be_visible()
        await expect(phone.locator("#travellers li")).to_have_count(4, timeout=15000)
        await phone.get_by_label("Message to every user (staff)").fill("Storm warning after 15:00")
        await phone.get_by_role("button", name="Send announcement").click()
        assert (await announcements.wait("publication"))[0].pub.data["text"] == "Storm warning after 15:00"
        await browser.close()
    await anna.disconnect()
    await host.disconnect()


@pytest.mark.parametrize("blocked", [["websocket"], ["websocket", "http_stream"]])
async def test_without_websocket_the_page_falls_back_and_stays_live(demo, blocked):
    """WebSocket removed from the page (as behind a proxy that breaks it), and in the second run the
    HTTP stream refused too: the page connects over the next transport by itself, sends a broadcast,
    receives the chat, and reconnects over the same transport after a server restart."""
    server, folder, port, state = demo
    expected = "sse" if "http_stream" in blocked else "http_stream"
    anna = await sdk_client(server, "demo-anna")
    broadcasts = Events()
    await anna.new_subscription("trip:demo", SubEvents(broadcasts)).subscribe()
    await broadcasts.wait("subscribed")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.add_init_script("delete window.WebSocket")
        if "http_stream" in blocked:
            await page.route("**/connection/http_stream", lambda route: route.abort("connectionrefused"))
        await sign_in(page, port)
        await expect(page.locator("#connection")).to_have_attribute("title", re.compile(f"over {expected}$"))
        await expect(page.locator(".leaflet-marker-icon[data-user]")).to_have_count(4, timeout=15000)
        await wait_for_move(page, "demo-anna")

        await page.get_by_label("Message to everyone on the trip").fill(f"Over {expected}")
        await page.get_by_role("button", name="Send broadcast").click()
        assert (await broadcasts.wait("publication"))[0].pub.data["text"] == f"Over {expected}"
        await anna.rpc("chat.send", {"chat": "trip-demo", "text": f"Heard over {expected}", "client_message_id": f"anna-{expected}"})
        await expect(page.locator("#chat")).to_contain_text(f"Heard over {expected}")

        state["process"].terminate()
        state["process"].wait(timeout=10)
        await expect(page.locator("#connection")).not_to_have_text("live", timeout=10000)
        state["process"], _ = launch(folder, ["--demo"], port=port)
        await expect(page.locator("#connection")).to_have_text("live", timeout=30000)
        await expect(page.locator("#connection")).to_have_attribute("title", re.compile(f"over {expected}$"))
        await wait_for_move(page, "demo-ben")
        await browser.close()
    await anna.disconnect()


async def test_an_expired_token_lands_on_sign_in_with_the_reason(demo):
    server, _, port, _ = demo
    # A token that expired a minute ago, signed with the server's secret (no waiting for one to expire).
    token = jwt.encode({"sub": "demo-host", "exp": int(time.time()) - 60}, SECRET, algorithm="HS256")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.goto(f"http://127.0.0.1:{port}/host/")
        # The page boots after fetching its configuration: wait until it has (it shows sign-in, having no
        # token), so that only the reloaded page reads the token planted next.
        await expect(page.locator("#sign-in")).to_be_visible()
        await page.evaluate("token => sessionStorage.setItem('gondola.host.token', token)", token)
        await page.reload()
        await expect(page.locator("#sign-in-reason")).to_contain_text("expired")
        await expect(page.get_by_label("User id")).to_be_visible()
        await browser.close()


async def test_the_page_says_when_leaflet_is_missing(tmp_path):
    folder = tempfile.mkdtemp(prefix="gondola-host-page-")
    process, server = launch(folder, settings={"leaflet_path": str(tmp_path)})
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = await browser.new_page()
            await page.goto(f"http://127.0.0.1:{server.port}/host/")
            await expect(page.locator("#notice")).to_contain_text("libjs-leaflet")
            await browser.close()
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_host_draws_fences_and_sees_their_events_live(demo):
    """The host draws a circle and a polygon (its corners clicked clockwise: the page turns the
    ring to GeoJSON's winding) on a trip's map, a traveller's positions cross the circle, and the
    event shows on the page live; a fence is deleted from the page."""
    server, folder, port, state = demo
    now = int(time.time() * 1000)
    trip = server_api(server, "trip_create", {"name": "Fence trip", "resort": "demo", "starts_at": now - 3_600_000,
                                              "ends_at": now + 3_600_000, "hosts": ["demo-host"]})["trip"]["id"]
    server_api(server, "trip_add_member", {"trip": trip, "user": "fence-walker", "role": "traveller"})
    walker = await sdk_client(server, "fence-walker")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.goto(f"http://127.0.0.1:{port}/host/")
        await page.get_by_label("User id").fill("demo-host")
        await page.get_by_role("button", name="Sign in").click()
        await page.locator(f'button[data-trip="{trip}"]').click()
        await expect(page.locator("#connection")).to_have_text("live")
        await expect(page.locator("#legend")).to_contain_text("Lift")
        box = await page.locator("#map").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

        # A circle: its centre, then a point of its edge.
        await page.get_by_label("Fence name").fill("Meeting point")
        await page.get_by_role("button", name="Draw circle").click()
        await page.mouse.click(cx, cy)
        await page.mouse.click(cx + 60, cy)
        await expect(page.locator("#fences li")).to_have_count(1)
        circle = server_api(server, "fence_list", {"trip": trip})["fences"][0]
        assert circle["name"] == "Meeting point" and circle["circle"]["radius"] > 1

        # A polygon clicked clockwise on the screen is stored counterclockwise.
        await page.get_by_label("Fence name").fill("Car park")
        await page.get_by_role("button", name="Draw polygon").click()
        for dx, dy in [(-220, -160), (-120, -160), (-120, -80), (-220, -80)]:
            await page.mouse.click(cx + dx, cy + dy)
        await page.get_by_role("button", name="Finish polygon").click()
        await expect(page.locator("#fences li")).to_have_count(2)
        fences = server_api(server, "fence_list", {"trip": trip})["fences"]
        ring = fences[1]["geometry"]["coordinates"][0]
        assert len(ring) == 5 and ring[0] == ring[-1]
        area = sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(ring, ring[1:]))
        assert area > 0, ring

        # The traveller walks into the circle: the event shows live.
        lat, lon, radius = circle["circle"]["lat"], circle["circle"]["lon"], circle["circle"]["radius"]
        await walker.rpc("location.update", {"lat": lat + 3 * radius / 111_195, "lon": lon, "ts": now})
        await walker.rpc("location.update", {"lat": lat, "lon": lon, "ts": now + 1000})
        entered = page.locator('#fence-events li[data-kind="enter"]')
        await expect(entered).to_contain_text("fence-walker entered Meeting point")
        os.makedirs(SCREENSHOTS, exist_ok=True)
        await page.screenshot(path=os.path.join(SCREENSHOTS, "host-fences.png"))

        # A polygon of two corners is not sent; a fence is deleted from the page.
        await page.get_by_label("Fence name").fill("Too thin")
        await page.get_by_role("button", name="Draw polygon").click()
        await page.mouse.click(cx + 150, cy + 100)
        await page.mouse.click(cx + 200, cy + 100)
        await page.get_by_role("button", name="Finish polygon").click()
        await expect(page.locator("#fence-hint")).to_have_text("A polygon needs at least 3 corners.")
        await page.get_by_role("button", name="Cancel").click()
        await page.get_by_role("button", name="Delete Car park").click()
        await expect(page.locator("#fences li")).to_have_count(1)
        assert [f["name"] for f in server_api(server, "fence_list", {"trip": trip})["fences"]] == ["Meeting point"]
        await browser.close()
    await walker.disconnect()
