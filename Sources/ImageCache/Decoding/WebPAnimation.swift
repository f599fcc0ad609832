// WebPAnimation: the structural parse of an extended WebP's animation (its ANIM and ANMF chunks),
// which the format check (Formats.swift) runs on every platform: frames, durations, loop count.

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
#if canImport(ImageIO)
import ImageIO
#endif
#if canImport(SwiftUI)
import SwiftUI
#endif

nonisolated extension ImageCache {
    /// The frames of an extended WebP (RIFF `VP8X`, `ANIM`, `ANMF`), as the WebP container
    /// specification lays them out, read from chunks whose headers the format check already found
    /// inside the RIFF.
    ///
    /// Refused, with the reason: an `ANMF` chunk before any `ANIM` chunk, or in a file whose `VP8X`
    /// header does not set the animation flag; an animation flag with no `ANMF` chunk; an `ANIM`
    /// chunk shorter than its 6 bytes or an `ANMF` shorter than its 16-byte header; a frame that
    /// does not lie inside the canvas; a frame's chunk (`ALPH`, `VP8 `, `VP8L`, ...) that runs past
    /// its `ANMF` chunk; a frame without `VP8 ` or `VP8L` data whose header is whole.
    ///
    /// Durations follow ``ImageCache/FrameTiming/duration(delay:)`` (a delay under 20 ms shows for 100 ms);
    /// the loop count is the number of plays, 0 for forever (as libwebp and browsers read it).
    internal struct WebPAnimation {
        /// Why the chunks are not an animation a decoder would accept.
        internal struct Refusal: Swift.Error {
            let reason: String
        }

        private let bytes: UnsafeBufferPointer<UInt8>

        /// Reads `bytes`, the whole file.
        internal init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        /// The frames and timing of the extended WebP whose chunks run from byte 12 (its `VP8X`
        /// chunk) to `end`, with a canvas of `canvas` pixels. A file whose `VP8X` header says it is
        /// not animated, and has no `ANMF` chunk, is one frame.
        internal func frames(to end: Int, canvas: (width: Int, height: Int)) -> Result<(frames: Int, timing: FrameTiming), Refusal> {
            let animated = byte(20) & 0x02 != 0  // the VP8X flags' animation bit
            var (offset, plays, durations): (Int, Int?, [Double]) = (12, nil, [])
            while end - offset >= 8 {
                let start = offset + 8, length = min(Int(le32(offset + 4)), end - start)
                if matches("ANIM", at: offset) {
                    guard length >= 6 else { return refuse("the ANIM chunk has \(length) bytes, not 6") }
                    plays = plays ?? le16(start + 4)
                } else if matches("ANMF", at: offset) {
                    guard animated else { return refuse("an ANMF frame in a WebP whose VP8X header is not animated") }
                    guard plays != nil else { return refuse("the ANMF frame at byte \(offset) comes before any ANIM chunk") }
                    if let reason = frameProblem(start, length, durations.count + 1, canvas) { return refuse(reason) }
                    durations.append(FrameTiming.duration(delay: Double(le24(start + 12)) / 1_000))
                }
                offset = start + length + (length & 1)
            }
            if animated && durations.isEmpty { return refuse("the VP8X header says animated, but no ANMF frame follows") }
            guard durations.count > 1 else { return .success((1, FrameTiming())) }
            return .success((durations.count, FrameTiming(durations: durations, plays: plays ?? 0)))
        }

        /// What is wrong with the frame (number `number`, from 1) whose `ANMF` payload is the
        /// `length` bytes at `start`; nil if nothing is.
        private func frameProblem(_ start: Int, _ length: Int, _ number: Int, _ canvas: (width: Int, height: Int)) -> String? {
            guard length >= 16 else { return "frame \(number)'s ANMF chunk has \(length) bytes, under its 16-byte header" }
            let (x, y) = (le24(start) * 2, le24(start + 3) * 2)
            let (width, height) = (le24(start + 6) + 1, le24(start + 9) + 1)
            guard x + width <= canvas.width, y + height <= canvas.height else {
                return "frame \(number) (\(width)x\(height) at \(x),\(y)) lies outside the \(canvas.width)x\(canvas.height) canvas"
            }
            var (offset, image) = (start + 16, false)
            let end = start + length
            while offset < end {
                guard end - offset >= 8, le32(offset + 4) <= end - offset - 8 else {
                    return "frame \(number)'s chunk at byte \(offset) runs past its ANMF chunk"
                }
                let (data, size) = (offset + 8, Int(le32(offset + 4)))
                if matches("VP8 ", at: offset) || matches("VP8L", at: offset) {
                    let lossless = matches("VP8L", at: offset)
                    guard lossless ? size >= 5 && byte(data) == 0x2F
                                   : size >= 10 && byte(data + 3) == 0x9D && byte(data + 4) == 0x01 && byte(data + 5) == 0x2A else {
                        return "frame \(number)'s \(lossless ? "VP8L" : "VP8") header at byte \(offset) is not whole"
                    }
                    image = true
                }
                offset = data + size + (size & 1)
            }
            return image ? nil : "frame \(number) has no VP8 or VP8L data"
        }

        private func refuse(_ reason: String) -> Result<(frames: Int, timing: FrameTiming), Refusal> {
            .failure(Refusal(reason: reason))
        }

        private func byte(_ i: Int) -> Int { i >= 0 && i < bytes.count ? Int(bytes[i]) : 0 }
        private func le16(_ i: Int) -> Int { byte(i) | byte(i + 1) << 8 }
        private func le24(_ i: Int) -> Int { le16(i) | byte(i + 2) << 16 }
        // Unsigned, compared with what is left, never added to an offset unchecked (as Formats.swift does).
        private func le32(_ i: Int) -> UInt32 { UInt32(le16(i)) | UInt32(le16(i + 2)) << 16 }
        private func matches(_ tag: String, at offset: Int) -> Bool {
            tag.utf8.enumerated().allSatisfy { byte(offset + $0.offset) == Int($0.element) }
        }
    }
}
