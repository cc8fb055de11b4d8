import Foundation
import GondolaServices
import Testing

/// Test images: written by libjpeg's cjpeg, libheif's heif-enc and zlib (see their sizes).
func fixture(_ name: String) throws -> [UInt8] {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"))
    return Array(try Data(contentsOf: url))
}

@Suite struct ImageProbeTests {
    @Test func realImagesAreRecognisedWithTheirSize() throws {
        #expect(ImageProbe(try fixture("plate.jpg")) == ImageProbe(try fixture("plate.jpg")))
        let jpeg = try #require(ImageProbe(try fixture("plate.jpg")))
        #expect(jpeg.format == .jpeg && jpeg.width == 80 && jpeg.height == 60)
        let png = try #require(ImageProbe(try fixture("scene.png")))
        #expect(png.format == .png && png.width == 64 && png.height == 48)
        let heic = try #require(ImageProbe(try fixture("damage.heic")))
        #expect(heic.format == .heic && heic.width == 80 && heic.height == 60)
        #expect(heic.format.contentType == "image/heic" && jpeg.format.fileExtension == "jpg")
    }

    @Test(
        arguments: [
            ("text", Array("just some text".utf8)),
            ("pdf", Array("%PDF-1.4\n".utf8)),
            ("empty", []),
            ("png signature only", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
            ("jpeg start only", [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]),
            ("mp4 brand", [0, 0, 0, 0x18] + Array("ftypisom".utf8) + [0, 0, 0, 0] + Array("isomavc1".utf8)),
        ] as [(String, [UInt8])])
    func otherBytesAreNotImages(_ name: String, _ bytes: [UInt8]) {
        #expect(ImageProbe(bytes) == nil, "\(name)")
    }

    /// Every prefix of a real image is either refused or read as the whole image is
    /// (once the prefix holds the size, the rest is not needed): a cut never yields
    /// another format or a wrong size, and never crashes.
    @Test func truncatedImagesAreRefusedOrReadRightAtEveryLength() throws {
        for name in ["plate.jpg", "scene.png", "damage.heic"] {
            let bytes = try fixture(name)
            let whole = try #require(ImageProbe(bytes))
            var shortestRead: Int?
            for length in 0..<bytes.count {
                guard let probe = ImageProbe(Array(bytes.prefix(length))) else { continue }
                #expect(probe == whole, "\(name) cut at \(length) bytes")
                shortestRead = shortestRead ?? length
            }
            #expect(ImageProbe(Array(bytes.prefix(8))) == nil, "\(name): a signature alone is refused")
            #expect((shortestRead ?? bytes.count) > 8, "\(name): the size needs more than the signature")
        }
    }
}

@Suite struct FileStoreTests {
    func temporaryFolder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("gondola-files-\(UUID().uuidString)").path
    }

    @Test func filesAreKeptByContentAndRemovedWhenAsked() throws {
        let store = try FileStore(folder: temporaryFolder())
        let bytes = try fixture("plate.jpg")
        let hash = try store.store(bytes)
        #expect(hash.count == 64)
        #expect(try store.store(bytes) == hash)
        #expect(store.read(hash) == bytes)
        store.remove(hash)
        #expect(store.read(hash) == nil)
        store.remove(hash)
    }

    @Test func aSweepRemovesUnreferencedAndHalfWrittenFiles() throws {
        let folder = temporaryFolder()
        let store = try FileStore(folder: folder)
        let kept = try store.store(try fixture("plate.jpg"))
        let orphan = try store.store(try fixture("scene.png"))
        FileManager.default.createFile(atPath: folder + "/tmp/interrupted", contents: Data([1, 2, 3]))
        #expect(store.sweep(keeping: [kept]) == 2)
        #expect(store.read(kept) != nil && store.read(orphan) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/tmp").isEmpty)
    }

    @Test func namesThatAreNotHashesReadNothing() throws {
        let store = try FileStore(folder: temporaryFolder())
        #expect(store.read("../../etc/passwd") == nil)
        #expect(store.read(String(repeating: "g", count: 64)) == nil)
    }
}
