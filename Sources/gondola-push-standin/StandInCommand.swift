import ArgumentParser
import Foundation
import GondolaProtocol
import GondolaPushStandIn

/// Runs the APNs and FCM stand-in as a process of its own, for end-to-end tests and the push
/// benchmark: it writes the hub's push settings (`standin.json`) and the credential files into
/// `--folder`, appends each accepted notification to `accepted.jsonl` there, prints
/// `ready <port>` and serves until it is stopped.
@main
struct StandInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gondola-push-standin",
        abstract: "A local stand-in of APNs and FCM (HTTP/2 over TLS) that checks and records pushes.")

    @Option(help: "Folder for the credentials, standin.json and accepted.jsonl (kept keys are reused).") var folder: String
    @Option(help: "Port on 127.0.0.1 (0: any free one).") var port = 0

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535, got \(port)") }
        guard !folder.isEmpty else { throw ValidationError("--folder must name a folder") }
    }

    func run() async throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let credentials = try StandInCredentials(folder: folder)
        let standIn = try await PushStandIn(credentials: credentials, port: port, log: folder + "/accepted.jsonl")
        let settings = try credentials.write(to: folder, standIn: standIn)
        let json = JSON.object(settings.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })
        try Data(json.text.utf8).write(to: URL(fileURLWithPath: folder + "/standin.json"))
        FileHandle.standardOutput.write(Data("ready \(standIn.port)\n".utf8))
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
