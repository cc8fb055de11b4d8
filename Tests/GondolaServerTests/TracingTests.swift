import Foundation
import GondolaHub
import OTel
import Testing
import Tracing

@testable import GondolaServer

/// Tracing's settings and the trace context a publication carries between nodes: off, nothing is
/// made and nothing travels; on, a span's W3C `traceparent` names its trace and itself, and a span
/// started from it (as the delivering node does) continues that trace. The export to a collector,
/// a trace across the nodes of a cluster and the spans' tree are tested against an OTLP receiver
/// in `conformance/test_tracing.py` and `conformance/test_cluster.py`.
@Suite struct TracingTests {
    /// An OpenTelemetry tracer whose spans go nowhere (its exporter is not run).
    static func tracer() throws -> any Tracer {
        var configuration = Telemetry.defaultConfiguration
        configuration.traces.exporter = .none
        return try Telemetry(configuration: configuration).tracer
    }

    /// The trace id and span id of a `traceparent` value, after checking its shape.
    static func parts(_ traceParent: String?) throws -> (trace: Substring, span: Substring) {
        let fields = try #require(traceParent).split(separator: "-")
        try #require(fields.count == 4 && fields[0] == "00" && fields[1].count == 32 && fields[2].count == 16, "\(fields)")
        return (fields[1], fields[2])
    }

    @Test func offNothingIsMadeAndNothingTravels() async {
        let tracing = HubTracing.off
        let seen = await tracing.span("api.publish", kind: .server) { span in span == nil }
        #expect(seen, "the work runs without a span")
        #expect(tracing.start("publish") == nil)
        #expect(tracing.traceParent(of: .topLevel) == nil)
        #expect(tracing.context(traceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").isEmpty)
    }

    @Test func aSpansTraceParentIsContinuedWhereItArrives() async throws {
        let tracing = HubTracing(tracer: try Self.tracer())
        let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        // The server API's span under the caller's, and the publish span within it, as `Node.publish` starts it.
        let published = try await tracing.span("api.publish", kind: .server, parent: tracing.context(traceParent: caller)) { _ in
            let publish = try #require(tracing.start("publish", kind: .producer))
            defer { publish.end() }
            return tracing.traceParent(of: publish.context)
        }
        let (trace, publishSpan) = try Self.parts(published)
        #expect(trace == "0af7651916cd43dd8448eb211c80319c", "the caller's trace goes on")
        // The delivering node's span: the same trace, its parent the publish span.
        let delivery = try #require(tracing.start("deliver", kind: .consumer, parent: tracing.context(traceParent: published)))
        defer { delivery.end() }
        let (deliveryTrace, deliverySpan) = try Self.parts(tracing.traceParent(of: delivery.context))
        #expect(deliveryTrace == trace && deliverySpan != publishSpan)
        // A value that is not a trace parent starts nothing from it.
        #expect(tracing.traceParent(of: tracing.context(traceParent: "not-a-trace-parent")) == nil)
    }

    @Test func theServerAPIsSpansNeedTracing() throws {
        let problems = ConfigurationLoader.check(file: nil, environment: ["GONDOLA_OPENTELEMETRY_API": "true"], flags: [:]).problems
        #expect(problems.contains { $0.description.contains("'opentelemetry_api' needs 'opentelemetry'") })
        let configuration = try ConfigurationLoader.load(
            file: nil, environment: ["GONDOLA_OPENTELEMETRY": "true", "GONDOLA_OPENTELEMETRY_API": "true"], flags: [:])
        #expect(configuration.opentelemetry && configuration.opentelemetryAPI)
        #expect(try Telemetry.fromEnvironment(["OTEL_SDK_DISABLED": "true"]) == nil, "the specification's switch leaves tracing off")
    }
}
