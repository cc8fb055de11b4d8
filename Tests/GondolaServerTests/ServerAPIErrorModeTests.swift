import GondolaHub
import GondolaProtocol
import Testing

@testable import GondolaServer

/// Centrifugo's transport error mode: asked for by a request's `X-Centrifugo-Error-Mode`
/// header, or for every request by `http_api_error_mode: transport`, an error answers with
/// its HTTP status and the error object; successes, and `batch`, answer as before.
@Suite struct ServerAPIErrorModeTests {
    static let transport = ["X-Centrifugo-Error-Mode": "transport"]

    @Test func theHeaderTurnsErrorsIntoHTTPStatuses() async throws {
        let server = try await RunningServer.start()
        let cases: [(String, String, Int, Int64)] = [
            ("publish", #"{"channel":"room:m","data":1,"skip_histroy":true}"#, 400, 107),
            ("publish", #"{"channel":"nowhere:m","data":1}"#, 404, 102),
            ("history", #"{"channel":"room:m","since":{"offset":5,"epoch":"other"}}"#, 416, 112),
        ]
        for (method, body, status, code) in cases {
            let (custom, wrapped) = try await server.post("/api/\(method)", body: body)
            #expect(custom == 200 && wrapped["error"]?["code"] == .int(code), "\(wrapped.text)")
            let (transport, error) = try await server.post("/api/\(method)", body: body, headers: Self.transport)
            #expect(transport == status && error["code"] == .int(code) && error["message"] != nil, "\(error.text)")
        }
        let (status, answer) = try await server.post("/api/publish", body: #"{"channel":"room:m","data":1}"#, headers: Self.transport)
        #expect(status == 200 && answer["result"]?["offset"] == .int(1), "a success answers as before: \(answer.text)")
        let (batchStatus, batch) = try await server.post(
            "/api/batch", body: #"{"commands":[{"publish":{"channel":"nowhere:m","data":1}}]}"#, headers: Self.transport)
        #expect(batchStatus == 200 && batch["replies"]?.arrayValue.first?["error"]?["code"] == .int(102), "\(batch.text)")
        try await server.stop()
    }

    @Test func theSettingTurnsEveryErrorIntoAnHTTPStatus() async throws {
        var configuration = RunningServer.configuration()
        configuration.apiTransportErrors = true
        let server = try await RunningServer.start(configuration)
        let (status, error) = try await server.post("/api/publish", body: #"{"channel":"nowhere:m","data":1}"#)
        #expect(status == 404 && error["code"] == .int(102), "\(error.text)")
        try await server.stop()
    }

    @Test(arguments: [("transport", true), ("custom", false)])
    func theSettingIsRead(value: String, transport: Bool) throws {
        let configuration = try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_HTTP_API_ERROR_MODE": value], flags: [:])
        #expect(configuration.apiTransportErrors == transport)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationLoader.load(file: nil, environment: ["GONDOLA_HTTP_API_ERROR_MODE": "http"], flags: [:])
        }
    }
}
