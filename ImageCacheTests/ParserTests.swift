import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@_spi(Testing) @testable import ImageCache
import LoopbackServer

/// Issue 43: inputs that the parsers took for what they are not, found by the fuzzing and
/// conformance runs, by the project's own fuzz targets (`.ci/fuzz`, ImageCacheTests/Fuzz/) and by
/// reading. Each is refused, or described by what its bytes are: the bytes kept decode again.
final class ParserTests: CacheTestCase {
    // MARK: - Image headers

    /// `bytes` inspected, and if they are taken for an image, the bytes kept for it inspected again.
    private func assertRefused(_ bytes: [UInt8], _ reason: String, file: StaticString = #filePath, line: UInt = #line) {
        let data = Data(bytes)
        guard case .failure(.corruptImage(_, let said)) = ImageCache.PlatformDecoder.decode(data) else {
            return XCTFail("accepted: \(ImageCache.PlatformDecoder.decode(data))", file: file, line: line)
        }
        XCTAssertTrue(said.contains(reason), "\(said) does not say \(reason)", file: file, line: line)
    }

    func testAJPEGFrameHeaderShorterThanItsFieldsIsRefused() {
        // Given the 11 bytes: a frame header whose length (2) holds none of its fields, whose
        // size the old check read from the bytes after it (257x55553), even after the end of the image
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x02, 0xFF, 0xD9, 0x01, 0x01, 0x01]
        // Then it is refused, and says why
        assertRefused(jpeg, "frame header of 2 bytes too short")
        // As is one long enough for the size but not for the components it declares
        var data = [UInt8](fixture("photo.jpg"))
        let frame = try! XCTUnwrap(data.indices.first { data[$0] == 0xFF && data[$0 + 1] == 0xC0 })
        data[frame + 3] = 8 + 3 * data[frame + 9] - 1
        assertRefused(data, "too short for its fields")
    }

    func testAWebPWhoseRIFFSizeIsShorterThanItsHeaderIsRefused() {
        // Given the WebP: RIFF size 4, then a VP8L header the RIFF does not hold
        let webp = Array("RIFF".utf8) + [4, 0, 0, 0] + Array("WEBPVP8L".utf8) + [5, 0, 0, 0, 0x2F] + [UInt8](repeating: 0, count: 13)
        // Then it is refused (it was taken for 1x1, keeping 12 bytes that failed to decode)
        assertRefused(webp, "no VP8, VP8L or VP8X header")
    }

    func testAWebPChunkMustLieInsideTheRIFFAndAnExtendedOneMustHoldAnImage() {
        var lossy = [UInt8](fixture("lossy.webp"))  // RIFF, then one VP8 chunk of 1440 bytes
        lossy[16] = 0xA2  // the chunk now says 1442 bytes, past the RIFF
        assertRefused(lossy, "overruns the RIFF size")
        var alpha = [UInt8](fixture("alpha.webp"))  // VP8X, ALPH, VP8
        (alpha[4], alpha[5]) = (40, 0)  // the RIFF ends after ALPH, at byte 48: a header and no image
        assertRefused(Array(alpha.prefix(48)), "no image data after the VP8X header")
    }

    /// photo.png (64x48, 8-bit RGB: IHDR, IDAT, IEND) with IHDR's fields (bytes after its type) set, its CRC made to match.
    private func png(ihdr fields: [Int: UInt8]) -> [UInt8] {
        var data = [UInt8](fixture("photo.png"))
        for (field, value) in fields { data[16 + field] = value }
        let crc = Self.crc32(data[12..<29])
        data.replaceSubrange(29..<33, with: (0..<4).map { UInt8(truncatingIfNeeded: crc >> (24 - 8 * $0)) })
        return data
    }

    /// PNG's CRC-32, written out here rather than taken from the library under test.
    private static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    func testPNGsWithAColorTypeOrBitDepthThatDoesNotExistAreRefused() {
        // Given photo.png as the conformance suite's broken files are: color types 1 and 9, bit depths 0, 3, 99
        for color: UInt8 in [1, 5, 7, 9] { assertRefused(png(ihdr: [9: color]), "with color type \(color) does not exist") }
        for depth: UInt8 in [0, 3, 99] { assertRefused(png(ihdr: [8: depth]), "bit depth \(depth) with color type 2") }
        for field in [10, 11, 12] { assertRefused(png(ihdr: [field: 2]), "unknown compression, filter or interlace") }
        // Then the pairs that exist are accepted with their size (the check does not decode the pixels)
        for (color, depth): (UInt8, UInt8) in [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (2, 8), (2, 16),
                                               (4, 8), (4, 16), (6, 8), (6, 16)] {
            let image = ImageCache.Image(data: Data(png(ihdr: [8: depth, 9: color, 12: 1])))
            XCTAssertEqual(image?.width, 64, "color type \(color), bit depth \(depth), interlaced")
        }
        // And a palette image needs its palette before its data
        assertRefused(png(ihdr: [9: 3]), "no PLTE before IDAT")
    }

    func testAPNGWhoseIHDROrOtherChunkHasTheWrongCRCIsRefused() {
        var data = [UInt8](fixture("photo.png"))
        data[32] ^= 1  // IHDR's CRC
        assertRefused(data, "IHDR's CRC does not match")
        data = [UInt8](fixture("photo.png"))
        data[data.count - 1] ^= 1  // IEND's CRC
        assertRefused(data, "the CRC of the chunk at byte 1074 does not match")
    }

    func testAPNGWithoutImageDataIsRefused() {
        // Given photo.png without its IDAT chunk: IHDR, then IEND
        let data = [UInt8](fixture("photo.png"))
        assertRefused(Array(data.prefix(33) + data.suffix(12)), "no IDAT before IEND")
    }

    /// A GIF of two 1x1 frames after `extensions`.
    private func gif(_ extensions: [UInt8]) -> Data {
        let header = Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0]
        let frame: [UInt8] = [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0x02, 0x02, 0x44, 0x01, 0x00]
        return Data(header + extensions + frame + frame + [0x3B])
    }

    func testAGIFLoopCountIsReadOnlyFromANETSCAPEBlockThatHoldsIt() throws {
        // Given a NETSCAPE2.0 block as written, looping 5 times after the first play: 6 plays
        let netscape = Array("NETSCAPE2.0".utf8) + [3, 1, 5, 0, 0]
        XCTAssertEqual(try ImageCache.inspect(gif([0x21, 0xFF, 11] + netscape)).get().timing.plays, 6)
        // When the block's size says 4 bytes ("NETS"), the rest of the name and the count being in
        // the next sub-block (67 bytes, as "C" says)
        let spread = [0x21, 0xFF, 4] + netscape.dropLast() + [UInt8](repeating: 0, count: 57) + [0]
        let info = try ImageCache.inspect(gif(spread)).get()
        // Then no loop count is read from it: the two frames play once
        XCTAssertEqual(info.frames, 2)
        XCTAssertEqual(info.timing.plays, 1)
    }

    // MARK: - HTTP header values

    func testExpiresIsReadAsRFC9110WritesItWithNamesInAnyCase() {
        let expected: TimeInterval = 2_544_400_878  // Thu, 18 Aug 2050 02:01:18 GMT
        // Given the forms the HTTP caching conformance suite's private-cache tests send, each parsed alone
        for valid in ["Thu, 18 Aug 2050 02:01:18 GMT", "THU, 18 Aug 2050 02:01:18 GMT", "Thu, 18 AUG 2050 02:01:18 GMT",
                      "Thu, 18 Aug 2050 02:01:18 gMT", "thu, 18 aug 2050 02:01:18 gmt", "Thursday, 18-Aug-50 02:01:18 GMT",
                      "THURSDAY, 18-aug-50 02:01:18 Gmt", "Thu Aug 18 02:01:18 2050", "thu AUG 18 02:01:18 2050"] {
            XCTAssertEqual(ImageCache.HTTP.date(valid), expected, valid)
        }
        XCTAssertEqual(ImageCache.HTTP.date("Mon Aug  8 02:01:18 2050"), expected - 10 * 86_400)
        XCTAssertEqual(ImageCache.HTTP.date("Mon Aug 08 02:01:18 2050"), expected - 10 * 86_400)
        // Then runs of spaces, other zones, short years, missing commas, dashes, periods, one-digit
        // fields, day names that do not exist and days that their month does not have are invalid
        for invalid in ["Thu, 18  Aug  2050 02:01:18 GMT", "Thu,  18 Aug 2050 02:01:18 GMT", "Thu, 18 Aug 2050 02:01:18  GMT",
                        "Thu Aug   8 02:01:18 2050", "Thu  Aug 18 02:01:18 2050", "Thu, 18 Aug 2050 02:01:18 UTC",
                        "Thu, 18 Aug 2050 02:01:18 AEST", "Thu, 18 Aug 50 02:01:18 GMT", "Thu 18 Aug 2050 02:01:18 GMT",
                        "Thu, 18-Aug-2050 02:01:18 GMT", "Thu, 18 Aug 2050 02.01.18 GMT", "Thu, 18 Aug 2050 2:01:18 GMT",
                        "Thu, 8 Aug 2050 02:01:18 GMT", "Thursday, 18 Aug 2050 02:01:18 GMT", "Thu, 18-Aug-50 02:01:18 GMT",
                        "Thx, 18 Aug 2050 02:01:18 GMT", "Thu, 29 Feb 2050 02:01:18 GMT", "Thu, 31 Apr 2050 02:01:18 GMT",
                        "Thu Aug 8 02:01:18 2050", "Thu, 18 Aug 2050 02:01:18 GMT,", "Thu, 18 Aug 2050 02:01:18 G\u{39C}T"] {
            XCTAssertNil(ImageCache.HTTP.date(invalid), invalid)
        }
        XCTAssertEqual(ImageCache.HTTP.date("Tue, 29 Feb 2028 00:00:00 GMT"), 1_835_395_200, "a leap year's 29 February")
    }

    func testCacheControlReadsAnASCIIValueAsItReadsAnyValue() {
        // Given values with the spellings and mistakes servers send, read byte by byte (ASCII), and
        // the same with a directive no cache knows, in other letters, which takes the general reading
        let values = ["no-store", "No-Store", "NO-CACHE", "private, no-store", "max-age=60", "max-age = 60", "max-age =60",
                      "max-age= 60", "max-age=\"60\"", "max-age=\"\"", "max-age=\"6\"0", "max-age", "max-age=", "max-age=-1",
                      "max-age=1e3", "max-age=99999999999", "max-age=5, max-age=60", "max-age=x, max-age=60", " \tmust-revalidate\t ",
                      "no-cache=\"Set-Cookie\", max-age=10", ",,no-store,,", "=no-store", "no-store=1", "no-\u{0B}store",
                      "max-age\u{0B}=10", "max-age\r=10", "nostore", "no-stores", "s-maxage=60, public", ""]
        for value in values {
            let ascii = ImageCache.HTTP.CacheControl(value)
            let general = ImageCache.HTTP.CacheControl(value + ", \u{E9}t\u{E9}")
            // Then both readings agree on every directive
            XCTAssertEqual(ascii.noStore, general.noStore, value)
            XCTAssertEqual(ascii.noCache, general.noCache, value)
            XCTAssertEqual(ascii.mustRevalidate, general.mustRevalidate, value)
            XCTAssertEqual(ascii.maxAge, general.maxAge, value)
        }
        // And they read what the grammar says
        XCTAssertTrue(ImageCache.HTTP.CacheControl("Private, NO-STORE").noStore)
        XCTAssertEqual(ImageCache.HTTP.CacheControl("max-age=\"60\"").maxAge, 60)
        XCTAssertEqual(ImageCache.HTTP.CacheControl("max-age =60").maxAge, 0)
        XCTAssertEqual(ImageCache.HTTP.CacheControl("max-age=x, max-age=60").maxAge, 0)
        XCTAssertNil(ImageCache.HTTP.CacheControl("s-maxage=60").maxAge)
    }

    func testRetryAfterIsSecondsOrADateAndNeverInfiniteOrNotANumber() {
        func retryAfter(_ value: String) -> TimeInterval? {
            ImageCache.HTTP.retryAfter(HTTPURLResponse(url: URL(string: "http://127.0.0.1/")!, statusCode: 503,
                                                       httpVersion: nil, headerFields: ["Retry-After": value]))
        }
        XCTAssertEqual(retryAfter("120"), 120)
        XCTAssertEqual(retryAfter("0.2"), 0.2)
        XCTAssertEqual(retryAfter(String(repeating: "9", count: 400)), ImageCache.HTTP.maxSeconds)
        for invalid in ["inf", "nan", "1e300", "-5", "+5", "0x10", "1.", ".5", "1.2.3", ""] {
            XCTAssertNil(retryAfter(invalid), invalid)
        }
    }

    // MARK: - What a disk file says when read back

    private let year2100 = Date(timeIntervalSince1970: 4_102_444_800)

    /// Sets the extended attribute `name` of the file at `path` (Glibc's module has no <sys/xattr.h>).
    private func setAttribute(_ name: String, _ value: String, at path: String) {
        typealias SetAttribute = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
        guard let symbol = dlsym(nil, "setxattr") else { return XCTFail("no setxattr") }
        let bytes = Array(value.utf8)
        XCTAssertEqual(unsafeBitCast(symbol, to: SetAttribute.self)(path, name, bytes, bytes.count, 0), 0, "setxattr \(name)")
    }

    func testAClockShiftThatIsNotAFiniteNumberOfSecondsIsIgnored() throws {
        for (index, shift) in ["inf", "nan", "1e300", "1e10", "-inf"].enumerated() {
            // Given an image on disk dated 2100, whose shift attribute, the allowance a max-age gives
            // a date in the future, says a number no max-age gives
            server.set("/shift\(index).png", .ok(fixture("photo.png")))
            let url = server.url("/shift\(index).png")
            populate([url])
            let path = fileURL(makeCache(), for: url).path
            try FileManager.default.setAttributes([.modificationDate: year2100], ofItemAtPath: path)
            setAttribute("user.imagecache.shift", shift, at: path)
            server.resetCounters()

            // When a new instance fetches it
            let fetched = try XCTUnwrap(result(makeCache(), url)).get()

            // Then the shift counts as none: the date is in the future, so the image is downloaded again
            XCTAssertEqual(fetched.source, .network, "shift \(shift)")
            XCTAssertEqual(server.requestCount("/shift\(index).png"), 1, "shift \(shift)")
        }
    }

    func testReadBackNumbersAndValidatorsAreBoundedOrAbsent() {
        let read = ImageCache.Validators.shift(attribute:)
        XCTAssertEqual(read("3600.0"), 3_600)
        XCTAssertEqual(read(ImageCache.Validators.shiftText(86_400.2)), 86_401, "as written: whole seconds, up")
        XCTAssertEqual(read(String(ImageCache.HTTP.maxSeconds)), ImageCache.HTTP.maxSeconds)
        for invalid in ["inf", "nan", "-nan", "1e300", "2147483649", "-1", "", "one", nil] as [String?] {
            XCTAssertEqual(read(invalid), 0, String(describing: invalid))
        }
        // Validators with a character no header value holds are not sent: a planted file adds no header
        XCTAssertEqual(ImageCache.Validators(attribute: "\"v1\"\nSun, 06 Nov 1994 08:49:37 GMT")?.etag, "\"v1\"")
        XCTAssertEqual(ImageCache.Validators(attribute: "\"v\t1\"\n")?.etag, "\"v\t1\"")
        for invalid in ["\"v1\"\r\n", "\"v1\"\rX-Injected: 1\n", "\n\u{0}", "\"v1\"\n\u{7F}", "\"v1\"", "a\nb\nc"] {
            XCTAssertNil(ImageCache.Validators(attribute: invalid), invalid.debugDescription)
        }
    }

    // MARK: - Names

    func testACacheNameLongerThanAFileNameGetsAFolderItCanCreate() throws {
        // Given a cache whose name, of allowed characters only, is longer than a file name may be
        let name = String(repeating: "a", count: 300)
        let folder = ImageCache.folderName(for: name)
        XCTAssertLessThanOrEqual(folder.utf8.count, 255)
        XCTAssertNotEqual(folder, ImageCache.folderName(for: name + "a"), "distinct names, distinct folders")
        XCTAssertEqual(ImageCache.folderName(for: String(repeating: "a", count: 255)), String(repeating: "a", count: 255))
        // When it downloads an image
        let cache = makeCache(name)
        XCTAssertNotNil(fetchAndWait(cache, serve("/long-name.png")))
        cache.persistCacheToDisk()
        // Then the image is on disk, in that folder
        XCTAssertEqual(cache.diskCount, 1)
        XCTAssertEqual(cache.folder.lastPathComponent, folder)
    }

    func testANameThatLooksHashedDoesNotShareAnotherNamesFolder() {
        // Given a name that is replaced by a hashed one, and that hashed name used as a name of its own
        let replaced = ImageCache.folderName(for: "photos?")
        XCTAssertTrue(replaced.hasPrefix("photos_-"), replaced)
        // Then the two caches get two folders
        XCTAssertNotEqual(ImageCache.folderName(for: replaced), replaced)
        // While names that merely end in a dash and digits keep their own names
        for kept in ["photos-2", "photos-0123456789abcde", "photos-0123456789ABCDEF", "photos_0123456789abcdef"] {
            XCTAssertEqual(ImageCache.folderName(for: kept), kept)
        }
    }
}
