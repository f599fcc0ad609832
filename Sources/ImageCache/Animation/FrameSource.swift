// FrameSource: where a player gets its frames decoded (ImageIO from the bytes or the file kept in the
// cache's folder on Apple platforms; a fake whose decodes the tests finish).


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
    /// DecodeWorkers an animation's frames one at a time, at the pixel size its view asks for, for an
    /// ``AnimationPlayer``. The source keeps what it decodes from (the bytes, or the file in the
    /// cache's folder), never the frames: those are the player's, within the shared budget.
    internal protocol FrameSource: AnyObject {
        /// How long each frame shows, and how many times the whole plays (see ``FrameTimeline``).
        var timing: FrameTiming { get }

        /// DecodeWorkers frame `index` at `pixels` (or smaller), and then calls `completion`, once, on
        /// the queue its player runs on, with the frame or nil when it could not be decoded. The
        /// player asks for one frame at a time.
        func decodeFrame(_ index: Int, pixels: (width: Int, height: Int),
                         completion: @escaping (DecodedFrame?) -> Void)
    }
}
