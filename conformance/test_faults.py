"""Network faults, in their short form: bad links made by `FaultProxy` while the official SDK works,
and judged afterwards by `History` (offsets in order, nothing twice, no gap a client was not told
of, every acknowledged publication in history). Each scenario is seeded (`FAULTS_SEED`, else the
date's); the seed is printed and named in every failure, so a run can be repeated."""
import asyncio
import os
import random
import tempfile
import time

from centrifuge import Client, SubscriptionEventHandler

from conftest import API_KEY, CONFIG, launch, stop_server
from fault_proxy import FaultProxy
from helpers import ClientEvents, Events, post
from history import History, digest

SEED = int(os.environ.get("FAULTS_SEED", time.strftime("%Y%m%d")))
# A namespace whose history outlasts the run, so every acknowledged publication can be found in it.
DURABLE = {"name": "faults", "history_size": 10_000, "history_ttl": "600s", "presence": True, "force_recovery": True,
           "allow_subscribe_for_client": True, "allow_history_for_subscriber": True, "allow_presence_for_subscriber": True}
SETTINGS = {"namespaces": CONFIG["namespaces"] + [DURABLE]}
PING = 2.0  # CONFIG's ping_interval
PONG = 2.0  # CONFIG's pong_timeout


def seeded(name):
    """A generator for scenario `name`, and the words a failure adds to say how to repeat it."""
    print(f"\n{name}: FAULTS_SEED={SEED}")
    return random.Random(f"{name}-{SEED}"), f"(FAULTS_SEED={SEED})"


class Recorder(SubscriptionEventHandler):
    """Writes one client's subscription events into the history."""

    def __init__(self, history, client, channel):
        self.history, self.client, self.channel = history, client, channel
        self.count = 0
        # The stream's epoch as the last subscribe told it (publications do not carry it).
        self.epoch = ""

    async def on_subscribed(self, ctx):
        self.epoch = ctx.stream_position.epoch if ctx.stream_position else ""
        self.history.subscribed(self.client, self.channel, ctx.recovered, ctx.was_recovering, self.epoch)

    async def on_unsubscribed(self, ctx):
        self.history.unsubscribed(self.client, self.channel, ctx.code)

    async def on_publication(self, ctx):
        self.count += 1
        self.history.received(self.client, self.channel, ctx.pub.offset, self.epoch, ctx.pub.data)


class Availability(ClientEvents):
    """A client's connection events, and its time without a connection as a window in the history."""

    def __init__(self, events, history, name):
        super().__init__(events)
        self.history, self.name = history, name

    async def on_connecting(self, ctx):
        self.history.down("client disconnected", self.name)
        await super().on_connecting(ctx)

    async def on_connected(self, ctx):
        self.history.up("client disconnected", self.name)
        await super().on_connected(ctx)


def publish(server, channel, data):
    return post(f"{server.api_url}/publish", {"channel": channel, "data": data}, {"X-API-Key": API_KEY})


def kept_history(server, channel):
    """The channel's whole stream as the server keeps it: offset → (epoch, digest of the payload)."""
    result = post(f"{server.api_url}/history", {"channel": channel, "limit": -1}, {"X-API-Key": API_KEY})["result"]
    return {pub["offset"]: (result["epoch"], digest(pub["data"])) for pub in result.get("publications", [])}


async def subscribed_clients(history, channel, endpoints, max_reconnect_delay, repeat):
    """SDK clients, one per (address, name, token) of `endpoints`, each recording into `history`
    and subscribed to `channel` (recoverable); answers them and their recorders once every one
    is subscribed."""
    clients, recorders, subscriptions = [], [], []
    for address, name, token in endpoints:
        client = Client(address, events=Availability(Events(), history, name), token=token, min_reconnect_delay=0.2,
                        max_reconnect_delay=max_reconnect_delay, timeout=10.0)
        recorder = Recorder(history, name, channel)
        subscriptions.append(client.new_subscription(channel, recorder, recoverable=True))
        clients.append(client)
        recorders.append(recorder)
    await asyncio.gather(*(client.connect() for client in clients))
    await asyncio.gather(*(subscription.subscribe() for subscription in subscriptions))
    await until(lambda: all(recorder.epoch for recorder in recorders), f"every client is subscribed {repeat}", timeout=60)
    return clients, recorders


async def judge(history, channel, server, label, repeat):
    """Waits until every client of `channel` has its last acknowledged publication, then checks
    the history against what `server` keeps, printing the longest windows under `label`."""
    last = max(history.acknowledged[channel])
    await until(lambda: history.reached(channel, last), f"every client reaches offset {last} {repeat}", timeout=90)
    problems = history.check({channel: kept_history(server, channel)})
    print(f"{label}: longest windows {history.longest_windows()}")
    assert not problems, f"{len(problems)} problems: {problems[:10]} {repeat}"


