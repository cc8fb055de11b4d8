import Synchronization

/// What a request type reads, written down while its reader runs over no data: each read
/// of a `JSONFields` in recording mode notes the member's name, kind, whether it must be
/// there and the rule the reader checks, and answers a value that passes that rule. The
/// reader is so the one declaration of a request: the catalog, the docs' tables, the
/// OpenAPI document and the refusal of unknown members all come from what it recorded.
public final class FieldRecorder: Sendable {
    private struct Entry {
        var contract: FieldContract
        /// The members read from the object (or from each object of the array).
        var children: FieldRecorder?
    }

    private struct State {
        var entries: [Entry] = []
        /// Members the reader asked about with `has` before reading: they may be left out.
        var asked: Set<String> = []
        /// While above zero, every read is of a member that may be left out (the reader is
        /// in one of several alternatives).
        var alternatives = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The members recorded, in the order first read, each once.
    public var fields: [FieldContract] {
        state.withLock { $0.entries }.map { entry in
            guard let children = entry.children else { return entry.contract }
            let contract = entry.contract
            return FieldContract(
                name: contract.name, kind: contract.kind, required: contract.required, nullable: contract.nullable, rule: contract.rule,
                members: children.fields)
        }
    }

    /// Notes that the reader asked whether `name` is there.
    func ask(_ name: String) {
        _ = state.withLock { $0.asked.insert(name) }
    }

    /// Runs `read` as one of several alternatives: what it reads may be left out.
    func alternative<T, Failure: Error>(_ read: () throws(Failure) -> T) throws(Failure) -> T {
        state.withLock { $0.alternatives += 1 }
        defer { state.withLock { $0.alternatives -= 1 } }
        return try read()
    }

    /// Notes a read of `name`; a member read twice (in two branches) keeps its first entry,
    /// optional when either read was. Returns the recorder of the member's own members.
    @discardableResult
    func record(_ name: String, _ kind: FieldContract.Kind, required: Bool, nullable: Bool = false, rule: String, nested: Bool = false)
        -> FieldRecorder?
    {
        state.withLock { state in
            let required = required && !state.asked.contains(name) && state.alternatives == 0
            if let index = state.entries.firstIndex(where: { $0.contract.name == name }) {
                let first = state.entries[index].contract
                if first.required && !required {
                    state.entries[index].contract = .optional(first.name, first.kind, first.rule, members: first.members)
                }
                return state.entries[index].children
            }
            let contract: FieldContract =
                switch (required, nullable) {
                case (true, false): .required(name, kind, rule)
                case (true, true): .nullable(name, kind, rule)
                case (false, _): .optional(name, kind, rule)
                }
            let children = nested ? FieldRecorder() : nil
            state.entries.append(Entry(contract: contract, children: children))
            return children
        }
    }
}
