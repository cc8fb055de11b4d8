import Foundation
import GondolaCrash
import GondolaProtocol
import GondolaTestSupport
import Hummingbird
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The test images of GondolaServicesTests (cjpeg, heif-enc and zlib wrote them).
func imageFixture(_ name: String) throws -> Data {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    return try Data(contentsOf: folder.appendingPathComponent("GondolaServicesTests/Fixtures/\(name)"))
}

extension RunningServer {
    /// An HTTP call with the user's connection token; answers the status and body.
    func http(_ method: String, _ path: String, user: String?, body: Data? = nil) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        if let user { request.setValue("Bearer \(try await token(user))", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as! HTTPURLResponse).statusCode, data)
    }

    func httpJSON(_ method: String, _ path: String, user: String?, body: Data? = nil) async throws -> (Int, JSON) {
        let (status, data) = try await http(method, path, user: user, body: body)
        return (status, try JSONParser.parse(Array(data)))
    }
}

@Suite struct CrashTests {
    @Test func aDraftIsCollectedAndEveryChangeIsPublishedOnItsChannel() async throws {
        let server = try await startTravelServer()
        let phone = try await server.client("alice")
        let crash = try await phone.rpc("crash.start", ["lat": 47.5, "lon": 19.05])
        let id = try #require(crash["id"]?.stringValue)
        #expect(crash["status"] == "draft" && crash["source"] == "manual")
        let tablet = try await server.client("alice", encoding: .protobuf)
        try await tablet.subscribe("crash:\(id)")

        _ = try await phone.rpc("crash.update", ["crash": .string(id), "injured": ["other_driver", "myself"], "note": "rear-ended at the lights"])
        let (status, photo) = try await server.httpJSON(
            "POST", "/api/crash/\(id)/photos/licence_plate?name=plate.jpg", user: "alice",
            body: try imageFixture("plate.jpg"))
        #expect(status == 201)
        #expect(photo["file_name"] == "plate.jpg" && photo["width"] == 80 && photo["height"] == 60 && photo["content_type"] == "image/jpeg")
        let pushes = try await tablet.awaitPublications("crash:\(id)", count: 2)
        #expect(pushes[0]["type"] == "crash.updated" && pushes[0]["crash"]?["injured"] == ["myself", "other_driver"])
        #expect(pushes[1]["type"] == "photo.added" && pushes[1]["photo"]?["id"] == photo["id"])

        let photoID = try #require(photo["id"]?.stringValue)
        let (getStatus, bytes) = try await server.http("GET", "/api/crash/\(id)/photos/\(photoID)", user: "alice")
        let plate = try imageFixture("plate.jpg")
        #expect(getStatus == 200 && bytes == plate)
        let got = try await phone.rpc("crash.get", ["crash": .string(id)])
        #expect(got["photos"]?["licence_plate"]?.arrayValue.count == 1 && got["counts"]?["photos"] == 1)

        let (deleteStatus, removed) = try await server.httpJSON("DELETE", "/api/crash/\(id)/photos/\(photoID)", user: "alice")
        #expect(deleteStatus == 200 && removed["id"] == .string(photoID))
        #expect(try await tablet.awaitPublications("crash:\(id)", count: 3)[2]["type"] == "photo.removed")
        await phone.close()
        await tablet.close()
        try await server.stop()
    }

