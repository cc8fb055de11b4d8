"""Forms and assessments with centrifuge-python: two clients co-editing one document (different
fields merge, the same field conflicts, visibility changes pushed), the combined assessment flow
with changed answers and submission, authorisation, and every bad input followed by a check that
other clients are still served."""
import pytest
from centrifuge import ReplyError

from conftest import API_KEY
from helpers import Events, SubEvents, connected_client, post, server_api
from test_bad_input import assert_healthy


async def rpc(client, codec, method, data):
    return codec.into((await client.rpc(method, codec.out(data))).data)


async def refused(client, codec, method, data):
    with pytest.raises(ReplyError) as error:
        await rpc(client, codec, method, data)
    return error.value


async def test_two_clients_co_edit_one_document(server, codec):
    owner, mate = f"inspector-{codec.name}", f"mate-{codec.name}"
    ann, _ = await connected_client(server, owner, codec)
    bo, _ = await connected_client(server, mate, codec)
    doc = (await rpc(ann, codec, "form.create", {"schema": "watercraft_inspection"}))["id"]
    await rpc(ann, codec, "form.share", {"doc": doc, "user": mate})
    live = Events()
    await bo.new_subscription(f"form:{doc}", SubEvents(live)).subscribe()
    await live.wait("subscribed")

    shown = await rpc(ann, codec, "form.set", {"doc": doc, "key": "isPassportHolder", "value": True, "base_version": 0})
    assert shown["version"] == 1 and shown["shown"] == ["isNewPassportIssued", "passportNumber", "launchedOutsideBCDuringLastThirtyDays"]
    pushed = codec.into((await live.wait("publication"))[0].pub.data)
    assert pushed["key"] == "isPassportHolder" and pushed["by"] == owner and pushed["shown"] == shown["shown"]

    await rpc(ann, codec, "form.set", {"doc": doc, "key": "passportNumber", "value": "XK123456", "base_version": 1})
    merged = await rpc(bo, codec, "form.set", {"doc": doc, "key": "numberOfPeopleInParty", "value": 3, "base_version": 1})
    assert merged["version"] == 3
    conflict = await refused(bo, codec, "form.set", {"doc": doc, "key": "passportNumber", "value": "ZZ999999", "base_version": 1})
    assert conflict.code == 108 and f"changed at version 2 by {owner}" in conflict.message and '"XK123456"' in conflict.message
    hidden = await rpc(bo, codec, "form.set", {"doc": doc, "key": "isPassportHolder", "value": False, "base_version": 3})
    assert hidden["hidden"] == ["isNewPassportIssued", "passportNumber", "launchedOutsideBCDuringLastThirtyDays"]
    changes = [codec.into(p.pub.data) for p in await live.wait("publication", count=4)]
    assert [c["version"] for c in changes] == [1, 2, 3, 4] and changes[3]["hidden"] == hidden["hidden"]
    state = await rpc(ann, codec, "form.get", {"doc": doc})
    assert state["values"] == {"isPassportHolder": False, "passportNumber": "XK123456", "numberOfPeopleInParty": 3}
    assert "passportNumber" not in state["visible"] and state["shared_with"] == [mate]
    table = await rpc(ann, codec, "form.code_table", {"name": "station"})
    assert {"code": "golden", "label": "Golden"} in table["values"]
    await ann.disconnect()
    await bo.disconnect()


