"""Centrifugo's token model through the official SDK: subscription tokens with the SDK's
token callback (subscribe and sub_refresh), and connection tokens signed with RSA keys and
checked for their audience."""
import asyncio
import json
import os
import tempfile
import time

import jwt
import pytest
from centrifuge import Client, ClientState, SubscriptionState
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from conftest import SECRET, launch
from helpers import ClientEvents, Events, SubEvents, connected_client, server_api


def subscription_token(user, channel, ttl=3600, **claims):
    """A subscription token signed with the hub's secret."""
    return jwt.encode({"sub": user, "channel": channel, "exp": int(time.time()) + ttl, **claims}, SECRET, algorithm="HS256")


async def test_a_subscription_token_opens_a_namespace_closed_to_clients(server, codec):
    client, _ = await connected_client(server, "alice", codec)
    refused_events = Events()
    refused = client.new_subscription("vip:lounge", events=SubEvents(refused_events))
    await refused.subscribe()
    unsubscribed = await refused_events.wait("unsubscribed")
    assert unsubscribed[0].code == 103

    events = Events()

    async def get_token(channel):
        return subscription_token("alice", channel, info={"seat": 7})

    sub = client.new_subscription("vip:suite", events=SubEvents(events), get_token=get_token)
    await sub.subscribe()
    await events.wait("subscribed")
    presence = await sub.presence()
    infos = [codec.into(info.chan_info) for info in presence.clients.values()]
    assert infos == [{"seat": 7}], "the token's info is the subscription's chan_info"
    server_api(server, "publish", {"channel": "vip:suite", "data": {"n": 1}})
    publications = await events.wait("publication")
    assert codec.into(publications[0].pub.data) == {"n": 1}
    await client.disconnect()


async def test_an_invalid_subscription_token_is_refused_and_the_connection_stays(server, codec):
    client, client_events = await connected_client(server, "alice", codec)
    for token in ["invalid_token", subscription_token("bob", "vip:a"), subscription_token("alice", "vip:other")]:
        events = Events()
        sub = client.new_subscription("vip:a", events=SubEvents(events), token=token)
        await sub.subscribe()
        unsubscribed = await events.wait("unsubscribed")
        assert unsubscribed[0].code == 103, token
        client.remove_subscription(sub)
    assert client.state == ClientState.CONNECTED and not client_events.of("disconnected")
    await client.disconnect()


async def test_an_expired_subscription_token_is_replaced_through_the_callback(server, codec):
    calls = []

    async def get_token(channel):
        calls.append(channel)
        return subscription_token("alice", channel)

    client, _ = await connected_client(server, "alice", codec)
    events = Events()
    sub = client.new_subscription("vip:late", events=SubEvents(events), token=subscription_token("alice", "vip:late", ttl=-10),
                                  get_token=get_token)
    await sub.subscribe()
    await events.wait("subscribed", timeout=10)
    assert calls == ["vip:late"], "the SDK asked for a new token after error 109"
    assert sub.state == SubscriptionState.SUBSCRIBED
    await client.disconnect()


async def test_sub_refresh_keeps_an_expiring_subscription(server, codec):
    """The token expires 2 s after subscribing; the SDK sends sub_refresh with a new one from its
    callback when the reply's ttl runs out, and the subscription goes on receiving."""
    calls = []
    refreshed = asyncio.Event()

    async def get_token(channel):
        calls.append(channel)
        if len(calls) >= 2:
            refreshed.set()
        return subscription_token("alice", channel, ttl=2 if len(calls) == 1 else 3600)

    client, _ = await connected_client(server, "alice", codec)
    events = Events()
    sub = client.new_subscription("vip:long", events=SubEvents(events), get_token=get_token)
    await sub.subscribe()
    await events.wait("subscribed")
    await asyncio.wait_for(refreshed.wait(), 10)
    # The refresh's reply comes before the server's expiry check (2 s of grace) would fire.
    server_api(server, "publish", {"channel": "vip:long", "data": {"after": "refresh"}})
    publications = await events.wait("publication", timeout=10)
    assert codec.into(publications[0].pub.data) == {"after": "refresh"}
    assert not events.of("unsubscribed") and sub.state == SubscriptionState.SUBSCRIBED
    await client.disconnect()


async def test_a_subscription_whose_token_runs_out_is_unsubscribed_with_2501(server, codec):
    """No callback to refresh with: once the token's time and the grace (pong_timeout, 2 s) are
    over, the server unsubscribes with 2501 and the SDK goes back to subscribing."""
    client, _ = await connected_client(server, "alice", codec)
    events = Events()
    sub = client.new_subscription("vip:short", events=SubEvents(events), token=subscription_token("alice", "vip:short", ttl=1))
    await sub.subscribe()
    await events.wait("subscribed")
    await events.wait_for("subscribing", lambda ctx: ctx.code == 2501)
    await client.disconnect()


async def refused_with(server, codec, token):
    """The code a connection with `token` is closed with."""
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=token, **codec.kwargs)
    await client.connect()
    disconnected = await events.wait("disconnected")
    await client.disconnect()
    return disconnected[0].code


