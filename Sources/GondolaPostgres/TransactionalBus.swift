import GondolaHub
import PostgresNIO

/// Sends cluster events from inside a caller's PostgreSQL transaction: they reach
/// every node when, and only if, the transaction commits, in commit order. A
/// repository that appends to a stream under a row lock and notifies in the same
/// transaction gets its publications delivered in offset order on every node.
public protocol TransactionalBus: Sendable {
    func notify(_ events: [ClusterEvent], on connection: PostgresConnection) async throws
}
