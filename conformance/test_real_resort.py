"""A trip on a real resort, imported from OpenStreetMap with `gondola import-resort` (Winter Park,
data/osm, ODbL) and an SRTM tile made up for the test: the SDK reads the map, sends positions, sees
who is nearby, switches between the mountain and the street map, and asks for routes between lift
stations; the host page draws the resort in a real browser."""
import array
import os
import shutil
import subprocess
import tempfile
import time

import pytest
from centrifuge import ReplyError
from playwright.async_api import async_playwright, expect

from conftest import GONDOLA, RESORTS, Codec, launch
from helpers import Events, SubEvents, connected_client, server_api
from test_host_page import CHROMIUM, SCREENSHOTS

EXPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "osm", "winter_park_co.osm")
# Inside the boundary (between the Gondola's top and Sunspot), and downtown Denver.
ON_THE_MOUNTAIN = {"lat": 39.8700, "lon": -105.7760}
IN_DENVER = {"lat": 39.7392, "lon": -104.9903}


def synthetic_tile(path):
    """N39W106.hgt, 3 arc-seconds: 2,700 m at its north edge rising 1 m per sample southwards, as Winter Park
    rises from its village (north) to its summits (south)."""
    heights = array.array("h", (2700 + row for row in range(1201) for _ in range(1201)))
    heights.byteswap()  # SRTM is big-endian
    with open(path, "wb") as f:
        heights.tofile(f)


