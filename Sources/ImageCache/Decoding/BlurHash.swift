// BlurHash: the compact string a feed's server sends beside an image URL (woltapp/blurhash), read and
// decoded to a few pixels, and those pixels as a PNG: what a view shows until its image comes.

import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#endif

nonisolated extension ImageCache {
    /// A BlurHash read from its string: the number of cosine components on each axis and their
    /// colors (linear RGB), as woltapp/blurhash's reference decoder reads them.
    ///
    /// **Bounds.** Untrusted text is refused with a ``Malformed`` value, never a trap: a string of
    /// more than ``maxLength`` characters is refused unread; one whose length is not the
    /// 4 + 2 x components its first character announces, or with a character outside base 83, or
    /// with more than ``maxComponents`` components on an axis (a first character the reference
    /// encoder never writes), is refused. Decoding is to at most ``maxSide`` x ``maxSide`` pixels,
    /// so what a hash allocates is bounded: at most 81 colors, then 3 bytes per pixel
    /// (48 KiB at 128 x 128) and the PNG of them (about as much again).
    internal struct BlurHash: Sendable, Equatable {
        /// Components along x and along y, 1...9 each.
        let componentsX: Int, componentsY: Int
        /// Each component's red, green and blue in linear light, component `i + j * componentsX`.
        private let colors: [Double]

        /// The longest hash read: 4 + 2 x 9 x 9 characters.
        static let maxLength = 166
        /// The most components on one axis, as the reference encoder allows.
        static let maxComponents = 9
        /// The largest width and height a hash is decoded to, in pixels.
        static let maxSide = 128

        /// Why a string is not a BlurHash.
        struct Malformed: Swift.Error, Equatable, CustomStringConvertible {
            let reason: String
            var description: String { "malformed BlurHash: \(reason)" }
        }

        /// Reads `text`, or says why it is not a BlurHash (see the bounds above).
        static func parse(_ text: String) -> Result<BlurHash, Malformed> {
            let utf8 = text.utf8
            guard utf8.count <= maxLength else {
                return .failure(Malformed(reason: "longer than \(maxLength) characters"))
            }
            guard utf8.count >= 6 else { return .failure(Malformed(reason: "\(utf8.count) characters, fewer than 6")) }
            var digits = [Int]()
            digits.reserveCapacity(utf8.count)
            for byte in utf8 {
                guard let digit = base83[Int(byte)] else {
                    return .failure(Malformed(reason: "a character outside base 83 at \(digits.count)"))
                }
                digits.append(digit)
            }
            let (componentsY, componentsX) = (digits[0] / 9 + 1, digits[0] % 9 + 1)
            guard componentsY <= maxComponents else {
                return .failure(Malformed(reason: "\(componentsY) components along y, more than \(maxComponents)"))
            }
            guard digits.count == 4 + 2 * componentsX * componentsY else {
                return .failure(Malformed(reason: "\(digits.count) characters for \(componentsX)x\(componentsY) components"))
            }
            func number(_ start: Int, _ count: Int) -> Int { digits[start..<(start + count)].reduce(0) { $0 * 83 + $1 } }
            let maximum = Double(digits[1] + 1) / 166
            let dc = number(2, 4)  // up to 83^4 - 1: more than 24 bits, read as the reference reads it
            var colors = [sRGBToLinear(dc >> 16), sRGBToLinear((dc >> 8) & 255), sRGBToLinear(dc & 255)]
            colors.reserveCapacity(3 * componentsX * componentsY)
            for component in 1..<(componentsX * componentsY) {
                let ac = number(4 + component * 2, 2)
                for quantised in [ac / (19 * 19), (ac / 19) % 19, ac % 19] {
                    colors.append(signedSquare(Double(quantised - 9) / 9) * maximum)
                }
            }
            return .success(BlurHash(componentsX: componentsX, componentsY: componentsY, colors: colors))
        }

        /// The hash decoded to `width` x `height` pixels (each clamped to 1...``maxSide``), as sRGB
        /// bytes, red, green, blue, row by row: the reference decoder's pixels with `punch` 1.
        func pixels(width: Int, height: Int) -> (width: Int, height: Int, rgb: [UInt8]) {
            let (width, height) = (min(max(width, 1), Self.maxSide), min(max(height, 1), Self.maxSide))
            // cos(pi x i / width) for each x and component i, and the same along y: made once.
            let cosX = (0..<width).flatMap { x in (0..<componentsX).map { Foundation.cos(Double.pi * Double(x * $0) / Double(width)) } }
            let cosY = (0..<height).flatMap { y in (0..<componentsY).map { Foundation.cos(Double.pi * Double(y * $0) / Double(height)) } }
            var rgb = [UInt8](repeating: 0, count: width * height * 3)
            var index = 0
            for y in 0..<height {
                for x in 0..<width {
                    var (r, g, b) = (0.0, 0.0, 0.0)
                    for j in 0..<componentsY {
                        for i in 0..<componentsX {
                            let basis = cosX[x * componentsX + i] * cosY[y * componentsY + j]
                            let c = 3 * (i + j * componentsX)
                            r += colors[c] * basis
                            g += colors[c + 1] * basis
                            b += colors[c + 2] * basis
                        }
                    }
                    rgb[index] = Self.linearToSRGB(r)
                    rgb[index + 1] = Self.linearToSRGB(g)
                    rgb[index + 2] = Self.linearToSRGB(b)
                    index += 3
                }
            }
            return (width, height, rgb)
        }

        /// The size to decode a hash to for a view of `aspect` (width over height; nil or absurd:
        /// square): 32 pixels on the longer side, at least 1 on the shorter. A BlurHash has no
        /// detail finer than its 9 components: the view scales it up.
        static func decodeSize(aspect: Double?) -> (width: Int, height: Int) {
            guard let aspect, aspect.isFinite, aspect > 0 else { return (32, 32) }
            if aspect >= 1 { return (32, max(1, min(32, Int((32 / aspect).rounded())))) }
            return (max(1, min(32, Int((32 * aspect).rounded()))), 32)
        }

        /// Each ASCII byte's base-83 digit (woltapp's alphabet); nil for the others.
        private static let base83: [Int?] = {
            let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)
            var table = [Int?](repeating: nil, count: 256)
            for (digit, byte) in alphabet.enumerated() { table[Int(byte)] = digit }
            return table
        }()

        private static func sRGBToLinear(_ value: Int) -> Double {
            let v = Double(value) / 255
            return v <= 0.04045 ? v / 12.92 : Foundation.pow((v + 0.055) / 1.055, 2.4)
        }

        /// The reference's conversion, truncating after adding 0.5.
        private static func linearToSRGB(_ value: Double) -> UInt8 {
            let v = value.isNaN ? 0 : min(max(value, 0), 1)
            let s = v <= 0.0031308 ? v * 12.92 : 1.055 * Foundation.pow(v, 1 / 2.4) - 0.055
            return UInt8(min(255, max(0, Int(s * 255 + 0.5))))
        }

        private static func signedSquare(_ value: Double) -> Double { value < 0 ? -value * value : value * value }
    }
}
