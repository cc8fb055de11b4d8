import Foundation
import GondolaTestSupport
import Testing

@testable import GondolaServer

/// The client listener's queue of connections not yet accepted is the system's largest
/// (`net.core.somaxconn`), not Hummingbird's 256, so a reconnect storm's SYNs are not dropped.
@Suite struct ListenBacklogTests {
    @Test func theClientListenerQueuesAsManyConnectionsAsTheSystemAllows() async throws {
        let somaxconn = try String(contentsOfFile: "/proc/sys/net/core/somaxconn", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(ListenBacklog.system == min(Int(somaxconn) ?? 0, 65535))
        let server = try await RunningServer.start()
        // For a listening socket, ss's Send-Q column is its backlog.
        let (status, output) = try TestProcess.run(["/usr/bin/ss", "-Hltn", "sport = :\(server.port)"])
        try await server.stop()
        #expect(status == 0)
        let fields = output.split(whereSeparator: \.isWhitespace)
        #expect(fields.count >= 3 && fields[0] == "LISTEN" && Int(fields[2]) == ListenBacklog.system, "ss: \(output)")
    }
}