async def until(condition, what, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


async def test_clients_on_a_2g_link_lose_nothing_and_are_told_of_every_gap():
    """Twelve clients behind a 2G-like link (300 ms each way ±50 ms, 32 kB/s per direction), one
    connection reset at seeded moments 1–3 s apart, while the server API publishes 200 payloads of
    1 kB, about ten a second: every client ends with every publication, in order, once, as it was
    published, or was told of what it missed, and every acknowledged publication is in history."""
    generator, repeat = seeded("2g")
    folder = tempfile.mkdtemp(prefix="gondola-faults-2g-")
    process, server = launch(folder, settings=SETTINGS)
    proxy = FaultProxy(("127.0.0.1", server.port), seed=generator.random())
    proxy.shape(latency=0.3, jitter=0.05, bandwidth=32 * 1024)
    history = History()
    channel = f"faults:2g-{SEED}"
    clients = []
    try:
        clients, _ = await subscribed_clients(
            history, channel,
            [(f"ws://{proxy.address}/connection/websocket", f"phone-{index}", server.token(f"phone-{index}")) for index in range(12)],
            max_reconnect_delay=1.0, repeat=repeat)
        resets, next_reset = 0, time.monotonic() + generator.uniform(1, 3)
        for n in range(1, 201):
            data = {"n": n, "pad": "x" * 1000}
            answer = await asyncio.to_thread(publish, server, channel, data)
            history.ack(channel, answer["result"]["offset"], answer["result"]["epoch"], data)
            if time.monotonic() >= next_reset:
                resets += proxy.reset(fraction=0.01)
                next_reset = time.monotonic() + generator.uniform(1, 3)
            await asyncio.sleep(0.05)
        last = max(history.acknowledged[channel])
        print(f"2g: {resets} connections reset, {last} publications acknowledged")
        assert resets >= 3, f"the schedule reset {resets} connections {repeat}"
        await judge(history, channel, server, "2g", repeat)
    finally:
        for client in clients:
            await client.disconnect()
        proxy.close()
        stop_server(process)


async def test_a_half_open_client_is_closed_within_ping_and_pong_and_the_sdk_comes_back_recovered():
    """A client whose link goes silent with no FIN and no RST (the proxy holds both sockets open and
    forwards nothing): the server finds it by its missing pong and closes it — its presence is gone
    within `ping_interval + pong_timeout` and one maintenance tick (a quarter of the smaller), with
    a second and a half of slack for a loaded machine and the check's own polling — and
    the SDK, missing the server's pings, reconnects through a fresh link and recovers what was
    published meanwhile."""
    generator, repeat = seeded("half-open")
    folder = tempfile.mkdtemp(prefix="gondola-faults-half-open-")
    process, server = launch(folder, settings=SETTINGS)
    proxy = FaultProxy(("127.0.0.1", server.port), seed=generator.random())
    history = History()
    channel = f"faults:half-open-{SEED}"
    events = Events()
    client = Client(f"ws://{proxy.address}/connection/websocket", events=Availability(events, history, "phone"),
                    token=server.token("phone"), min_reconnect_delay=0.2, max_reconnect_delay=1.0)
    recorder = Recorder(history, "phone", channel)
    subscription = client.new_subscription(channel, recorder, recoverable=True)
    try:
        await client.connect()
        await subscription.subscribe()
        await until(lambda: recorder.epoch, f"the client is subscribed {repeat}", timeout=10)
        first = publish(server, channel, {"n": 1})["result"]
        history.ack(channel, first["offset"], first["epoch"], {"n": 1})
        await until(lambda: recorder.count == 1, "the first publication arrives", timeout=10)

        def subscribers():
            return post(f"{server.api_url}/presence_stats", {"channel": channel}, {"X-API-Key": API_KEY})["result"]["num_clients"]

        assert subscribers() == 1
        assert proxy.hold_half_open() == 1
        silent_at = time.monotonic()
        for n in (2, 3):
            answer = publish(server, channel, {"n": n})["result"]
            history.ack(channel, answer["offset"], answer["epoch"], {"n": n})
        await until(lambda: subscribers() == 0, f"the half-open connection is closed {repeat}", timeout=PING + PONG + min(PING, PONG) / 4 + 1.5)
        print(f"half-open: closed by the server after {time.monotonic() - silent_at:.2f} s (ping {PING} s + pong {PONG} s)")
        await until(lambda: recorder.count == 3, f"the SDK reconnects and recovers offsets 2 and 3 {repeat}", timeout=30)
        assert subscribers() == 1
        problems = history.check({channel: kept_history(server, channel)})
        assert not problems, f"{problems} {repeat}"
        resubscribed = [e for e in history.events[("phone", channel)] if e[0] == "subscribed"]
        assert resubscribed[-1][1] is True, f"the second subscribe recovered {resubscribed} {repeat}"
    finally:
        await client.disconnect()
        proxy.close()
        stop_server(process)
