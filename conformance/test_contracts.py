"""Typed contracts: a member a method does not take is refused with 107 naming it (through the official
SDK in both encodings, and through the server API), the refused call changes nothing, and
`gondola catalog --json` lists every method with its fields."""
import json
import subprocess
import urllib.request

import pytest
from centrifuge import ReplyError

from conftest import API_KEY, GONDOLA
from helpers import call, connected_client, server_api


async def test_an_unknown_rpc_member_is_refused_naming_it(server, codec):
    client, _ = await connected_client(server, f"contracts-{codec.name}", codec)
    try:
        for method, data, message in (
            ("server.time", {"zone": "UTC"}, "unknown field 'zone'"),
            ("location.update", {"lat": 45.3, "lon": 6.58, "bearing": 90}, "unknown field 'bearing'"),
            ("map.route", {"to": {"lat": 45.3, "lon": 6.58, "altitude": 1800}}, "unknown field 'to.altitude'"),
        ):
            with pytest.raises(ReplyError) as refused:
                await call(client, codec, method, data)
            assert refused.value.code == 107 and message in refused.value.message, (method, refused.value.message)
        assert "ts" in await call(client, codec, "server.time", {}), "the connection keeps serving"
    finally:
        await client.disconnect()


def test_an_unknown_server_api_member_is_refused_and_publishes_nothing(server):
    request = urllib.request.Request(
        f"{server.api_url}/publish", data=json.dumps({"channel": "room:contracts", "data": {"n": 1}, "colour": "red"}).encode(),
        headers={"X-API-Key": API_KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["error"]["code"] == 107 and "unknown field 'colour'" in answer["error"]["message"], answer
    assert server_api(server, "history", {"channel": "room:contracts", "limit": -1}).get("publications", []) == []


def test_the_catalog_lists_every_method_with_its_fields():
    answer = subprocess.run([GONDOLA, "catalog", "--json"], capture_output=True, text=True, timeout=120)
    assert answer.returncode == 0, answer.stderr
    catalog = json.loads(answer.stdout)
    methods = {(m["surface"], m["name"]): m for m in catalog["methods"]}
    assert [f["name"] for f in methods[("rpc", "chat.send")]["fields"]] == ["chat", "text", "client_message_id"]
    assert methods[("server_api", "publish")]["owner"] == "the hub"
    assert {t["topic"] for t in catalog["replica_topics"]} >= {"travel.position", "travel.region"}
    refused = subprocess.run([GONDOLA, "catalog"], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "give --json, --write-docs <folder> or --write-proto <file>, or several" in refused.stderr
