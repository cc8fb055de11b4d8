/// The kind and pixel size of an uploaded image, read from its bytes (never from a
/// file name or a declared content type).
public struct ImageProbe: Sendable, Equatable {
    /// The image formats uploads accept.
    public enum Format: String, Sendable {
        case jpeg, png, heic

        public var contentType: String {
            switch self {
            case .jpeg: return "image/jpeg"
            case .png: return "image/png"
            case .heic: return "image/heic"
            }
        }

        public var fileExtension: String { rawValue == "jpeg" ? "jpg" : rawValue }
    }

    public let format: Format
    public let width: Int
    public let height: Int

    /// Probes `bytes`; nil when they are not a JPEG, PNG or HEIC image whose size can be read.
    public init?(_ bytes: [UInt8]) {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            // The IHDR chunk comes first: width and height at bytes 16 and 20.
            guard bytes.count >= 24, bytes[12..<16].elementsEqual(Array("IHDR".utf8)) else { return nil }
            self.init(format: .png, width: Self.uint32(bytes, 16), height: Self.uint32(bytes, 20))
        } else if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            guard let (width, height) = Self.jpegSize(bytes) else { return nil }
            self.init(format: .jpeg, width: width, height: height)
        } else if Self.isHEIF(bytes) {
            guard let (width, height) = Self.heifSize(bytes) else { return nil }
            self.init(format: .heic, width: width, height: height)
        } else {
            return nil
        }
    }

    private init?(format: Format, width: Int, height: Int) {
        guard width > 0, height > 0 else { return nil }
        self.format = format
        self.width = width
        self.height = height
    }

    /// Walks the JPEG markers to the first start-of-frame, which holds the size.
    private static func jpegSize(_ bytes: [UInt8]) -> (Int, Int)? {
        var index = 2
        while index + 9 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            if marker == 0xFF {
                index += 1
                continue
            }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                index += 2
                continue
            }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            guard length >= 2 else { return nil }
            // SOF0...SOF15 except DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                let height = Int(bytes[index + 5]) << 8 | Int(bytes[index + 6])
                let width = Int(bytes[index + 7]) << 8 | Int(bytes[index + 8])
                return (width, height)
            }
            if marker == 0xDA { return nil }
            index += 2 + length
        }
        return nil
    }

    /// An ISO base media file whose `ftyp` names a HEIF brand.
    private static func isHEIF(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 16, bytes[4..<8].elementsEqual(Array("ftyp".utf8)) else { return false }
        let brands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"]
        let boxSize = min(uint32(bytes, 0), bytes.count)
        var offset = 8
        while offset + 4 <= boxSize {
            if offset != 12, brands.contains(String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)) { return true }
            offset += 4
        }
        return false
    }

    /// The primary item's `ispe` (image spatial extent): `meta` names the primary item
    /// (`pitm`), `ipma` lists its properties by index into `ipco`.
    private static func heifSize(_ bytes: [UInt8]) -> (Int, Int)? {
        guard let meta = boxes(bytes, in: 0..<bytes.count).first(where: { $0.type == "meta" }) else { return nil }
        let children = boxes(bytes, in: (meta.body.lowerBound + 4)..<meta.body.upperBound)
        guard let pitm = children.first(where: { $0.type == "pitm" }), pitm.body.count >= 6,
            let iprp = children.first(where: { $0.type == "iprp" })
        else { return nil }
        let primary = bytes[pitm.body.lowerBound] == 0 ? uint16(bytes, pitm.body.lowerBound + 4) : uint32(bytes, pitm.body.lowerBound + 4)
        let properties = boxes(bytes, in: iprp.body)
        guard let ipco = properties.first(where: { $0.type == "ipco" }), let ipma = properties.first(where: { $0.type == "ipma" }) else { return nil }
        let items = boxes(bytes, in: ipco.body)
        for index in associations(of: primary, ipma: ipma.body, bytes) where (1...items.count).contains(index) {
            let item = items[index - 1]
            if item.type == "ispe", item.body.count >= 12 {
                return (uint32(bytes, item.body.lowerBound + 4), uint32(bytes, item.body.lowerBound + 8))
            }
        }
        return nil
    }

    /// The property indexes `ipma` associates with `item`.
    private static func associations(of item: Int, ipma body: Range<Int>, _ bytes: [UInt8]) -> [Int] {
        guard body.count >= 8 else { return [] }
        let version = bytes[body.lowerBound]
        let wideIndexes = bytes[body.lowerBound + 3] & 1 == 1
        var offset = body.lowerBound + 8
        for _ in 0..<uint32(bytes, body.lowerBound + 4) {
            let idSize = version < 1 ? 2 : 4
            guard offset + idSize + 1 <= body.upperBound else { return [] }
            let id = idSize == 2 ? uint16(bytes, offset) : uint32(bytes, offset)
            let count = Int(bytes[offset + idSize])
            offset += idSize + 1
            let entrySize = wideIndexes ? 2 : 1
            guard offset + count * entrySize <= body.upperBound else { return [] }
            let indexes = (0..<count).map { n in
                wideIndexes ? uint16(bytes, offset + 2 * n) & 0x7FFF : Int(bytes[offset + n] & 0x7F)
            }
            if id == item { return indexes }
            offset += count * entrySize
        }
        return []
    }

    /// The boxes laid one after another in `range`: their type and the range of their body.
    private static func boxes(_ bytes: [UInt8], in range: Range<Int>) -> [(type: String, body: Range<Int>)] {
        var found: [(type: String, body: Range<Int>)] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            let size = uint32(bytes, offset)
            guard size >= 8, offset + size <= range.upperBound else { break }
            found.append((String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self), (offset + 8)..<(offset + size)))
            offset += size
        }
        return found
    }

    private static func uint16(_ bytes: [UInt8], _ offset: Int) -> Int {
        Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
    }

    private static func uint32(_ bytes: [UInt8], _ offset: Int) -> Int {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
    }
}
