import Foundation
import GondolaProtocol
import Testing

@Suite struct FormsTests {
    @Test func twoPeopleEditOneDocumentLiveMergingFieldsAndNeverOverwritingEachOther() async throws {
        let server = try await startTravelServer()
        let ann = try await server.client("ann")
        let bo = try await server.client("bo")
        let doc = try #require(try await ann.rpc("form.create", ["schema": "watercraft_inspection"])["id"]?.stringValue)
        _ = try await ann.rpc("form.share", ["doc": .string(doc), "user": "bo"])
        try await ann.subscribe("form:\(doc)")
        try await bo.subscribe("form:\(doc)")

        let holder = try await ann.rpc("form.set", ["doc": .string(doc), "key": "isPassportHolder", "value": true, "base_version": 0])
        #expect(holder["version"] == 1 && holder["shown"] == ["isNewPassportIssued", "passportNumber", "launchedOutsideBCDuringLastThirtyDays"])
        let pushed = try await bo.awaitPublications("form:\(doc)", count: 1)
        #expect(pushed.first?["key"] == "isPassportHolder" && pushed.first?["by"] == "ann" && pushed.first?["shown"] == holder["shown"])

        // Bo still at version 1 edits another field while Ann changes hers: both kept.
        _ = try await ann.rpc("form.set", ["doc": .string(doc), "key": "passportNumber", "value": "AB123456", "base_version": 1])
        let merged = try await bo.rpc("form.set", ["doc": .string(doc), "key": "inspectionDate", "value": "2026-11-22", "base_version": 1])
        #expect(merged["version"] == 3)
        // Bo, still at version 1, changes the field Ann set at version 2: refused with its value.
        do {
            _ = try await bo.rpc("form.set", ["doc": .string(doc), "key": "passportNumber", "value": "ZZ999999", "base_version": 1])
            Issue.record("an older base_version overwrote a newer value")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108 && failure.message.contains("changed at version 2 by ann") && failure.message.contains("\"AB123456\""))
        }
        let unset = try await bo.rpc("form.set", ["doc": .string(doc), "key": "isPassportHolder", "value": false, "base_version": 3])
        #expect(unset["hidden"] == ["isNewPassportIssued", "passportNumber", "launchedOutsideBCDuringLastThirtyDays"] && unset["shown"] == [])
        #expect(try await ann.awaitPublications("form:\(doc)", count: 4).last?["hidden"] == unset["hidden"])

        let got = try await bo.rpc("form.get", ["doc": .string(doc)])
        #expect(got["version"] == 4 && got["values"]?["passportNumber"] == "AB123456" && got["field_versions"]?["passportNumber"] == 2)
        #expect(got["visible"]?.arrayValue.contains("passportNumber") == false)

