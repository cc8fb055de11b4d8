import CHaru
import CHeif
import Foundation

/// Renders a crash report as a PDF with libharu: the crash time and place, who was
/// injured, the note, and each photo section with its photos (HEIC photos are decoded
/// with libheif first, since PDF cannot hold them). Text is set in DejaVu Sans, embedded,
/// so notes in any language print.
struct CrashReportPDF {
    static let fontFolder = "/usr/share/fonts/truetype/dejavu"
    static let pageWidth: Float = 595, pageHeight: Float = 842, margin: Float = 48
    static let photoWidth: Float = 240, photoHeight: Float = 180, photoGap: Float = 18

    /// A photo with its stored bytes.
    struct Photo {
        let photo: CrashPhoto
        let bytes: [UInt8]
    }

    /// The PDF's bytes, or an error naming what libharu refused.
    static func render(_ crash: Crash, photos: [Photo], generatedAt: Date = Date()) throws -> [UInt8] {
        guard let pdf = HPDF_New(nil, nil) else { throw CrashReportError("libharu could not start a document") }
        defer { HPDF_Free(pdf) }
        HPDF_SetCompressionMode(pdf, UInt32(HPDF_COMP_ALL))
        HPDF_UseUTFEncodings(pdf)
        HPDF_SetCurrentEncoder(pdf, "UTF-8")
        guard let regularName = HPDF_LoadTTFontFromFile(pdf, fontFolder + "/DejaVuSans.ttf", HPDF_TRUE),
            let boldName = HPDF_LoadTTFontFromFile(pdf, fontFolder + "/DejaVuSans-Bold.ttf", HPDF_TRUE),
            let regular = HPDF_GetFont(pdf, regularName, "UTF-8"), let bold = HPDF_GetFont(pdf, boldName, "UTF-8")
        else {
            throw CrashReportError("the DejaVu Sans fonts are missing from \(fontFolder) (Debian package fonts-dejavu-core)")
        }
        HPDF_SetInfoAttr(pdf, HPDF_INFO_TITLE, "Crash report \(crash.id)")
        HPDF_SetInfoAttr(pdf, HPDF_INFO_CREATOR, "Gondola")
        var writer = PageWriter(pdf: pdf, regular: regular, bold: bold)

        writer.line("Crash report", font: bold, size: 20, after: 10)
        writer.line("Crash \(crash.id)", font: regular, size: 9, after: 14)
        writer.line("Time: \(format(crash.occurredAt))", font: regular, size: 11)
        writer.line("Place: " + (crash.place.map { String(format: "%.5f, %.5f", $0.lat, $0.lon) } ?? "not given"), font: regular, size: 11)
        writer.line("Report made: \(format(Int64(generatedAt.timeIntervalSince1970 * 1000)))", font: regular, size: 11, after: 14)

        writer.line("Who was injured", font: bold, size: 14, after: 4)
        writer.paragraph(crash.injured.isEmpty ? "Not given" : crash.injured.map(Self.label).joined(separator: ", "), size: 11)
        writer.line("Note", font: bold, size: 14, after: 4)
        writer.paragraph(crash.note.isEmpty ? "No note" : crash.note, size: 11)

        for section in PhotoSection.allCases {
            let inSection = photos.filter { $0.photo.section == section }
            writer.line("\(section.title) (\(inSection.count))", font: bold, size: 14, after: 6)
            if inSection.isEmpty {
                writer.paragraph("No photos", size: 11)
                continue
            }
            for (index, photo) in inSection.enumerated() {
                guard let image = loadImage(photo, into: pdf) else {
                    HPDF_ResetError(pdf)
                    writer.paragraph("\(photo.photo.fileName): the image could not be read", size: 10)
                    continue
                }
                writer.photo(image, caption: photo.photo.fileName, column: index % 2)
            }
            writer.endPhotoRow()
        }

        guard HPDF_SaveToStream(pdf) == HPDF_OK else { throw CrashReportError("libharu could not write the document (error \(HPDF_GetError(pdf)))") }
        var size = HPDF_GetStreamSize(pdf)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        guard bytes.withUnsafeMutableBufferPointer({ HPDF_ReadFromStream(pdf, $0.baseAddress, &size) }) == HPDF_OK || size == bytes.count else {
            throw CrashReportError("libharu could not hand the document over")
        }
        return bytes
    }

    static func label(_ party: InjuredParty) -> String {
        switch party {
        case .myself: return "Myself"
        case .myPassengers: return "My passenger(s)"
        case .otherDriver: return "Other driver"
        case .otherDriverPassengers: return "Other driver's passenger(s)"
        case .noOne: return "No one"
        case .unsure: return "Unsure"
        }
    }