    @Test func anotherUsersCrashIsNeverShownNorSaidToExist() async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let mallory = try await server.client("mallory")
        let id = try #require(try await alice.rpc("crash.start")["id"]?.stringValue)
        for crash in [id, "crash-does-not-exist"] {
            for (method, data) in [
                ("crash.get", ["crash": JSON.string(crash)]), ("crash.update", ["crash": .string(crash), "note": "x"]),
                ("crash.discard", ["crash": .string(crash)]),
            ] as [(String, JSON)] {
                do {
                    _ = try await mallory.rpc(method, data)
                    Issue.record("\(method) answered for \(crash)")
                } catch let failure as RPCFailure {
                    #expect(failure.code == 103 && failure.message == "permission denied: crash \(crash) is not yours")
                }
            }
            do {
                try await mallory.subscribe("crash:\(crash)")
                Issue.record("subscribed to \(crash)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 103)
            }
            let (status, body) = try await server.httpJSON(
                "POST", "/api/crash/\(crash)/photos/crash_scene", user: "mallory",
                body: try imageFixture("scene.png"))
            #expect(status == 403 && body["error"]?["code"] == 103)
        }
        #expect(try await alice.rpc("crash.get", ["crash": .string(id)])["photos"]?["crash_scene"] == [])
        await alice.close()
        await mallory.close()
        try await server.stop()
    }

    @Test(
        arguments: [
            (["injured": ["no_one", "myself"]], "injured: 'no_one' stands alone"),
            (["injured": ["unsure", "other_driver"]], "injured: 'unsure' stands alone"),
            (["injured": ["everyone"]], "injured: unknown value 'everyone'"),
            (["note": .string(String(repeating: "n", count: 2_001))], "note is 2001 characters, more than 2000"),
            ([:], "give injured, note or both"),
        ] as [(JSON, String)])
    func badCrashInformationIsRefusedAndChangesNothing(_ change: JSON, _ message: String) async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let id = try #require(try await alice.rpc("crash.start")["id"]?.stringValue)
        _ = try await alice.rpc("crash.update", ["crash": .string(id), "injured": ["my_passengers"], "note": "kept"])
        var request = change
        request = request.adding("crash", .string(id))
        do {
            _ = try await alice.rpc("crash.update", request)
            Issue.record("accepted \(change)")
        } catch let failure as RPCFailure {
            #expect(failure.code == 107 && failure.message.contains(message), "\(failure)")
        }
        let crash = try await alice.rpc("crash.get", ["crash": .string(id)])
        #expect(crash["injured"] == ["my_passengers"] && crash["note"] == "kept")
        await alice.close()
        try await server.stop()
    }

    @Test func badUploadsGetPreciseHTTPErrors() async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let id = try #require(try await alice.rpc("crash.start")["id"]?.stringValue)
        let jpeg = try imageFixture("plate.jpg")
        let cases: [(String, String?, Data, Int, Int64)] = [
            ("/api/crash/\(id)/photos/selfies", "alice", jpeg, 400, 107),
            ("/api/crash/\(id)/photos/crash_scene", "alice", Data("not an image".utf8), 415, 107),
            ("/api/crash/\(id)/photos/crash_scene", "alice", jpeg + Data(count: CrashService.maxPhotoBytes), 413, 106),
            ("/api/crash/\(id)/photos/crash_scene?name=../../etc/passwd", "alice", jpeg, 400, 107),
            ("/api/crash/\(id)/photos/crash_scene", nil, jpeg, 401, 101),
        ]
        for (path, user, body, status, code) in cases {
            let (answered, json) = try await server.httpJSON("POST", path, user: user, body: body)
            #expect(answered == status && json["error"]?["code"] == .int(code), "\(path): \(answered) \(json.text)")
        }
        #expect(try await alice.rpc("crash.get", ["crash": .string(id)])["counts"]?["photos"] == 0)
        // Twenty per section, then 409 with 106.
        for _ in 0..<20 {
            #expect(try await server.http("POST", "/api/crash/\(id)/photos/crash_scene", user: "alice", body: jpeg).0 == 201)
        }
        let (full, answer) = try await server.httpJSON("POST", "/api/crash/\(id)/photos/crash_scene", user: "alice", body: jpeg)
        #expect(full == 409 && answer["error"]?["code"] == 106)
        #expect(
            try await server.http("POST", "/api/crash/\(id)/photos/your_vehicle_damage", user: "alice", body: try imageFixture("damage.heic")).0
                == 201)
        await alice.close()
        try await server.stop()
    }

    @Test func listingShowsDraftsFirstAndDiscardDeletesTheFiles() async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let first = try #require(try await alice.rpc("crash.start")["id"]?.stringValue)
        let second = try #require(try await alice.rpc("crash.start")["id"]?.stringValue)
        _ = try await server.http("POST", "/api/crash/\(first)/photos/crash_scene", user: "alice", body: try imageFixture("scene.png"))
        let listed = try await alice.rpc("crash.list")["crashes"]?.arrayValue ?? []
        #expect(listed.compactMap { $0["id"]?.stringValue } == [first, second])
        #expect(listed.first?["counts"]?["photos"] == 1)

        let folder = server.server.configuration.dataFolder + "/files/crash"
        func storedFiles() -> Int {
            ((try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []).filter { $0.count == 67 }.count
        }
        #expect(storedFiles() == 1)
        _ = try await alice.rpc("crash.discard", ["crash": .string(first)])
        #expect(storedFiles() == 0)
        let remaining = try await alice.rpc("crash.list")["crashes"]?.arrayValue ?? []
        #expect(remaining.count == 1)
        await alice.close()
        try await server.stop()
    }

    @Test func aDetectedCrashIsPushedToItsOwner() async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        try await alice.subscribe("personal:#alice")
        let crash = try await server.api("crash_detected", ["user": "alice", "lat": 47.49, "lon": 19.04, "ts": 1_763_800_000_000])
        #expect(crash["source"] == "detected" && crash["occurred_at"] == 1_763_800_000_000)
        let push = try await alice.awaitPublications("personal:#alice", count: 1)[0]
        #expect(push["type"] == "crash.detected" && push["crash"]?["id"] == crash["id"])
        for bad: JSON in [["lat": 1, "lon": 2], ["user": "alice", "lat": 91, "lon": 0], ["user": "alice", "lat": 1]] {
            do {
                _ = try await server.api("crash_detected", bad)
                Issue.record("accepted \(bad)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 107)
            }
        }
        await alice.close()
        try await server.stop()
    }
}

