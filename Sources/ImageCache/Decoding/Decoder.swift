// Decoder: how bytes become an entry: the decoder a load asks for (the platform image, a plugged-in
// decoder's, or a value of an app's type), making a `Payload`.

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
    /// How bytes become an entry: the platform image (the default), or a value of one type.
    internal struct Decoder: @unchecked Sendable {
        let type: ObjectIdentifier?  // nil for the image
        /// The bytes' entry; an image is decoded within `limits` (the settings when the request was
        /// made: the longest side without a size to fill, and when an animation animates).
        let decode: @Sendable (_ data: Data, _ limits: DecodeLimits) -> Result<Payload, Error>
        /// The image's decode of bytes that are also a file (a body streamed to disk, mapped): on
        /// Apple platforms ImageIO reads the file itself. Nil for an app's decoder, which gets the
        /// bytes (mapped: their pages are read as it touches them).
        var decodeFile: (@Sendable (_ data: Data, _ file: URL, _ limits: DecodeLimits) -> Result<Payload, Error>)?

        /// DecodeWorkers `data`, which `file` holds too if given (see `decodeFile`).
        func decode(_ data: Data, file: URL?, _ limits: DecodeLimits) -> Result<Payload, Error> {
            guard let file, let decodeFile else { return decode(data, limits) }
            return decodeFile(data, file, limits)
        }

        /// Whether it costs so little that it runs wherever its bytes are: only the image's where
        /// images are not decoded (Linux: the structural check) and no decoder is plugged in
        /// (`limits.decoders`). ImageIO's decode, a plugged decoder and an app's `decode:` run on a
        /// decode worker.
        func isCheap(_ limits: DecodeLimits) -> Bool {
            #if canImport(ImageIO)
            return false
            #else
            return type == nil && limits.decoders.isEmpty
            #endif
        }

        /// `data` decoded by a plugged decoder, for a view of `size` pixels at `scale`.
        private static func decodePlugged(_ data: Data, by decoder: any ImageCache.ImageDecoder,
                                   filling size: (width: Int, height: Int)?, limits: DecodeLimits,
                                   scale: Double) -> Result<Image, Error> {
            let context = ImageCache.DecodingContext(
                pixelSize: size.map { CGSize(width: $0.width, height: $0.height) }, scale: scale,
                maxPixelSize: limits.maxPixels)
            do {
                return .success(try decoder.decode(data, context: context))
            } catch let error as ImageCache.Error {
                return .failure(error)
            } catch {
                return .failure(.decodingFailed("\(Swift.type(of: decoder)): \(error)"))
            }
        }

        static let image = Decoder.image(filling: nil)

        /// The image, decoded to fill `size` if given (a binder's), else within the bound, for a
        /// screen of `scale` (a view's; nil or 0: the main screen's, as it is when decoded, or 1 in
        /// its place until it is read: see `decodeScale`); an animation's frames as `animation` says.
        static func image(filling size: (width: Int, height: Int)?, scale: Double? = nil,
                          animation: AnimationDecode = .everyFrame) -> Decoder {
            let decode: @Sendable (Data, URL?, DecodeLimits) -> Result<Payload, Error> = { data, file, limits in
                let (scale, standsIn) = ImageCache.Sizing.decodeScale(scale, screen: ImageCache.screenScale)
                if !limits.decoders.isEmpty, let plugged = plugged(limits.decoders, for: data, mimeType: nil) {
                    return decodePlugged(data, by: plugged, filling: size, limits: limits, scale: scale)
                        .map { Payload(bytes: data, image: $0, scaleStandsIn: standsIn) }
                }
                return ImageCache.PlatformDecoder.decode(data, file: file, filling: size, limits: limits, scale: scale,
                                                         animation: animation)
                    .map { Payload(bytes: $0.data, image: $0.image, scaleStandsIn: standsIn) }
            }
            var decoder = Decoder(type: nil) { decode($0, nil, $1) }
            decoder.decodeFile = { decode($0, $1, $2) }
            return decoder
        }

        static func value<Value>(_ decode: @escaping @Sendable (Data) throws -> Value) -> Decoder {
            Decoder(type: ObjectIdentifier(Value.self)) { data, _ in
                Result { Payload(bytes: data, value: Box(try decode(data))) }
                    .mapError { .decodingFailed(String(describing: $0)) }
            }
        }

        func made(_ payload: Payload) -> Bool { type == payload.value?.type && (type != nil || payload.image != nil) }
    }
}