        // A clear is a change too: an edit from before it conflicts instead of undoing it.
        _ = try await ann.rpc("form.set", ["doc": .string(doc), "key": "inspectionDate", "value": .null, "base_version": 4])
        do {
            _ = try await bo.rpc("form.set", ["doc": .string(doc), "key": "inspectionDate", "value": "2026-11-23", "base_version": 4])
            Issue.record("an edit from before a clear undid it")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108 && failure.message.contains("its value is now null"))
        }
        let cleared = try await bo.rpc("form.get", ["doc": .string(doc)])
        #expect(cleared["values"]?["inspectionDate"] == nil && cleared["field_versions"]?["inspectionDate"] == 5, "\(cleared.text)")
        await ann.close()
        await bo.close()
        try await server.stop()
    }

    @Test func aSubmissionNeedsTheShownRequiredFieldsKeepsOnlyShownValuesAndIsFinal() async throws {
        let server = try await startTravelServer()
        let ann = try await server.client("ann")
        let doc = try #require(try await ann.rpc("form.create", ["schema": "shift"])["id"]?.stringValue)
        var version: Int64 = 0
        func set(_ key: String, _ value: JSON) async throws {
            let answer = try await ann.rpc("form.set", ["doc": .string(doc), "key": .string(key), "value": value, "base_version": .int(version)])
            version = answer["version"]?.doubleValue.map { Int64($0) } ?? version
        }
        try await set("boatsInspected", true)
        try await set("inspectionCount", 12)
        do {
            _ = try await ann.rpc("form.submit", ["doc": .string(doc)])
            Issue.record("submitted without required fields")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains("shiftDate, startTime, station, endTime"))
        }
        for (key, value) in [("shiftDate", "2026-11-22"), ("startTime", "07:30"), ("station", "golden"), ("endTime", "17:00")] as [(String, JSON)] {
            try await set(key, value)
        }
        try await set("boatsInspected", false)  // hides inspectionCount, whose value stays in the draft
        #expect(try await ann.rpc("form.get", ["doc": .string(doc)])["values"]?["inspectionCount"] == 12)
        let submitted = try await ann.rpc("form.submit", ["doc": .string(doc)])
        #expect(submitted["submission"]?["values"]?["inspectionCount"] == nil && submitted["submission"]?["values"]?["station"] == "golden")
        do {
            _ = try await ann.rpc("form.set", ["doc": .string(doc), "key": "shiftComment", "value": "late", "base_version": .int(version + 1)])
            Issue.record("a submitted form changed")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108)
        }
        #expect(try await ann.rpc("form.list")["forms"]?.arrayValue.first?["state"] == "submitted")
        await ann.close()
        try await server.stop()
    }

    @Test func strangersAndBadValuesAreRefusedAndChangeNothing() async throws {
        let server = try await startTravelServer()
        let ann = try await server.client("ann")
        let eve = try await server.client("eve")
        let doc = try #require(try await ann.rpc("form.create", ["schema": "watercraft_inspection"])["id"]?.stringValue)
        for (method, data) in [
            ("form.get", ["doc": JSON.string(doc)]),
            ("form.set", ["doc": .string(doc), "key": "inspectionDate", "value": "2026-01-01", "base_version": 0]),
            ("form.submit", ["doc": .string(doc)]), ("form.share", ["doc": .string(doc), "user": "eve"]),
            ("form.get", ["doc": "form-nothing"]),
        ] as [(String, JSON)] {
            do {
                _ = try await eve.rpc(method, data)
                Issue.record("\(method) answered a stranger")
            } catch let failure as RPCFailure {
                #expect(failure.code == 103 && failure.message.hasSuffix("is not yours"), "\(method): \(failure)")
            }
        }
        do {
            try await eve.subscribe("form:\(doc)")
            Issue.record("a stranger subscribed")
        } catch let failure as RPCFailure {
            #expect(failure.code == 103)
        }
        let bad: [(JSON, UInt32, String)] = [
            (["doc": .string(doc), "key": "daysOutOfWater", "value": 4000, "base_version": 0], 107, "above 3650"),
            (["doc": .string(doc), "key": "station", "value": "atlantis", "base_version": 0], 107, "not a code of table 'station'"),
            (["doc": .string(doc), "key": "ghost", "value": 1, "base_version": 0], 107, "has no field 'ghost'"),
            (["doc": .string(doc), "key": "basicTitle", "value": "x", "base_version": 0], 107, "holds no value"),
            (["doc": .string(doc), "key": "inspectionDate", "value": "2026-02-30", "base_version": 0], 107, "expected a date"),
            (["doc": .string(doc), "key": "inspectionDate", "value": "2026-02-03", "base_version": 5], 107, "newer than the document's version 0"),
            (["doc": .string(doc), "key": "inspectionDate", "base_version": 0], 107, "value is required"),
        ]
        for (data, code, text) in bad {
            do {
                _ = try await ann.rpc("form.set", data)
                Issue.record("accepted \(data.text)")
            } catch let failure as RPCFailure {
                #expect(failure.code == code && failure.message.contains(text), "\(failure)")
            }
        }
        do {
            _ = try await ann.rpc("form.create", ["schema": "nope"])
        } catch let failure as RPCFailure {
            #expect(failure.code == 107)
        }
        let untouched = try await ann.rpc("form.get", ["doc": .string(doc)])
        #expect(untouched["version"] == 0 && untouched["values"] == [:])
        _ = try await ann.rpc("form.share", ["doc": .string(doc), "user": "bo"])
        let bo = try await server.client("bo")
        do {
            _ = try await bo.rpc("form.discard", ["doc": .string(doc)])
        } catch let failure as RPCFailure {
            #expect(failure.code == 103 && failure.message.contains("only the owner"))
        }
        #expect(try await ann.rpc("form.discard", ["doc": .string(doc)])["discarded"] == true)
        await ann.close()
        await eve.close()
        await bo.close()
        try await server.stop()
    }

    @Test func assignedAssessmentsAreOneFlowWithProgressOnEveryDevice() async throws {
        let server = try await startTravelServer()
        _ = try await server.api("assessment_assign", ["user": "pat", "assessment": "wellbeing"])
        _ = try await server.api("assessment_assign", ["user": "pat", "assessment": "sleep"])
        let phone = try await server.client("pat")
        let tablet = try await server.client("pat")
        try await tablet.subscribe("personal:#pat")
        let flow = try await phone.rpc("assessment.flow")
        #expect(flow["total"] == 5 && flow["answered"] == 0)
        let questions = try #require(flow["questions"]?.arrayValue)
        #expect(questions.map { $0["number"] } == [1, 2, 3, 4, 5])
        #expect(
            questions[2]["display_name"] == "Wellbeing check" && questions[3]["display_name"] == "Sleep check"
                && questions[3]["assessment_title"] == "Your sleep this week" && questions[3]["question"] == "falling_asleep")

        let first = try await phone.rpc("assessment.answer", ["assessment": "wellbeing", "question": "interest", "value": 2])
        #expect(first["progress"] == ["answered": 1, "total": 5])
        #expect(try await tablet.awaitPublications("personal:#pat", count: 1).first?["progress"] == ["answered": 1, "total": 5])
        _ = try await phone.rpc("assessment.answer", ["assessment": "wellbeing", "question": "interest", "value": 0])
        #expect(try await phone.rpc("assessment.flow")["questions"]?.arrayValue.first?["answer"] == 0, "a changed answer")
        do {
            _ = try await phone.rpc("assessment.submit", ["assessment": "wellbeing"])
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains("mood, energy"))
        }
        for (assessment, question, value, code) in [
            ("wellbeing", "mood", JSON.int(7), UInt32(107)), ("wellbeing", "ghost", 1, 107),
            ("secret-survey", "q", 1, 103), ("wellbeing", "mood", "1", 107),
        ] {
            do {
                _ = try await phone.rpc("assessment.answer", ["assessment": .string(assessment), "question": .string(question), "value": value])
                Issue.record("accepted \(assessment) \(question) \(value.text)")
            } catch let failure as RPCFailure {
                #expect(failure.code == code, "\(failure)")
            }
        }
        _ = try await phone.rpc("assessment.answer", ["assessment": "wellbeing", "question": "mood", "value": 1])
        _ = try await phone.rpc("assessment.answer", ["assessment": "wellbeing", "question": "energy", "value": 3])
        let submitted = try await phone.rpc("assessment.submit", ["assessment": "wellbeing"])
        #expect(
            submitted["submission"]?["answers"] == [
                ["question_id": "interest", "value": 0], ["question_id": "mood", "value": 1],
                ["question_id": "energy", "value": 3],
            ])
        #expect(submitted["submission"]?["patient_id"] == "pat" && submitted["progress"] == ["answered": 0, "total": 2])
        #expect(try await phone.rpc("assessment.flow")["assessments"]?.arrayValue.map { $0["id"] } == ["sleep"])
        do {
            _ = try await phone.rpc("assessment.answer", ["assessment": "wellbeing", "question": "mood", "value": 0])
        } catch let failure as RPCFailure {
            #expect(failure.code == 108)
        }
        let stored = try await server.api("assessment_submissions", ["assessment": "wellbeing"])
        #expect(stored["submissions"]?.arrayValue.first == submitted["submission"])
        let other = try await server.client("sam")
        #expect(try await other.rpc("assessment.flow")["total"] == 0)
        await phone.close()
        await tablet.close()
        await other.close()
        try await server.stop()
    }

    @Test func concurrentEditsOfOneFieldLeaveOneWinnerAndOfDifferentFieldsAllMerge() async throws {
        let server = try await startTravelServer()
        let owner = try await server.client("owner")
        let doc = try #require(try await owner.rpc("form.create", ["schema": "watercraft_inspection"])["id"]?.stringValue)
        var editors: [LiveClient] = []
        for index in 0..<10 {
            _ = try await owner.rpc("form.share", ["doc": .string(doc), "user": .string("editor\(index)")])
            editors.append(try await server.client("editor\(index)"))
        }
        let clients = editors
        let sameField = await withTaskGroup(of: UInt32?.self) { group in
            for (index, editor) in clients.enumerated() {
                group.addTask {
                    await editor.rpcErrorCode(
                        "form.set", ["doc": .string(doc), "key": "daysOutOfWater", "value": .int(Int64(index)), "base_version": 0])
                }
            }
            return await group.reduce(into: [UInt32?]()) { $0.append($1) }
        }
        #expect(sameField.filter { $0 == nil }.count == 1 && sameField.filter { $0 == 108 }.count == 9, "\(sameField)")
        let keys = ["numberOfPeopleInParty", "distanceTravelledKm", "previousWaterbody", "generalComment", "commerciallyHauled"]
        let values: [JSON] = [4, 12.5, "Kinbasket", "clean", true]
        let versions = try await withThrowingTaskGroup(of: JSON?.self) { group in
            for (index, key) in keys.enumerated() {
                group.addTask {
                    try await clients[index].rpc("form.set", ["doc": .string(doc), "key": .string(key), "value": values[index], "base_version": 1])[
                        "version"]
                }
            }
            return try await group.reduce(into: [JSON?]()) { $0.append($1) }
        }
        #expect(Set(versions.compactMap { $0?.doubleValue }) == [2, 3, 4, 5, 6])
        let got = try await owner.rpc("form.get", ["doc": .string(doc)])
        #expect(got["version"] == 6 && keys.enumerated().allSatisfy { got["values"]?[$0.element] == values[$0.offset] })
        for editor in clients { await editor.close() }
        await owner.close()
        try await server.stop()
    }
}
