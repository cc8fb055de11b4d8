import GondolaRESP

/// libFuzzer's entry: bytes as a Redis server might send them. Crashes on a reader
/// crash, on a value longer than its input, or on a value whose every prefix is not
/// "incomplete" (a reader that answers before its last byte would split the stream).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRESPReplies(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let parser = RESPParser()
    guard let (_, length) = try? parser.parse(bytes) else { return 0 }
    guard length > 0, length <= bytes.count else { fatalError("a value of \(length) bytes from \(bytes.count)") }
    for cut in [0, length / 2, length - 1] {
        let prefix = Array(bytes.prefix(cut))
        let incomplete: Bool
        do {
            incomplete = try parser.parse(prefix) == nil
        } catch {
            incomplete = false
        }
        if !incomplete { fatalError("a prefix of \(cut) of \(length) bytes is not incomplete") }
    }
    return 0
}