async def test_assessment_flow_with_changed_answers_and_submission(server, codec):
    patient = f"patient-{codec.name}"
    for assessment in ("wellbeing", "sleep"):
        server_api(server, "assessment_assign", {"user": patient, "assessment": assessment})
    phone, _ = await connected_client(server, patient, codec)
    tablet, _ = await connected_client(server, patient, codec)
    personal = Events()
    await tablet.new_subscription(f"personal:#{patient}", SubEvents(personal)).subscribe()
    await personal.wait("subscribed")
    flow = await rpc(phone, codec, "assessment.flow", {})
    assert flow["total"] == 5 and [q["number"] for q in flow["questions"]] == [1, 2, 3, 4, 5]
    assert [q["display_name"] for q in flow["questions"]] == ["Wellbeing check"] * 3 + ["Sleep check"] * 2
    for question in flow["questions"]:
        answer = await rpc(phone, codec, "assessment.answer", {"assessment": question["assessment"], "question": question["question"],
                                                               "value": question["options"][1]["value"]})
    assert answer["progress"] == {"answered": 5, "total": 5}
    progress = [codec.into(p.pub.data)["progress"]["answered"] for p in await personal.wait("publication", count=5)]
    assert progress == [1, 2, 3, 4, 5]
    await rpc(phone, codec, "assessment.answer", {"assessment": "sleep", "question": "waking", "value": 3})
    assert (await rpc(phone, codec, "assessment.flow", {}))["questions"][4]["answer"] == 3
    first = await rpc(phone, codec, "assessment.submit", {"assessment": "wellbeing"})
    second = await rpc(phone, codec, "assessment.submit", {"assessment": "sleep"})
    assert second["submission"]["answers"] == [{"question_id": "falling_asleep", "value": 1}, {"question_id": "waking", "value": 3}]
    assert second["progress"] == {"answered": 0, "total": 0}
    stored = server_api(server, "assessment_submissions", {"user": patient})["submissions"]
    assert stored == [second["submission"], first["submission"]]
    await phone.disconnect()
    await tablet.disconnect()


async def test_bad_form_and_assessment_input_is_refused_and_others_are_served(server, codec):
    owner, stranger = f"owner-form-{codec.name}", f"stranger-form-{codec.name}"
    ann, _ = await connected_client(server, owner, codec)
    eve, _ = await connected_client(server, stranger, codec)
    doc = (await rpc(ann, codec, "form.create", {"schema": "shift"}))["id"]
    for method, data in [("form.get", {"doc": doc}), ("form.set", {"doc": doc, "key": "endTime", "value": "10:00", "base_version": 0}),
                         ("form.submit", {"doc": doc}), ("form.discard", {"doc": doc}), ("form.get", {"doc": "form-none"}),
                         ("assessment.answer", {"assessment": "wellbeing", "question": "mood", "value": 1})]:
        error = await refused(eve, codec, method, data)
        assert error.code == 103, (method, error)
    watching = Events()
    await eve.new_subscription(f"form:{doc}", SubEvents(watching)).subscribe()
    assert (await watching.wait("unsubscribed"))[0].code == 103
    for data, text in [({"doc": doc, "key": "endTime", "value": "25:00", "base_version": 0}, "expected a time"),
                       ({"doc": doc, "key": "motorizedBlowBys", "value": -1, "base_version": 0}, "below 0"),
                       ({"doc": doc, "key": "inspectionCount", "value": 1.5, "base_version": 0}, "whole number"),
                       ({"doc": doc, "key": "station", "value": "moon", "base_version": 0}, "not a code"),
                       ({"doc": doc, "key": "endTime", "value": "10:00", "base_version": -1}, "base_version"),
                       ({"doc": doc, "key": "endTime", "value": "10:00"}, "base_version is required")]:
        error = await refused(ann, codec, "form.set", data)
        assert error.code == 107 and text in error.message, (data, error.message)
    assert (await refused(ann, codec, "form.submit", {"doc": doc})).code == 107
    assert (await refused(ann, codec, "form.create", {"schema": "missing"})).code == 107
    assert (await refused(ann, codec, "form.code_table", {"name": "missing"})).code == 107
    assert (await rpc(ann, codec, "form.get", {"doc": doc}))["version"] == 0
    cyclic = {"id": "broken", "title": "B", "sections": [{"key": "s", "title": "S", "fields": [
        {"key": "a", "type": "switch", "dependencies": [{"key": "b", "equals": True}]},
        {"key": "b", "type": "switch", "dependencies": [{"key": "a", "equals": True}]}]}]}
    error = post(f"{server.api_url}/form_schema_put", cyclic, {"X-API-Key": API_KEY})["error"]
    assert error["code"] == 107 and "dependency cycle: a → b → a" in error["message"]
    error = post(f"{server.api_url}/assessment_assign", {"user": stranger, "assessment": "missing"}, {"X-API-Key": API_KEY})["error"]
    assert error["code"] == 107
    await ann.disconnect()
    await eve.disconnect()
    await assert_healthy(server)
