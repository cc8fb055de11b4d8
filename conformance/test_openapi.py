"""The server API's OpenAPI document (`swagger`): a valid OpenAPI 3.1 document listing every server API
method, and the live API answering Schemathesis's generated calls as the document says, with no 5xx."""
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import pytest
from openapi_spec_validator import validate

from conftest import API_KEY, GONDOLA, launch, stop_server

# Schemathesis's generation is seeded; a failure prints the seed with the calls that failed.
SEED = 2026_12_07
EXAMPLES_PER_METHOD = 25


@pytest.fixture(scope="module")
def swagger_server():
    """A hub of its own with `swagger` on, so that the generated calls change no other test's data."""
    process, instance = launch(tempfile.mkdtemp(prefix="gondola-openapi-"), settings={"swagger": True})
    yield instance
    stop_server(process)


def get(url, headers=None):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as response:
        return response.status, json.loads(response.read())


def test_the_document_is_valid_openapi_3_1_and_lists_every_server_api_method(swagger_server):
    status, document = get(f"http://127.0.0.1:{swagger_server.port}/swagger/openapi.json")
    assert status == 200 and document["openapi"] == "3.1.0"
    validate(document)
    catalog = json.loads(subprocess.run([GONDOLA, "catalog", "--json"], check=True, capture_output=True, text=True, timeout=60).stdout)
    served = {method["name"] for method in catalog["methods"] if method["surface"] == "server_api"}
    assert {path.removeprefix("/api/") for path in document["paths"]} == served
    publish = document["paths"]["/api/publish"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert publish["additionalProperties"] is False and publish["required"] == ["channel"] and {"data", "b64data"} <= set(publish["properties"])


def test_the_document_is_served_only_when_swagger_is_on(server):
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(f"http://127.0.0.1:{server.port}/swagger/openapi.json")
    assert refused.value.code == 404


def test_the_key_goes_in_x_api_key_or_in_authorization_apikey(swagger_server):
    def info(headers):
        request = urllib.request.Request(f"{swagger_server.api_url}/info", data=b"{}", headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    assert info({"Authorization": f"apikey {API_KEY}"})[1]["result"]["nodes"]
    assert info({"X-API-Key": API_KEY})[1]["result"]["nodes"]
    status, body = info({"Authorization": "apikey wrong"})
    assert status == 401 and body["error"]["code"] == 101


def test_generated_calls_get_answers_the_document_describes_and_never_a_server_error(swagger_server):
    schemathesis = os.path.join(os.path.dirname(sys.executable), "st")
    run = subprocess.run(
        [schemathesis, "run", f"http://127.0.0.1:{swagger_server.port}/swagger/openapi.json", "--header", f"X-API-Key: {API_KEY}",
         "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
         "--max-examples", str(EXAMPLES_PER_METHOD), "--seed", str(SEED), "--workers", "1", "--no-color"],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"Schemathesis (seed {SEED}) found calls the document does not describe:\n{run.stdout[-20000:]}\n{run.stderr[-4000:]}"
    assert "No issues found" in run.stdout, run.stdout[-4000:]
