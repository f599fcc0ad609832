// Payload: an entry as a decoder made it (bytes, and an image or a `Box` for a value that is not an
// image).

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
    /// An entry as a decoder made it: the downloaded bytes (nil once memory no longer has them),
    /// and an image or any other value.
    internal struct Payload {
        private(set) var bytes: Data?
        private(set) var image: Image?
        private(set) var value: Box?
        private(set) var scaleStandsIn = false  // the image's scale stands in for the screen's (see `decodeScale`)
        private(set) var spool: Spool?  // the file the bytes were streamed to, until the disk queue renames it into place

        /// Itself with `bytes` for its bytes: nil once memory need not keep them (they are on disk,
        /// or another entry has them).
        func with(bytes: Data?) -> Payload {
            var payload = self
            payload.bytes = bytes
            return payload
        }

        /// Itself with the file its bytes were streamed to (nil: none, once renamed into place).
        func with(spool: Spool?) -> Payload {
            var payload = self
            payload.spool = spool
            return payload
        }
    }

    /// A decoded value that is not an image, with its type.
    internal final class Box {
        let value: Any
        let type: ObjectIdentifier
        init<Value>(_ value: Value) {
            self.value = value
            type = ObjectIdentifier(Value.self)
        }
    }
}
