import NIOCore
import Synchronization

/// Values kept per event loop and key, made on first use and kept while the process runs;
/// each belongs to its loop and is used only there. The keys are the few settings a server
/// runs with, so the registry holds a handful of values per loop of the server's group.
final class EventLoopLocal<Key: Hashable & Sendable, Value>: Sendable {
    private struct Slot: Hashable {
        let loop: ObjectIdentifier
        let key: Key
    }

    private let values = Mutex<[Slot: NIOLoopBound<Value>]>([:])

    /// The value of `loop` for `key`, made by `make` the first time it is asked for.
    /// Call on `loop`.
    func value(on loop: any EventLoop, for key: Key, make: () -> Value) -> Value {
        values.withLock { values in
            let slot = Slot(loop: ObjectIdentifier(loop), key: key)
            if let value = values[slot] { return value.value }
            let value = make()
            values[slot] = NIOLoopBound(value, eventLoop: loop)
            return value
        }
    }
}