/// The report PDF, read back with poppler-utils.
@Suite struct CrashReportTests {
    /// Runs a poppler tool on a PDF and answers what it printed.
    func poppler(_ tool: String, _ arguments: [String], pdf: Data) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("gondola-report-\(UUID().uuidString).pdf")
        try pdf.write(to: file)
        return try TestProcess.run(["/usr/bin/\(tool)"] + arguments + [file.path] + (tool == "pdftotext" ? ["-"] : [])).output
    }

    @Test func aReportHoldsTheInjuriesTheNoteAndEveryPhotoAndCanBeShared() async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let id = try #require(try await alice.rpc("crash.start", ["lat": 47.5, "lon": 19.05])["id"]?.stringValue)
        do {
            _ = try await alice.rpc("crash.report", ["crash": .string(id)])
            Issue.record("an empty crash was reported")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108 && failure.message.contains("nothing to report"))
        }
        do {
            _ = try await alice.rpc("crash.share", ["crash": .string(id)])
            Issue.record("a crash without a report was shared")
        } catch let failure as RPCFailure {
            #expect(failure.code == 108)
        }
        _ = try await alice.rpc(
            "crash.update",
            [
                "crash": .string(id), "injured": ["myself", "other_driver_passengers"],
                "note": "Blue van ran the red light — Zoë saw it",
            ])
        for (section, file) in [("licence_plate", "plate.jpg"), ("crash_scene", "scene.png"), ("your_vehicle_damage", "damage.heic")] {
            #expect(
                try await server.http("POST", "/api/crash/\(id)/photos/\(section)?name=\(file)", user: "alice", body: try imageFixture(file)).0 == 201
            )
        }
        let reported = try await alice.rpc("crash.report", ["crash": .string(id)])
        #expect(reported["status"] == "report" && reported["report"] == .string("/api/crash/\(id)/report.pdf"))

        let (status, pdf) = try await server.http("GET", "/api/crash/\(id)/report.pdf", user: "alice")
        #expect(status == 200 && pdf.starts(with: Data("%PDF-".utf8)))
        let text = try poppler("pdftotext", [], pdf: pdf)
        for expected in [
            "Crash report", "Myself", "Other driver's passenger(s)", "Blue van ran the red light — Zoë saw it",
            "47.50000, 19.05000", "plate.jpg", "scene.png", "damage.heic", "Crash scene (1)",
        ] {
            #expect(text.contains(expected), "\(expected) missing from the report")
        }
        let images = try poppler("pdfimages", ["-list"], pdf: pdf).split(separator: "\n").dropFirst(2)
        #expect(images.count == 3, "\(images)")
        #expect(try await server.http("GET", "/api/crash/\(id)/report.pdf", user: "mallory").0 == 403)

        let shared = try await alice.rpc("crash.share", ["crash": .string(id), "ttl": 3600])
        let url = try #require(shared["url"]?.stringValue)
        let (sharedStatus, sharedPDF) = try await server.http("GET", url, user: nil)
        #expect(sharedStatus == 200 && sharedPDF == pdf)
        let (forgedStatus, forged) = try await server.httpJSON("GET", url.dropLast(2) + "xx", user: nil)
        #expect(forgedStatus == 404 && forged["error"]?["code"] == 103)
        _ = try await alice.rpc("crash.unshare", ["crash": .string(id)])
        #expect(try await server.http("GET", url, user: nil).0 == 404)
        await alice.close()
        try await server.stop()
    }
}

