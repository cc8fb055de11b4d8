import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Lets a request that asks to upgrade to a protocol the server does not speak (`Upgrade: h2c`,
/// sent by the JDK's `HttpClient` and `curl --http2` on `http://`) be answered over HTTP/1.1,
/// as Go's net/http answers it: the `Upgrade` and `HTTP2-Settings` fields and their tokens in
/// `Connection` are taken out before NIO's upgrade handler sees the request (which would
/// otherwise drop it and the connection without an answer), and `Connection: close` is put in,
/// because the HTTP decoder reads nothing more on a connection whose request asked to upgrade.
/// A WebSocket upgrade passes untouched, and the filter leaves the pipeline with it (what
/// follows is either WebSocket frames or, refused, the connection's end).
final class UnservedUpgradeFilter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Whether the answer being written ends its connection (its request asked to upgrade).
    private var closing = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard closing, case var .head(head) = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        head.headers.replaceOrAdd(name: "connection", value: "close")
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case var .head(head) = unwrapInboundIn(data), head.headers.contains(name: "upgrade") else {
            return context.fireChannelRead(data)
        }
        let asked = head.headers[canonicalForm: "upgrade"].map { $0.lowercased() }
        if asked.contains("websocket") {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
            return
        }
        closing = Self.dropUpgrade(from: &head)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// `head` without its request to upgrade, closing its connection after the answer when it
    /// asked for one (`Connection: upgrade`); answers whether it does.
    static func dropUpgrade(from head: inout HTTPRequestHead) -> Bool {
        let connection = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
        head.headers.remove(name: "upgrade")
        head.headers.remove(name: "http2-settings")
        let kept = connection.filter { $0 != "upgrade" && $0 != "http2-settings" }
        head.headers.remove(name: "connection")
        if connection.contains("upgrade") {
            head.headers.add(name: "connection", value: "close")
            return true
        }
        if !kept.isEmpty { head.headers.add(name: "connection", value: kept.joined(separator: ", ")) }
        return false
    }
}

/// Hummingbird's HTTP/1.1 channel (the internal listener's) with `UnservedUpgradeFilter` right
/// after the request decoder, so that a request asking for `h2c` is answered and its
/// connection closed rather than left waiting on a decoder that reads nothing more.
struct UpgradeFilteredHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value
    let channel: HTTP1Channel

    var responder: HTTPChannelHandler.Responder { channel.responder }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        self.channel.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(UnservedUpgradeFilter(), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await channel.handle(value: value, logger: logger)
    }
}
