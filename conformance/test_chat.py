"""Chats with the official SDK: recovery across a disconnect and a server restart,
and no acknowledged message lost or doubled when the server is killed mid-stream."""
import asyncio
import json
import tempfile

from centrifuge import Client

from conftest import launch
from helpers import ClientEvents, Events, SubEvents, call, chat_history, connected_client, trip_mates


def stop(process, kill=False):
    if kill:
        process.kill()
    else:
        process.terminate()
    process.wait(timeout=10)


async def own_server_with_a_chat(prefix, codec):
    """A hub of its own (it is restarted) with a direct chat between `<prefix>-ann` and `<prefix>-bo`,
    trip-mates: answers the folder, the process, the server, Ann's client and the chat id."""
    folder = tempfile.mkdtemp(prefix=f"gondola-chat-{prefix}-")
    process, server = launch(folder)
    trip_mates(server, f"{prefix}-host", f"{prefix}-ann", f"{prefix}-bo")
    ann, _ = await connected_client(server, f"{prefix}-ann", codec)
    chat = (await call(ann, codec, "chat.create", {"members": [f"{prefix}-bo"]}))["chat"]["id"]
    return folder, process, server, ann, chat


async def test_missed_messages_are_recovered_after_a_disconnect_and_a_restart(codec):
    folder, process, server, ann, chat = await own_server_with_a_chat("chat", codec)
    bo_events = Events()
    bo = Client(server.ws_url, events=ClientEvents(bo_events), token=server.token("chat-bo"), min_reconnect_delay=0.1, max_reconnect_delay=0.5, **codec.kwargs)
    await bo.connect()
    sub_events = Events()
    sub = bo.new_subscription(f"chat:{chat}", SubEvents(sub_events))
    await sub.subscribe()
    await sub_events.wait("subscribed")

    async def send(texts):
        for text in texts:
            await call(ann, codec, "chat.send", {"chat": chat, "text": text, "client_message_id": text})

    await send(["one", "two"])
    await sub_events.wait("publication", count=2)
    # Bo goes offline; Ann writes on, then the server restarts, then Ann writes more.
    await bo.disconnect()
    await send(["three", "four"])
    await ann.disconnect()
    stop(process)
    process, server = launch(folder, port=server.port)
    ann, _ = await connected_client(server, "chat-ann", codec)
    await send(["five"])
    await bo.connect()
    publications = await sub_events.wait("publication", count=5, timeout=15)
    subscribed = sub_events.of("subscribed")[-1]
    assert subscribed.recovered and subscribed.was_recovering
    assert [codec.into(p.pub.data)["text"] for p in publications] == ["one", "two", "three", "four", "five"]
    assert [p.pub.offset for p in publications] == [1, 2, 3, 4, 5]
    first = codec.into(publications[0].pub.data)
    assert first["name"] == "chat-ann" and "telegram" not in json.dumps(first)
    await ann.disconnect()
    await bo.disconnect()
    stop(process)


async def test_kill_9_keeps_every_acknowledged_message_once(codec):
    folder, process, server, ann, chat = await own_server_with_a_chat("kill", codec)
    acknowledged = {}

    async def killer():
        while len(acknowledged) < 400:
            await asyncio.sleep(0.005)
        stop(process, kill=True)

    kill_task = asyncio.create_task(killer())
    for index in range(1000):
        message_id = f"k-{index}"
        try:
            reply = await call(ann, codec, "chat.send", {"chat": chat, "text": f"message {index}", "client_message_id": message_id})
        except Exception:
            break  # the server is gone: this message is not acknowledged
        acknowledged[message_id] = reply["offset"]
    await kill_task
    assert 400 <= len(acknowledged) < 1000, "the server was killed mid-stream"
    try:
        await asyncio.wait_for(ann.disconnect(), 5)
    except Exception:
        pass
    process, server = launch(folder, port=server.port)
    ann, _ = await connected_client(server, "kill-ann", codec)
    # A client retries what was not acknowledged with the same id, then goes on.
    for index in range(len(acknowledged), 1000):
        message_id = f"k-{index}"
        reply = await call(ann, codec, "chat.send", {"chat": chat, "text": f"message {index}", "client_message_id": message_id})
        acknowledged[message_id] = reply["offset"]
    messages = await chat_history(ann, codec, chat)
    ids = [m["client_message_id"] for m in messages]
    assert len(ids) == len(set(ids)) == 1000, "no message twice, none lost"
    assert {m["client_message_id"]: m["offset"] for m in messages} == acknowledged
    assert [m["offset"] for m in messages] == list(range(1, 1001))
    await ann.disconnect()
    stop(process)
