import Foundation
import GondolaProtocol

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends a file of cars to a hub's `car_import` server API in batches. The hub checks
/// each batch whole (fields, service areas), so a refused file stops at its first bad
/// batch with the hub's message; batches sent before it stay imported.
public struct CarImporter: Sendable {
    public let url: String
    public let apiKey: String
    public static let batchSize = CarInput.maxImportCount

    public init(url: String, apiKey: String) {
        self.url = url
        self.apiKey = apiKey
    }

    /// A refusal by the hub, or a file that is not a list of cars.
    public struct Refused: Error, CustomStringConvertible {
        public let description: String
    }

    /// Imports every car of `data`; answers how many.
    public func send(_ data: Data) async throws -> Int {
        let list: [JSON]
        switch try JSONParser.parse(Array(data)) {
        case let .array(items): list = items
        case let .object(members):
            guard case let .array(items)? = members.first(where: { $0.key == "cars" })?.value else {
                throw Refused(description: "expected an array of cars or {\"cars\": [...]}")
            }
            list = items
        case let other: throw Refused(description: "expected an array of cars or {\"cars\": [...]}, got \(other.kindName)")
        }
        var imported = 0
        for start in stride(from: 0, to: list.count, by: Self.batchSize) {
            let batch = Array(list[start..<min(start + Self.batchSize, list.count)])
            var request = URLRequest(url: URL(string: url)!)
            request.httpMethod = "POST"
            request.setValue(apiKey, forHTTPHeaderField: "X-API-Key")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(JSON.object([("cars", .array(batch))]).bytes)
            let (body, response) = try await URLSession.shared.data(for: request)
            let answer = try? JSONParser.parse(Array(body))
            guard (response as? HTTPURLResponse)?.statusCode == 200, case let .int(count)? = answer?["result"]?["imported"] else {
                let message = answer?["error"]?["message"].flatMap { if case let .string(text) = $0 { text } else { nil } }
                throw Refused(description: "cars \(start + 1)–\(start + batch.count) refused: \(message ?? String(decoding: body, as: UTF8.self))")
            }
            imported += Int(count)
        }
        return imported
    }
}
