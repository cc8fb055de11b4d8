"""Publication tags filters (`tf`) through centrifuge-python's `tags_filter`, in both
encodings: only matching publications arrive, live and recovered; a namespace without
`allow_tags_filter` refuses the subscription with 107."""
from cent import Client as ApiClient, PublishRequest
from centrifuge import SubscriptionState
from centrifuge.filter import Filter

from conftest import API_KEY
from helpers import Events, SubEvents, connected_client


async def test_only_publications_whose_tags_match_arrive(server, codec):
    channel = f"room:quotes-{codec.name}"
    client, _ = await connected_client(server, f"quotes-{codec.name}", codec)
    events = Events()
    tags_filter = Filter.all(Filter.is_in("ticker", ["AAPL", "MSFT"]), Filter.gte("price", "100"))
    sub = client.new_subscription(channel, SubEvents(events), tags_filter=tags_filter, recoverable=True)
    await sub.subscribe()
    await events.wait("subscribed")
    api = ApiClient(server.api_url, API_KEY)
    quotes = [("AAPL", "101.5"), ("GOOG", "150"), ("MSFT", "99.9"), ("MSFT", "300"), ("AAPL", "abc")]
    for n, (ticker, price) in enumerate(quotes):
        api.publish(PublishRequest(channel=channel, data={"n": n}, tags={"ticker": ticker, "price": price}))
    # A last matching publication marks the end: everything before it was delivered or filtered.
    api.publish(PublishRequest(channel=channel, data={"n": len(quotes)}, tags={"ticker": "AAPL", "price": "100"}))
    received = await events.wait("publication", 3)
    assert [codec.into(p.pub.data)["n"] for p in received] == [0, 3, 5]
    assert received[0].pub.tags == {"ticker": "AAPL", "price": "101.5"}
    await client.disconnect()


async def test_a_namespace_without_allow_tags_filter_refuses_it(server, codec):
    client, _ = await connected_client(server, f"nofilter-{codec.name}", codec)
    events = Events()
    sub = client.new_subscription(f"lobby:quotes-{codec.name}", SubEvents(events), tags_filter=Filter.eq("ticker", "AAPL"))
    await sub.subscribe()
    unsubscribed = (await events.wait("unsubscribed"))[0]
    assert sub.state == SubscriptionState.UNSUBSCRIBED
    assert unsubscribed.code == 107, unsubscribed
    await client.disconnect()
