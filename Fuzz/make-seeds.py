"""Writes the fuzzers' seed frames with the official SDK's own codecs, so the seeds
are frames centrifuge-python really sends. Run with the conformance venv:
    .venv-conformance/bin/python Fuzz/make-seeds.py
"""
import base64
import os

from centrifuge.codecs import _JsonCodec, _ProtobufCodec

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl"


def payload(value, protobuf):
    # The SDK base64-encodes bytes before handing dicts to the Protobuf codec.
    import json
    if protobuf:
        return base64.b64encode(json.dumps(value).encode()).decode()
    return value


def commands(protobuf):
    p = lambda value: payload(value, protobuf)
    return {
        "connect": [{"id": 1, "connect": {"token": TOKEN, "data": p({"app": "ios"}), "name": "python", "version": "0.7.0",
                                           "subs": {"news": {"recover": True, "epoch": "e", "offset": 3}}}}],
        "subscribe": [{"id": 2, "subscribe": {"channel": "nearby:#alice", "data": p({"radius": 500, "limit": 50}),
                                               "recoverable": True, "positioned": True, "join_leave": True, "flag": 3}}],
        "recover": [{"id": 3, "subscribe": {"channel": "chat:c1", "recover": True, "epoch": "abc", "offset": 41, "flag": 2}}],
        "publish": [{"id": 4, "publish": {"channel": "room:a", "data": p({"text": "héllo", "n": [1, 2.5, None]})}}],
        "rpc": [{"id": 5, "rpc": {"method": "location.update", "data": p({"lat": 45.3, "lon": 6.58, "alt": 1790, "ts": 1795000000000})}}],
        "history": [{"id": 6, "history": {"channel": "room:a", "limit": 10, "since": {"offset": 2, "epoch": "e"}, "reverse": True}}],
        "batch": [
            {"id": 7, "presence": {"channel": "room:a"}},
            {"id": 8, "presence_stats": {"channel": "room:a"}},
            {"id": 9, "unsubscribe": {"channel": "room:a"}},
            {"id": 10, "ping": {}},
            {"id": 11, "refresh": {"token": TOKEN}},
            {"send": {"data": p({"typing": True})}},
        ],
        "pong": [{}],
    }


def main():
    for name, codec, protobuf in (("json", _JsonCodec, False), ("protobuf", _ProtobufCodec, True)):
        folder = os.path.join(HERE, "Seeds", name)
        os.makedirs(folder, exist_ok=True)
        for seed, frame in commands(protobuf).items():
            encoded = codec.encode_commands(frame)
            if isinstance(encoded, str):
                encoded = encoded.encode()
            with open(os.path.join(folder, seed), "wb") as f:
                f.write(encoded)
        print(f"{name}: {len(commands(protobuf))} seeds in {folder}")


if __name__ == "__main__":
    main()