/// Crash texts through a local stand-in for an SMS gateway, over a real socket.
@Suite struct CrashTextTests {
    /// Starts a gateway that records each text with its Authorization header and refuses
    /// texts to +3610000000 with 502.
    final class Texts: Sendable {
        let items = Mutex<[(authorization: String, body: JSON)]>([])
    }

    static func gateway(_ texts: Texts) async throws -> (port: Int, task: Task<Void, Error>) {
        let router = Router()
        router.post("/sms") { request, _ -> Response in
            let body = try JSONParser.parse(Array(try await request.body.collect(upTo: 65_536).readableBytesView))
            texts.items.withLock { $0.append((request.headers[.authorization] ?? "", body)) }
            return Response(status: body["to"] == "+3610000000" ? .badGateway : .accepted)
        }
        return try await startStandIn(router, name: "SMS gateway")
    }

    @Test func aDetectedCrashIsTextedWithItsDeepLink() async throws {
        let texts = Texts()
        let (port, gateway) = try await Self.gateway(texts)
        defer { gateway.cancel() }
        let server = try await startTravelServer { configuration in
            configuration.domainSettings.values = [
                "sms_webhook_url": .string("http://127.0.0.1:\(port)/sms"), "sms_webhook_token": "gateway-token",
                "crash_link_template": "https://crash.example/open/{id}",
            ]
        }
        let alice = try await server.client("alice")
        #expect(try await alice.rpc("crash.phone", ["phone": "+36201234567"])["phone"] == "+36201234567")
        for bad in ["0620123", "+0123456789", "+36 20 123", "+1234567890123456"] {
            do {
                _ = try await alice.rpc("crash.phone", ["phone": JSON.string(bad)])
                Issue.record("accepted phone \(bad)")
            } catch let failure as RPCFailure {
                #expect(failure.code == 107, "\(bad): \(failure)")
            }
        }
        let crash = try await server.api("crash_detected", ["user": "alice", "lat": 47.49, "lon": 19.04])
        let id = try #require(crash["id"]?.stringValue)
        #expect(crash["sms"]?["status"] == "queued" && crash["sms"]?["to"] == "+36201234567")
        try await eventually("the text at the gateway") { texts.items.withLock { !$0.isEmpty } }
        let sent = try #require(texts.items.withLock { $0.first })
        #expect(sent.authorization == "Bearer gateway-token" && sent.body["to"] == "+36201234567")
        #expect(sent.body["text"]?.stringValue?.hasSuffix("https://crash.example/open/\(id)") == true)

        // A refused text is tried again in the background, and the crash stays.
        let refused = try await server.api("crash_detected", ["user": "bob", "lat": 47.49, "lon": 19.04, "phone": "+3610000000"])
        #expect(refused["sms"]?["status"] == "queued")
        try await eventually("the refused text tried again") { texts.items.withLock { $0.filter { $0.body["to"] == "+3610000000" }.count >= 2 } }
        let bob = try await server.client("bob")
        #expect(try await bob.rpc("crash.list")["crashes"]?.arrayValue.count == 1)
        // No number: no text.
        #expect(try await server.api("crash_detected", ["user": "carol", "lat": 1, "lon": 2])["sms"]?["status"] == "no_phone")
        await alice.close()
        await bob.close()
        try await server.stop()
    }

