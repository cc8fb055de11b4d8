import GondolaProtocol

/// libFuzzer's entry: one inbound JSON frame. Crashes on a decoder crash or on a
/// command that does not survive a round trip.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONCommands(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let frame = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let failure = ProtocolEncoding.json.roundTripFailure(of: frame) { fatalError(failure) }
    return 0
}
