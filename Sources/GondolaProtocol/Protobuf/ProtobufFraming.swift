/// The Protobuf transport's framing: a frame is a sequence of messages, each
/// preceded by its length as a base-128 varint.
enum ProtobufFraming {
    /// `message` preceded by its length.
    static func lengthPrefixed(_ message: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(message.count + 5)
        appendVarint(UInt64(message.count), to: &bytes)
        bytes.append(contentsOf: message)
        return bytes
    }

    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// The messages of a frame. Throws, naming the place, when a length is
    /// truncated, longer than ten bytes, or runs past the end of the frame.
    static func messages(in frame: [UInt8]) throws(ProtocolDecodingError) -> [ArraySlice<UInt8>] {
        var messages: [ArraySlice<UInt8>] = []
        var index = frame.startIndex
        while index < frame.endIndex {
            let start = index
            var length: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < frame.endIndex else {
                    throw ProtocolDecodingError("truncated length prefix at byte \(start)")
                }
                let byte = frame[index]
                index += 1
                guard shift < 64 else { throw ProtocolDecodingError("length prefix at byte \(start) is longer than 10 bytes") }
                length |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            guard length <= UInt64(frame.endIndex - index) else {
                throw ProtocolDecodingError("message at byte \(start) declares \(length) bytes, \(frame.endIndex - index) remain in the frame")
            }
            let end = index + Int(length)
            messages.append(frame[index..<end])
            index = end
        }
        return messages
    }
}
