import GondolaHub
import GondolaProtocol

/// `batch`: several server API commands in one request, answered in order, as Centrifugo
/// answers them: `{"replies": [{"publish": {…}}, {"error": {…}}, …]}` at the top level.
/// Each command is `{"<method>": {…its request…}}` and fails on its own (an unknown method
/// 104, a bad request 107) without stopping the others. With `parallel` the commands run
/// at once, at most `batchConcurrency` at a time; without, one after the other. The
/// request body's limit (1 MiB) bounds the number of commands.
extension ServerAPI {
    /// Most commands of a parallel batch running at once (Centrifugo's limit).
    static let batchConcurrency = 1024

    static let batchContract = MethodContract(
        name: "batch", surface: .serverAPI, owner: NameClaims.hub, fields: BatchRequest.fields,
        answerFields: [.required("replies", .objectArray, "one per command in order: `{\"<method>\": result}` or `{\"error\": {code, message}}`")],
        answer:
            "at the top level, not under `result`; a command fails alone (unknown method 104, bad request 107, `batch` inside a batch 104); `parallel` runs up to 1,024 commands at once"
    )

    func batch(_ body: JSON) async -> JSON {
        let request: BatchRequest
        do {
            request = try BatchRequest.decode(body)
        } catch {
            return ["error": Self.errorJSON(error.protocolError)]
        }
        let commands = request.commands
        var replies = [JSON](repeating: .null, count: commands.count)
        guard request.parallel else {
            for (index, command) in commands.enumerated() { replies[index] = await reply(to: command) }
            return ["replies": .array(replies)]
        }
        await withTaskGroup(of: (Int, JSON).self) { group in
            for index in commands.indices {
                if index >= Self.batchConcurrency, let (done, reply) = await group.next() { replies[done] = reply }
                group.addTask { (index, await reply(to: commands[index])) }
            }
            for await (done, reply) in group { replies[done] = reply }
        }
        return ["replies": .array(replies)]
    }

    /// One command's reply: `{"<method>": result}` or `{"error": …}`.
    private func reply(to command: BatchRequest.Command) async -> JSON {
        switch command {
        case let .refused(error):
            return ["error": Self.errorJSON(error.protocolError)]
        case let .call(name, body):
            guard let method = methods[name] else { return ["error": Self.errorJSON(HubError.methodNotFound(name).protocolError)] }
            do {
                return .object([(key: name, value: try await method.call(body))])
            } catch {
                return ["error": Self.errorJSON(error.protocolError)]
            }
        }
    }
}

/// `batch`: `{commands: [{"<method>": {…}}], parallel?}`.
struct BatchRequest: RequestContract {
    /// One command: a method and its request, or why it cannot run.
    enum Command: Sendable {
        case call(method: String, body: JSON)
        case refused(HubError)
    }

    let commands: [Command]
    let parallel: Bool

    init(_ fields: RequestFields) throws(HubError) {
        let commandList = fields.noting("each `{\"<method>\": {…its request…}}`, any server API method but `batch`")
        commands = try commandList.freeObjectArray("commands", maxCount: .max).map { command in
            guard command.members.count == 1, let (method, body) = command.members.first else {
                return .refused(.badRequest("\(command.path) must hold one method, got \(command.members.count)"))
            }
            return .call(method: method, body: body)
        }
        parallel = try fields.noting("run the commands at once (at most 1,024 at a time)").bool("parallel", default: false)
    }
}