    static func format(_ milliseconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// The photo as a PDF image: JPEG and PNG as they are, HEIC decoded to RGB.
    private static func loadImage(_ photo: Photo, into pdf: HPDF_Doc) -> HPDF_Image? {
        switch photo.photo.contentType {
        case "image/jpeg":
            return photo.bytes.withUnsafeBufferPointer { HPDF_LoadJpegImageFromMem(pdf, $0.baseAddress, UInt32($0.count)) }
        case "image/png":
            return photo.bytes.withUnsafeBufferPointer { HPDF_LoadPngImageFromMem(pdf, $0.baseAddress, UInt32($0.count)) }
        case "image/heic":
            guard let decoded = decodeHEIC(photo.bytes) else { return nil }
            return decoded.rgb.withUnsafeBufferPointer {
                HPDF_LoadRawImageFromMem(pdf, $0.baseAddress, UInt32(decoded.width), UInt32(decoded.height), HPDF_CS_DEVICE_RGB, 8)
            }
        default:
            return nil
        }
    }

    /// The primary image of a HEIC file as interleaved 8-bit RGB.
    static func decodeHEIC(_ bytes: [UInt8]) -> (rgb: [UInt8], width: Int, height: Int)? {
        guard let context = heif_context_alloc() else { return nil }
        defer { heif_context_free(context) }
        return bytes.withUnsafeBytes { buffer -> (rgb: [UInt8], width: Int, height: Int)? in
            guard heif_context_read_from_memory_without_copy(context, buffer.baseAddress, buffer.count, nil).code == heif_error_Ok else { return nil }
            var handle: OpaquePointer?
            guard heif_context_get_primary_image_handle(context, &handle).code == heif_error_Ok, let handle else { return nil }
            defer { heif_image_handle_release(handle) }
            var image: OpaquePointer?
            guard heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, nil).code == heif_error_Ok, let image else {
                return nil
            }
            defer { heif_image_release(image) }
            let width = Int(heif_image_get_width(image, heif_channel_interleaved))
            let height = Int(heif_image_get_height(image, heif_channel_interleaved))
            var stride: Int32 = 0
            guard width > 0, height > 0, let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride) else { return nil }
            var rgb: [UInt8] = []
            rgb.reserveCapacity(width * height * 3)
            for row in 0..<height {
                rgb.append(contentsOf: UnsafeBufferPointer(start: plane + row * Int(stride), count: width * 3))
            }
            return (rgb, width, height)
        }
    }
}

/// Lays text and photos down the pages, starting a new page when one is full.
private struct PageWriter {
    let pdf: HPDF_Doc
    let regular: HPDF_Font
    let bold: HPDF_Font
    var page: HPDF_Page
    var y: Float
    /// The lowest point the current row of photos reaches.
    var photoRowBottom: Float?

    init(pdf: HPDF_Doc, regular: HPDF_Font, bold: HPDF_Font) {
        self.pdf = pdf
        self.regular = regular
        self.bold = bold
        page = Self.newPage(pdf)
        y = CrashReportPDF.pageHeight - CrashReportPDF.margin
    }

    private static func newPage(_ pdf: HPDF_Doc) -> HPDF_Page {
        let page = HPDF_AddPage(pdf)!
        HPDF_Page_SetSize(page, HPDF_PAGE_SIZE_A4, HPDF_PAGE_PORTRAIT)
        return page
    }

    private mutating func ensure(_ height: Float) {
        if y - height < CrashReportPDF.margin {
            page = Self.newPage(pdf)
            y = CrashReportPDF.pageHeight - CrashReportPDF.margin
        }
    }

    mutating func line(_ text: String, font: HPDF_Font, size: Float, after gap: Float = 2) {
        endPhotoRow()
        ensure(size + gap)
        y -= size
        HPDF_Page_BeginText(page)
        HPDF_Page_SetFontAndSize(page, font, size)
        HPDF_Page_TextOut(page, CrashReportPDF.margin, y, text)
        HPDF_Page_EndText(page)
        y -= gap
    }

    /// Text wrapped at word boundaries to the page's width.
    mutating func paragraph(_ text: String, size: Float) {
        HPDF_Page_SetFontAndSize(page, regular, size)
        let width = CrashReportPDF.pageWidth - 2 * CrashReportPDF.margin
        for source in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var current = ""
            for word in source.split(separator: " ") {
                let candidate = current.isEmpty ? String(word) : current + " " + word
                if !current.isEmpty, HPDF_Page_TextWidth(page, candidate) > width {
                    line(current, font: regular, size: size, after: 3)
                    current = String(word)
                } else {
                    current = candidate
                }
            }
            line(current, font: regular, size: size, after: 3)
        }
        y -= 8
    }

    /// A photo scaled into its cell of a two-column grid, with its file name below.
    mutating func photo(_ image: HPDF_Image, caption: String, column: Int) {
        let cellHeight = CrashReportPDF.photoHeight + 16
        if column == 0 {
            endPhotoRow()
            ensure(cellHeight)
        }
        let width = Float(HPDF_Image_GetWidth(image))
        let height = Float(HPDF_Image_GetHeight(image))
        let scale = min(CrashReportPDF.photoWidth / max(width, 1), CrashReportPDF.photoHeight / max(height, 1), 1)
        let x = CrashReportPDF.margin + Float(column) * (CrashReportPDF.photoWidth + CrashReportPDF.photoGap)
        let top = y
        HPDF_Page_DrawImage(page, image, x, top - height * scale, width * scale, height * scale)
        HPDF_Page_BeginText(page)
        HPDF_Page_SetFontAndSize(page, regular, 8)
        HPDF_Page_TextOut(page, x, top - height * scale - 10, caption)
        HPDF_Page_EndText(page)
        photoRowBottom = min(photoRowBottom ?? top, top - height * scale - 16)
    }

    mutating func endPhotoRow() {
        if let bottom = photoRowBottom {
            y = bottom - 6
            photoRowBottom = nil
        }
    }
}

/// A report that could not be rendered, naming the reason.
struct CrashReportError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
