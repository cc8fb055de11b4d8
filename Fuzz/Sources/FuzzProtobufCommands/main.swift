import GondolaProtocol

/// libFuzzer's entry: one inbound Protobuf frame. Crashes on a decoder crash or on
/// a command that does not survive a round trip.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProtobufCommands(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let frame = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let failure = ProtocolEncoding.protobuf.roundTripFailure(of: frame) { fatalError(failure) }
    return 0
}
