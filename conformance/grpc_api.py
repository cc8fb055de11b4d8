"""A Python GRPC client of the server API, generated with grpcio-tools from Gondola's schema
(Sources/GondolaServer/GRPC/api.proto, whose names and field numbers are Centrifugo's), once per
run, as a user generates one."""
import os
import sys
import tempfile

import grpc
from grpc_tools import protoc

from conftest import API_KEY

_PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "GondolaServer", "GRPC")
_OUT = tempfile.mkdtemp(prefix="gondola-grpc-")
assert protoc.main(["protoc", f"-I{_PROTO_DIR}", f"--python_out={_OUT}", f"--grpc_python_out={_OUT}", "api.proto"]) == 0
sys.path.insert(0, _OUT)

import api_pb2 as pb  # noqa: E402
import api_pb2_grpc as pb_grpc  # noqa: E402

# The key as Centrifugo's GRPC API takes it.
METADATA = [("authorization", f"apikey {API_KEY}")]


def stub(address, root_certificates=None):
    """A CentrifugoApi client on `address`, once its listener answers; over TLS trusting `root_certificates`
    (PEM bytes) when they are given."""
    channel = (grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates)) if root_certificates
               else grpc.insecure_channel(address))
    grpc.channel_ready_future(channel).result(timeout=15)
    return pb_grpc.CentrifugoApiStub(channel)


def call(stub_, method, request):
    """Calls `method` with the API key and answers the response (its `error` unset, or the test fails)."""
    response = getattr(stub_, method)(request, metadata=METADATA, timeout=10)
    assert not response.HasField("error"), response.error
    return response
