import GondolaProtocol
import Tracing

/// The hub's OpenTelemetry spans, made only when the server runs with a tracer
/// (`opentelemetry`): without one every call below runs its work and nothing else, so
/// tracing off costs a nil check.
///
/// A publication carries the W3C `traceparent` of the span that published it
/// (`Publication.traceParent`) across the bus, so that the node delivering it continues
/// the publisher's trace: a server API request's trace reaches every node's delivery.
public struct HubTracing: Sendable {
    /// Where spans go; nil when tracing is off.
    public let tracer: (any Tracer)?

    public init(tracer: (any Tracer)?) { self.tracer = tracer }

    /// Tracing off.
    public static let off = HubTracing(tracer: nil)

    public var isOn: Bool { tracer != nil }

    /// The header (and GRPC metadata key) of W3C Trace Context that carries a trace's parent.
    public static let traceParentHeader = "traceparent"

    /// Runs `work` in a span named `name` (a child of `parent`, else of the task's current
    /// context); the span ends when `work` returns and records what it throws.
    public func span<T>(
        _ name: String, kind: SpanKind = .internal, parent: InstrumentationContext? = nil, attributes: SpanAttributes = [:],
        isolation: isolated (any Actor)? = #isolation, _ work: (_ span: (any Span)?) async throws -> T
    ) async rethrows -> T {
        guard let tracer else { return try await work(nil) }
        return try await tracer.withAnySpan(name, context: parent ?? .current ?? .topLevel, ofKind: kind, isolation: isolation) { span in
            span.attributes.merge(attributes)
            return try await work(span)
        }
    }

    /// Starts a span the caller ends (for work that finishes in a completion handler); nil when off.
    public func start(
        _ name: String, kind: SpanKind = .internal, parent: InstrumentationContext? = nil, attributes: SpanAttributes = [:]
    ) -> (any Span)? {
        guard let tracer else { return nil }
        let span = tracer.startAnySpan(name, context: parent ?? .current ?? .topLevel, ofKind: kind)
        span.attributes.merge(attributes)
        return span
    }

    /// The `traceparent` header value of `context` (W3C Trace Context), nil when it holds no span.
    public func traceParent(of context: InstrumentationContext) -> String? {
        guard let tracer else { return nil }
        var headers: [String: String] = [:]
        tracer.inject(context, into: &headers, using: TraceHeaders())
        return headers[Self.traceParentHeader]
    }

    /// The context a `traceparent` header value names, to continue its trace; top level when
    /// tracing is off or the value is not a W3C trace parent.
    public func context(traceParent: String?) -> InstrumentationContext {
        var context = InstrumentationContext.topLevel
        guard let tracer, let traceParent else { return context }
        tracer.extract([Self.traceParentHeader: traceParent], into: &context, using: TraceHeaders())
        return context
    }

    /// The name and attributes of a client command's span, nil for a command not worth one:
    /// a connect, subscribe, publish, RPC or refresh (each of which may also call the proxy).
    static func span(of command: Command, client: String) -> (name: String, attributes: SpanAttributes)? {
        var attributes: SpanAttributes = ["gondola.client": .string(client)]
        switch command.method {
        case .connect: return ("client.connect", attributes)
        case let .subscribe(request):
            attributes["messaging.destination.name"] = request.channel
            return ("client.subscribe", attributes)
        case let .publish(channel, _):
            attributes["messaging.destination.name"] = channel
            return ("client.publish", attributes)
        case let .rpc(method, _):
            attributes["rpc.method"] = method
            return ("client.rpc", attributes)
        case .refresh, .subRefresh: return ("client.refresh", attributes)
        default: return nil
        }
    }

    /// Marks `span` failed with `message` (a refused or failed request answered as an error, not thrown).
    public static func fail(_ span: (any Span)?, _ message: String) {
        span?.setStatus(SpanStatus(code: .error, message: message))
    }
}

/// Header-like carriers of trace context, by lower-cased name.
struct TraceHeaders: Injector, Extractor {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key.lowercased()] = value }

    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key.lowercased()] }
}