    @Test func withoutAGatewayTheTextIsLogged() async throws {
        let server = try await startTravelServer()
        let crash = try await server.api("crash_detected", ["user": "alice", "lat": 47.49, "lon": 19.04, "phone": "+36201234567"])
        #expect(crash["sms"]?["status"] == "queued")
        try await server.stop()
    }

    @Test func aGatewayThatDoesNotAnswerDelaysNoCrash() async throws {
        let held = HeldRequests()
        let router = Router()
        router.post("/sms") { _, _ -> Response in
            await held.hold()
            return Response(status: .accepted)
        }
        let (port, gateway) = try await startStandIn(router, name: "hanging SMS gateway")
        defer { gateway.cancel() }
        let server = try await startTravelServer { configuration in
            configuration.domainSettings.values = ["sms_webhook_url": .string("http://127.0.0.1:\(port)/sms")]
        }
        // The gateway holds every text until the end of the test: the answer cannot have waited for it.
        let crash = try await server.api("crash_detected", ["user": "dora", "lat": 47.49, "lon": 19.04, "phone": "+36201234567"])
        #expect(crash["sms"]?["status"] == "queued")
        try await eventually("the text held at the gateway") { held.count == 1 }
        let dora = try await server.client("dora")
        #expect(try await dora.rpc("crash.list")["crashes"]?.arrayValue.count == 1)
        held.release()
        await dora.close()
        try await server.stop()
    }
}

/// The remaining refusals of the crash calls, each followed by a call that still works.
@Suite struct CrashRefusalTests {
    @Test func unknownPhotosMissingReportsBadTTLsAndDiscardingAReportAreRefused() async throws {
        let server = try await startTravelServer()
        let alice = try await server.client("alice")
        let id = try #require(try await alice.rpc("crash.start")["id"]?.stringValue)
        for method in ["GET", "DELETE"] {
            let (status, body) = try await server.httpJSON(method, "/api/crash/\(id)/photos/photo-none", user: "alice")
            #expect(status == 400 && body["error"]?["code"] == 107, "\(method) \(status)")
        }
        let (early, answer) = try await server.httpJSON("GET", "/api/crash/\(id)/report.pdf", user: "alice")
        #expect(early == 409 && answer["error"]?["code"] == 108)

        _ = try await alice.rpc("crash.update", ["crash": .string(id), "note": "kept"])
        _ = try await alice.rpc("crash.report", ["crash": .string(id)])
        for (method, data, code) in [
            ("crash.share", ["crash": JSON.string(id), "ttl": 0], UInt32(107)),
            ("crash.share", ["crash": .string(id), "ttl": .int(91 * 86_400)], 107),
            ("crash.discard", ["crash": .string(id)], 108),
        ] as [(String, JSON, UInt32)] {
            do {
                _ = try await alice.rpc(method, data)
                Issue.record("\(method) accepted \(data)")
            } catch let failure as RPCFailure {
                #expect(failure.code == code, "\(method): \(failure)")
            }
        }
        #expect(try await alice.rpc("crash.get", ["crash": .string(id)])["status"] == "report")
        #expect(try await server.http("GET", "/api/crash/\(id)/report.pdf", user: "alice").0 == 200)
        await alice.close()
        try await server.stop()
    }
}
