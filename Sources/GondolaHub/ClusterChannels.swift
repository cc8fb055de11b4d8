import Foundation
import GondolaProtocol

/// The channels with subscribers on every node of a cluster, as the server API's `channels`
/// lists them: each with its subscribers summed over the nodes that answered.
public struct ClusterChannels: Sendable, Equatable {
    /// Subscribers by channel.
    public var counts: [String: Int]
    /// The nodes (by name, or uid when unnamed) that did not answer within the survey's
    /// timeout: their subscribers are not counted.
    public var unanswered: [String]
}

extension Node {
    /// The channels whose names match `pattern` (a `Glob`; all when empty) with subscribers
    /// on this node and, in a cluster, on every other live node, each asked over the engine
    /// and waited for at most `surveyTimeout`.
    public func channels(matching pattern: String) async throws(HubError) -> ClusterChannels {
        var counts = Self.channels(channels(), matching: pattern)
        guard let cluster else { return ClusterChannels(counts: counts, unanswered: []) }
        let others = try await cluster.nodes().filter { $0.uid != cluster.nodeUID }
        let id = UUID().uuidString.lowercased()
        let question: JSON = ["id": .string(id), "question": "channels", "pattern": .string(pattern)]
        let outcome = try await surveys.collect(id: id, expected: Set(others.map(\.uid)), timeout: configuration.surveyTimeout) {
            post(.domain(topic: Surveys.askTopic, origin: uid, payload: question), what: "channels survey")
        }
        for answer in outcome.answers.values {
            guard case let .object(members)? = answer["channels"] else { continue }
            for (channel, count) in members {
                if case let .int(count) = count { counts[channel, default: 0] += Int(count) }
            }
        }
        let unanswered = others.filter { outcome.unanswered.contains($0.uid) }.map { $0.name.isEmpty ? $0.uid : $0.name }
        return ClusterChannels(counts: counts, unanswered: unanswered.sorted())
    }

    /// The uids of the cluster's live nodes (this one among them), as the engine's registry
    /// lists them; alone, this node's.
    public func liveNodeUIDs() async throws(HubError) -> [String] {
        guard let cluster else { return [uid] }
        let listed = try await cluster.nodes().map(\.uid)
        return listed.contains(uid) ? listed : listed + [uid]
    }

    /// Answers another node's survey: its channels matching the survey's pattern, signed
    /// with its uid in the cluster's registry.
    func answerSurvey(_ question: JSON) {
        guard case let .string(id)? = question["id"], question["question"] == .string("channels") else { return }
        let pattern = if case let .string(pattern)? = question["pattern"] { pattern } else { "" }
        let counts = Self.channels(channels(), matching: pattern)
        let answer: JSON = [
            "id": .string(id), "node": .string(cluster?.nodeUID ?? uid),
            "channels": .object(counts.map { (key: $0.key, value: .int(Int64($0.value))) }),
        ]
        post(.domain(topic: Surveys.answerTopic, origin: uid, payload: answer), what: "channels survey answer")
    }

    private static func channels(_ counts: [String: Int], matching pattern: String) -> [String: Int] {
        pattern.isEmpty ? counts : counts.filter { Glob.matches(pattern, $0.key) }
    }

    /// Posts an event no caller waits on; a refusal is logged naming `what`.
    func post(_ event: ClusterEvent, what: String) {
        broker.post(event) { [logger] result in
            if case let .failure(error) = result { logger.error("\(what) not sent", metadata: ["error": "\(error)"]) }
        }
    }
}
