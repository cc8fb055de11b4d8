import GRPCCore
import GRPCNIOTransportHTTP2
import GondolaDomain
import GondolaHub
import ServiceLifecycle
import Tracing

/// A GRPC listener: HTTP/2, with TLS when the listener has a certificate (`security`). The GRPC server API's (`grpc_api_listen`) checks
/// every call for the key (`APIKeyCheck`) before `GRPCServerAPI` answers it; the
/// unidirectional client stream's (`uni_grpc_listen`) serves `UniGRPCService`. A request is
/// at most `maxRequestBytes` (larger: RESOURCE_EXHAUSTED), a connection runs at most
/// `maxConcurrentCalls` calls at once (HTTP/2 refuses more streams until one ends). It
/// stops taking calls on a graceful shutdown and ends once those under way are answered.
struct GRPCListener: Service {
    static let maxConcurrentCalls = 1_024

    let server: GRPCServer<HTTP2ServerTransport.Posix>
    let transport: HTTP2ServerTransport.Posix
    let onServerRunning: @Sendable (Int) async -> Void

    init(
        services: [any RegistrableRPCService], interceptors: [any ServerInterceptor] = [], maxRequestBytes: Int, host: String, port: Int,
        security: HTTP2ServerTransport.Posix.TransportSecurity = .plaintext, onServerRunning: @escaping @Sendable (Int) async -> Void
    ) {
        let config = HTTP2ServerTransport.Posix.Config.defaults { config in
            config.rpc.maxRequestPayloadSize = maxRequestBytes
            config.http2.maxConcurrentStreams = Self.maxConcurrentCalls
        }
        transport = HTTP2ServerTransport.Posix(address: .ipv4(host: host, port: port), transportSecurity: security, config: config)
        server = GRPCServer(transport: transport, services: services, interceptors: interceptors)
        self.onServerRunning = onServerRunning
    }

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await server.serve() }
                if let port = try await transport.listeningAddress.ipv4?.port { await onServerRunning(port) }
            }
        } onGracefulShutdown: {
            server.beginGracefulShutdown()
        }
    }
}

/// Refuses a call without `authorization: apikey <key>` in its metadata (Centrifugo's GRPC
/// API key) with UNAUTHENTICATED, before its request is read.
struct APIKeyCheck: ServerInterceptor {
    let key: String

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        let expected = "apikey " + key
        guard request.metadata[stringValues: "authorization"].contains(where: { ConstantTime.equal($0, expected) }) else {
            throw RPCError(code: .unauthenticated, message: "the call needs metadata authorization: apikey <grpc_api_key>")
        }
        return try await next(request, context)
    }
}

/// Continues the caller's trace: a call's `traceparent` metadata (W3C Trace Context) becomes
/// the task's context, which the server API's span takes as its parent.
struct TraceContextPropagation: ServerInterceptor {
    let tracing: HubTracing

    func intercept<Input: Sendable, Output: Sendable>(
        request: StreamingServerRequest<Input>, context: ServerContext,
        next: @Sendable (StreamingServerRequest<Input>, ServerContext) async throws -> StreamingServerResponse<Output>
    ) async throws -> StreamingServerResponse<Output> {
        guard let traceParent = request.metadata[stringValues: HubTracing.traceParentHeader].first(where: { _ in true }) else {
            return try await next(request, context)
        }
        return try await InstrumentationContext.withValue(tracing.context(traceParent: traceParent)) { try await next(request, context) }
    }
}