@pytest.fixture(scope="module")
def rsa_server():
    """A hub that also accepts RS256 tokens of one key, ES256 tokens of another and tokens of a
    JWKS key named by `kid`, for the audience 'gondola-app', and subscribes every user to its
    personal channel. Answers the hub and the three private keys."""
    folder = tempfile.mkdtemp(prefix="gondola-conformance-rsa-")
    keys = {"rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048), "ecdsa": ec.generate_private_key(ec.SECP256R1()),
            "jwks": ec.generate_private_key(ec.SECP256R1())}
    files = {}
    for name in ("rsa", "ecdsa"):
        files[name] = os.path.join(folder, f"token-{name}.pem")
        with open(files[name], "wb") as f:
            f.write(keys[name].public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(keys["jwks"].public_key()))
    files["jwks"] = os.path.join(folder, "token-jwks.json")
    with open(files["jwks"], "w") as f:
        json.dump({"keys": [dict(jwk, kid="app-key-1", alg="ES256", use="sig")]}, f)
    process, instance = launch(folder, settings={"token_rsa_public_key_file": files["rsa"], "token_ecdsa_public_key_file": files["ecdsa"],
                                                   "token_jwks_file": files["jwks"], "token_audience": "gondola-app",
                                                   "user_subscribe_to_personal": True})
    yield instance, keys
    process.terminate()
    process.wait(timeout=10)


async def test_rs256_connection_tokens_and_their_audience(rsa_server, codec):
    server, keys = rsa_server
    key = keys["rsa"]
    good = jwt.encode({"sub": "rsa-user", "aud": "gondola-app", "exp": int(time.time()) + 60}, key, algorithm="RS256")
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=good, **codec.kwargs)
    await client.connect()
    connected = await events.wait("connected")
    assert connected[0].client
    subscribed = await events.wait("server_subscribed")
    assert subscribed[0].channel == "personal:#rsa-user"
    await client.disconnect()
    for bad in [jwt.encode({"sub": "rsa-user", "exp": int(time.time()) + 60}, key, algorithm="RS256"),
                jwt.encode({"sub": "rsa-user", "aud": "gondola-app"}, rsa.generate_private_key(public_exponent=65537, key_size=2048),
                           algorithm="RS256")]:
        assert await refused_with(server, codec, bad) == 3500


async def test_a_tokens_subs_are_server_side_subscriptions_that_recover(server, codec):
    """The token subscribes the connection (with recovery forced on for it); publications
    come to the client's own handlers, and after a reconnect the SDK recovers what it missed
    through connect.subs."""
    channel = f"room:server-side-{codec.name}"
    token = jwt.encode({"sub": "dora", "exp": int(time.time()) + 3600,
                        "subs": {channel: {"data": {"welcome": True}, "override": {"force_recovery": {"value": True}}}}},
                       SECRET, algorithm="HS256")
    events = Events()
    client = Client(server.ws_url, events=ClientEvents(events), token=token, **codec.kwargs)
    await client.connect()
    subscribed = await events.wait("server_subscribed")
    assert subscribed[0].channel == channel and subscribed[0].recoverable
    assert codec.into(subscribed[0].data) == {"welcome": True}
    server_api(server, "publish", {"channel": channel, "data": {"n": 1}})
    await events.wait("server_publication")
    await client.disconnect()
    for n in (2, 3):
        server_api(server, "publish", {"channel": channel, "data": {"n": n}})
    await client.connect()
    again = await events.wait("server_subscribed", 2, timeout=10)
    assert again[1].was_recovering and again[1].recovered
    publications = await events.wait("server_publication", 3)
    assert [codec.into(p.pub.data)["n"] for p in publications] == [1, 2, 3]
    await client.disconnect()


async def test_the_server_api_subscribes_a_users_connections(server, codec):
    client, events = await connected_client(server, "erin", codec)
    channel = f"vip:ops-{codec.name}"
    assert server_api(server, "subscribe", {"user": "erin", "channel": channel, "data": {"why": "on call"}}) == {}
    subscribed = await events.wait("server_subscribed")
    assert subscribed[0].channel == channel and codec.into(subscribed[0].data) == {"why": "on call"}
    server_api(server, "publish", {"channel": channel, "data": {"page": 1}})
    publications = await events.wait("server_publication")
    assert codec.into(publications[0].pub.data) == {"page": 1}
    server_api(server, "unsubscribe", {"user": "erin", "channel": channel})
    await events.wait("server_unsubscribed")
    await client.disconnect()


async def test_es256_and_jwks_tokens(rsa_server, codec):
    """An ES256 token of the configured ECDSA key, and one whose header names a JWKS key, connect;
    a subscription token signed the same way opens a closed namespace."""
    server, keys = rsa_server
    exp = int(time.time()) + 60
    tokens = [jwt.encode({"sub": "ec-user", "aud": "gondola-app", "exp": exp}, keys["ecdsa"], algorithm="ES256"),
              jwt.encode({"sub": "ec-user", "aud": "gondola-app", "exp": exp}, keys["jwks"], algorithm="ES256", headers={"kid": "app-key-1"})]
    for token in tokens:
        events = Events()
        client = Client(server.ws_url, events=ClientEvents(events), token=token, **codec.kwargs)
        await client.connect()
        await events.wait("connected")
        sub_events = Events()
        sub_token = jwt.encode({"sub": "ec-user", "channel": "vip:ec", "aud": "gondola-app", "exp": exp}, keys["ecdsa"], algorithm="ES256")
        sub = client.new_subscription("vip:ec", events=SubEvents(sub_events), token=sub_token)
        await sub.subscribe()
        await sub_events.wait("subscribed")
        await client.disconnect()
    unknown_kid = jwt.encode({"sub": "ec-user", "aud": "gondola-app", "exp": exp}, keys["jwks"], algorithm="ES256", headers={"kid": "other"})
    assert await refused_with(server, codec, unknown_kid) == 3500
