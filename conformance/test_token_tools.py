"""The token tools, as Centrifugo's CLI has them: `gondola gentoken` (with `-t`, `--info` and
`--channels`), `gensubtoken` and `checktoken`, each read with the same secret as the hub, and
their tokens used by the official SDK."""
import subprocess
import tempfile
import time

import jwt
from centrifuge import Client

from conftest import API_KEY, GONDOLA, SECRET
from helpers import ClientEvents, Events, SubEvents, connected_client, server_api


def cli(*arguments, secret=SECRET):
    """Runs a gondola command with the hub's secret, in a folder of its own."""
    return subprocess.run([GONDOLA, *arguments, "--token-hmac-secret", secret, "--api-key", API_KEY], capture_output=True, text=True,
                          timeout=60, cwd=tempfile.mkdtemp(prefix="gondola-token-tools-"))


async def test_gentoken_makes_a_token_the_sdk_connects_with_its_info_and_channels_included(server, codec):
    channel = f"room:gentoken-{codec.name}"
    made = cli("gentoken", "-u", "gus", "-t", "3600", "--info", '{"seat": 4}', "--channels", channel)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[0] == 'HMAC SHA-256 JWT for user "gus" expiring in 3600 s:'
    token = made.stdout.splitlines()[-1]
    claims = jwt.decode(token, SECRET, algorithms=["HS256"])
    assert claims["sub"] == "gus" and claims["info"] == {"seat": 4} and claims["channels"] == [channel]
    assert 3590 <= claims["exp"] - time.time() <= 3600
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=token, **codec.kwargs)
    await client.connect()
    # `channels` subscribes the connection on the server's side; `info` is what others see of it.
    subscribed = await events.wait("server_subscribed")
    assert subscribed[0].channel == channel
    presence = server_api(server, "presence", {"channel": channel})["presence"]
    assert [(entry["user"], entry["conn_info"]) for entry in presence.values()] == [("gus", {"seat": 4})]
    await client.disconnect()


async def test_gensubtoken_opens_a_namespace_closed_to_clients(server, codec):
    channel = f"vip:gensubtoken-{codec.name}"
    made = cli("gensubtoken", "-u", "hana", "-s", channel, "-t", "1h", "-q")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert jwt.decode(token, SECRET, algorithms=["HS256"])["channel"] == channel
    client, _ = await connected_client(server, "hana", codec)
    events = Events()
    sub = client.new_subscription(channel, events=SubEvents(events), token=token)
    await sub.subscribe()
    await events.wait("subscribed")
    await client.disconnect()


def test_checktoken_says_whose_a_token_is_and_why_one_is_refused():
    token = cli("gentoken", "-u", "ivo", "-q").stdout.strip()
    checked = cli("checktoken", token)
    assert checked.returncode == 0 and checked.stdout.startswith('valid token for user "ivo", expires at '), checked
    forever = cli("checktoken", cli("gentoken", "-u", "ivo", "-t", "0", "-q").stdout.strip())
    assert forever.stdout.strip() == 'valid token for user "ivo", never expires'
    other = cli("checktoken", token, secret=SECRET + "-another")
    assert other.returncode == 1 and "token refused: token signature does not verify" in other.stderr, other
    expired = jwt.encode({"sub": "ivo", "exp": int(time.time()) - 10}, SECRET, algorithm="HS256")
    refused = cli("checktoken", expired)
    assert refused.returncode == 1 and "token refused: the token has expired" in refused.stderr, refused
    bad_ttl = cli("gentoken", "-u", "ivo", "-t", "soon")
    assert bad_ttl.returncode != 0 and "--ttl 'soon' is not seconds or a duration" in bad_ttl.stderr, bad_ttl


def test_bad_arguments_are_refused_naming_them():
    for arguments, named in [
        (("gentoken", "-u", "ivo", "--info", "{oops"), "--info is not JSON"),
        (("gentoken", "-u", ""), "--user must not be empty"),
        (("gensubtoken", "-u", "ivo", "-s", ""), "--channel must not be empty"),
        (("gentoken", "-u", "ivo", "--ttl=-5"), "--ttl '-5' is not seconds or a duration"),
    ]:
        refused = cli(*arguments)
        assert refused.returncode != 0 and named in refused.stderr and not refused.stdout, (arguments, refused)
    garbage = cli("checktoken", "not-a-token")
    assert garbage.returncode == 1 and "token refused: " in garbage.stderr, garbage