def import_resort(resorts, *extra):
    return subprocess.run([GONDOLA, "import-resort", EXPORT, "--id", "winter-park", "--resorts", resorts, *extra],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def winter_park():
    folder = tempfile.mkdtemp(prefix="gondola-real-resort-")
    resorts = os.path.join(folder, "resorts")
    os.makedirs(resorts)
    for name in ("demo.geojson", "demo.asc"):
        shutil.copy(os.path.join(RESORTS, name), resorts)
    tile = os.path.join(folder, "N39W106.hgt")
    synthetic_tile(tile)
    imported = import_resort(resorts, "--dem", tile)
    assert imported.returncode == 0, imported.stderr
    process, instance = launch(folder, resorts=resorts, settings={"dev_login": True})
    yield instance, imported.stdout
    process.terminate()
    process.wait(timeout=10)


def test_the_import_reports_what_it_read_and_kept(winter_park):
    _, report = winter_park
    assert "lifts: 24 (chair_lift 18, gondola 2, magic_carpet 3, yes 1)" in report
    assert "pistes: 161 lines (novice 1, easy 41, intermediate 62, advanced 52, expert 4, unrated 1)" in report
    assert "piste areas: 2 (intermediate 1, advanced 1)" in report
    assert 'boundary: way 460246666 "Winter Park Ski Area" (also boundary=administrative); 4 lifts lie outside it' in report
    assert "altitude: dem " in report and "wrote " in report and "winter-park.asc" in report


def test_bad_files_are_refused_with_the_file_named(tmp_path):
    truncated = tmp_path / "cut.osm"
    truncated.write_bytes(open(EXPORT, "rb").read()[:100_000])
    answer = subprocess.run(
        [GONDOLA, "import-resort", str(truncated), "--id", "cut", "--resorts", str(tmp_path / "resorts")],
        capture_output=True, text=True, timeout=60)
    assert answer.returncode != 0 and f"{truncated}: not well-formed XML at line " in answer.stderr
    assert not (tmp_path / "resorts" / "cut.geojson").exists()
    elsewhere = tmp_path / "N10E010.hgt"
    synthetic_tile(elsewhere)
    answer = subprocess.run([GONDOLA, "import-resort", EXPORT, "--id", "wp", "--dem", str(elsewhere), "--resorts", str(tmp_path / "resorts")],
                            capture_output=True, text=True, timeout=60)
    assert answer.returncode != 0 and f"--dem {elsewhere}: the grid does not cover the resort" in answer.stderr
    assert not (tmp_path / "resorts" / "wp.geojson").exists()
    answer = subprocess.run([GONDOLA, "import-resort", EXPORT, "--id", "Winter Park", "--resorts", str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert answer.returncode != 0 and "--id 'Winter Park' must be 1 to 64 lower-case letters, digits, '-' or '_'" in answer.stderr


async def test_a_trip_on_the_imported_resort(winter_park, codec):
    server, _ = winter_park
    host, traveller, friend = (f"wp-{role}-{codec.name}" for role in ("host", "anna", "ben"))
    now = int(time.time() * 1000)
    trip = server_api(server, "trip_create", {"name": "Winter Park week", "resort": "winter-park", "starts_at": now - 3_600_000,
                                              "ends_at": now + 3_600_000, "hosts": [host]})["trip"]["id"]
    for user in (traveller, friend):
        server_api(server, "trip_add_member", {"trip": trip, "user": user, "role": "traveller"})
    anna, _ = await connected_client(server, traveller, codec)
    ben, _ = await connected_client(server, friend, codec)

    # The map: listed, with its bounds, colours by the North American scheme, and the OSM attribution.
    listed = {r["id"]: r for r in codec.into((await anna.rpc("map.resorts", codec.out({}))).data)["resorts"]}
    assert listed["winter-park"]["name"] == "Winter Park Ski Area"
    west, south, east, north = listed["winter-park"]["bbox"]
    assert west < ON_THE_MOUNTAIN["lon"] < east and south < ON_THE_MOUNTAIN["lat"] < north
    document = codec.into((await anna.rpc("map.resort", codec.out({"id": "winter-park"}))).data)
    assert document["resort"]["attribution"] == "© OpenStreetMap contributors, ODbL 1.0"
    assert document["resort"]["difficulty_colors"] == "north_american"
    styles = {(f["properties"]["kind"], f["properties"]["difficulty"]): (f["properties"]["color"], f["properties"]["pattern"])
              for f in document["features"] if f["properties"]["kind"] in ("piste", "piste_area")}
    assert {d for _, d in styles} == {"novice", "easy", "intermediate", "advanced", "expert", None}
    pistes = {d: style for (kind, d), style in styles.items() if kind == "piste"}
    assert len(set(pistes.values())) == len(pistes), f"two difficulties drawn alike: {pistes}"
    assert pistes["advanced"] == ("#111111", "solid") and pistes["expert"] == ("#111111", "dashed")
    lifts = {f["properties"]["name"]: f["geometry"]["coordinates"] for f in document["features"] if f["properties"]["kind"] == "lift"}
    assert len(lifts) == 24 and all(len(point) == 3 for line in lifts.values() for point in line), "lifts without DEM altitude"

    # Positions and nearby on the mountain; map switching with hysteresis; street map in town.
    nearby = Events()
    sub = anna.new_subscription(f"nearby:#{traveller}", SubEvents(nearby), data=codec.out({"radius": 500, "limit": 10}))
    await sub.subscribe()
    await nearby.wait("subscribed")
    located = codec.into((await anna.rpc("location.update", codec.out(ON_THE_MOUNTAIN))).data)
    assert located["map"] == {"mode": "mountain", "resort": "winter-park"}
    await ben.rpc("location.update", codec.out({"lat": ON_THE_MOUNTAIN["lat"] + 0.001, "lon": ON_THE_MOUNTAIN["lon"]}))
    event = codec.into((await nearby.wait("publication", timeout=10))[0].pub.data)["events"][0]
    assert (event["type"], event["user"]) == ("enter", friend) and 100 < event["distance"] < 125
    elevation = codec.into((await anna.rpc("map.elevation", codec.out(ON_THE_MOUNTAIN))).data)["elevation"]
    expected = 2700 + (40 - ON_THE_MOUNTAIN["lat"]) * 1200
    assert abs(elevation - expected) < 1.5, (elevation, expected)
    # 400 m south of the boundary's southern tip: still the mountain map for someone coming from it.
    boundary = [f for f in document["features"] if f["properties"]["kind"] == "boundary"][0]["geometry"]["coordinates"][0]
    tip = min(boundary, key=lambda p: p[1])
    box_south = {"lat": tip[1] - 400 / 111_000, "lon": tip[0]}
    assert codec.into((await anna.rpc("location.update", codec.out(box_south))).data)["map"]["mode"] == "mountain"
    assert codec.into((await anna.rpc("location.update", codec.out(IN_DENVER))).data)["map"]["mode"] == "street"
    # Coming from town, the same place is still the street map: it is outside the boundary and its margin.
    assert codec.into((await ben.rpc("location.update", codec.out(IN_DENVER))).data)["map"]["mode"] == "street"
    assert codec.into((await ben.rpc("location.update", codec.out(box_south))).data)["map"]["mode"] == "street"

    # Routes between real lift stations, with and without a difficulty cap.
    bottom = lifts["Explorer Express"][0]
    top = lifts["Panoramic Express"][-1]
    ends = {"from": {"lat": bottom[1], "lon": bottom[0]}, "to": {"lat": top[1], "lon": top[0]}}
    route = codec.into((await anna.rpc("map.route", codec.out(ends))).data)
    assert "Panoramic Express" in [leg["name"] for leg in route["legs"] if leg["kind"] == "lift"]
    assert route["ascent"] > 0 and route["duration"] > 0
    back = {"from": ends["to"], "to": ends["from"], "max_difficulty": "intermediate"}
    try:
        capped = codec.into((await anna.rpc("map.route", codec.out(back))).data)
        order = ["novice", "easy", "intermediate"]
        assert all(leg["difficulty"] in order for leg in capped["legs"] if leg["kind"] == "piste"), capped["legs"]
    except ReplyError as refused:  # no way down at that level is an answer too, but a precise one
        assert refused.code == 108 and "intermediate" in refused.message
    for client in (anna, ben):
        await client.disconnect()


async def test_the_host_page_draws_the_real_resort(winter_park):
    server, _ = winter_park
    now = int(time.time() * 1000)
    trip = server_api(server, "trip_create", {"name": "Winter Park by the page", "resort": "winter-park",
                                              "starts_at": now - 3_600_000, "ends_at": now + 3_600_000, "hosts": ["wp-page-host"]})["trip"]["id"]
    # Two travellers on the mountain, at the top of the Gondola and on the way to Mary Jane.
    travellers = []
    for user, position in (("wp-page-cleo", {"lat": 39.8745, "lon": -105.7752}), ("wp-page-dev", {"lat": 39.8680, "lon": -105.7620})):
        server_api(server, "trip_add_member", {"trip": trip, "user": user, "role": "traveller"})
        client, _ = await connected_client(server, user, Codec("json"))
        await client.rpc("location.update", position)
        travellers.append(client)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.goto(f"http://127.0.0.1:{server.port}/host/")
        await page.get_by_label("User id").fill("wp-page-host")
        await page.get_by_label("Display name").fill("Walt")
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_role("button", name="Winter Park by the page").click()
        # The legend lists what this resort has, and nothing it lacks (no freeride, no extreme).
        legend = page.locator("#legend [data-difficulty]")
        await expect(legend).to_have_count(7)
        assert [await entry.get_attribute("data-difficulty") for entry in await legend.all()] == \
            ["novice", "easy", "intermediate", "advanced", "expert", "unrated", "lift"]
        await expect(page.locator(".leaflet-control-attribution")).to_contain_text("OpenStreetMap contributors")
        await expect(page.locator(".leaflet-marker-icon[data-user]")).to_have_count(2, timeout=15000)
        # The map opens fitted to the resort: the boundary fills the map, inside it.
        area = await page.locator("#map").bounding_box()
        paths = page.locator("#map path.leaflet-interactive")
        assert await paths.count() > 150
        boundary = await paths.first.bounding_box()
        assert boundary["width"] > area["width"] * 0.3 or boundary["height"] > area["height"] * 0.6, (boundary, area)
        assert area["x"] - 1 <= boundary["x"] and boundary["x"] + boundary["width"] <= area["x"] + area["width"] + 1
        os.makedirs(SCREENSHOTS, exist_ok=True)
        await page.screenshot(path=os.path.join(SCREENSHOTS, "host-real-resort.png"))
        await browser.close()
    for client in travellers:
        await client.disconnect()
