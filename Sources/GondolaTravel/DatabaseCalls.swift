import GondolaHub

/// Runs a database read; a failure answers the caller with an internal error (100)
/// and changes nothing.
func databaseRead<T>(_ body: () throws -> T) throws(HubError) -> T {
    do { return try body() } catch { throw .internalError("database read failed: \(error)") }
}

/// Runs a database write; a failure answers the caller with an internal error (100),
/// and the caller keeps its in-memory view as it was.
func databaseWrite<T>(_ body: () throws -> T) throws(HubError) -> T {
    do { return try body() } catch { throw .internalError("database write failed: \(error)") }
}
