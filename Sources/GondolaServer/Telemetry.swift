import Foundation
import GondolaHub
import OTel
import ServiceLifecycle
import Tracing

/// OpenTelemetry tracing (`opentelemetry`): the hub's spans, exported over OTLP by swift-otel
/// as the standard `OTEL_*` variables configure it (`OTEL_EXPORTER_OTLP_ENDPOINT`,
/// `OTEL_EXPORTER_OTLP_PROTOCOL` — `http/protobuf` by default, `http/json` or `grpc` —,
/// `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_SDK_DISABLED`…). Only traces:
/// metrics stay on `/metrics` and logs on standard error.
///
/// Spans wait in the exporter's queue (`OTEL_BSP_MAX_QUEUE_SIZE`, 2,048) and go in batches;
/// when the queue is full, new spans are dropped, never the server's work.
public struct Telemetry: Sendable {
    /// Where the server's spans go.
    public let tracer: any Tracer
    /// Exports what the tracer ends; runs with the server and flushes at its shutdown.
    let exporter: any Service

    /// The tracer and exporter `configuration` describes once the `OTEL_*` variables of the
    /// process are applied over it.
    public init(configuration: OTel.Configuration = Self.defaultConfiguration) throws {
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        tracer = backend.factory
        exporter = backend.service
    }

    /// The exporter the `OTEL_*` variables of the process configure, nil when
    /// `OTEL_SDK_DISABLED` is `true` (tracing stays off, as the specification has it).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Telemetry? {
        guard environment["OTEL_SDK_DISABLED"]?.lowercased() != "true" else { return nil }
        return try Telemetry()
    }

    /// Traces only, from a service named `gondola` (unless `OTEL_SERVICE_NAME` says otherwise).
    public static var defaultConfiguration: OTel.Configuration {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "gondola"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        return configuration
    }

    /// Makes the tracer the process's (`InstrumentationSystem`), so that the HTTP client's
    /// outbound calls — proxy requests, webhooks, text messages, Telegram — are spans with
    /// their `traceparent` header. Once per process, before the first outbound call.
    public func bootstrapProcess() {
        InstrumentationSystem.bootstrap(tracer)
    }
}
