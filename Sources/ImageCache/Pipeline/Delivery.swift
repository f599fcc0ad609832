// Delivery: each waiter's callback on its queue.

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
    /// What a download or a memory hit hands to each waiter.
    internal struct Delivery {
        let payload: Payload
        let source: Source
        let isStale: Bool
        let limits: DecodeLimits  // the download's, for a waiter whose decoder reads the bytes
        /// What few deliveries carry, behind one reference: a memory hit's delivery, copied along
        /// the route to its callback, stays a few words.
        private let extras: Extras?

        private final class Extras: Sendable {
            let failed: (type: ObjectIdentifier?, error: Error)?  // the download's decoder rejected the bytes
            let misses: Misses  // what the tiers said of the download (MissReason.swift)
            let metrics: TransferMetrics?  // what its transfer measured, from the network
            let usedAlternative: UsedAlternative?  // what it holds instead of its request's URL's (Alternatives.swift)

            init(_ failed: (type: ObjectIdentifier?, error: Error)?, _ misses: Misses, _ metrics: TransferMetrics?,
                 _ usedAlternative: UsedAlternative?) {
                (self.failed, self.misses, self.metrics, self.usedAlternative) = (failed, misses, metrics, usedAlternative)
            }
        }

        init(payload: Payload, source: Source, isStale: Bool = false, failed: (type: ObjectIdentifier?, error: Error)? = nil,
             limits: DecodeLimits = DecodeLimits(), misses: Misses = Misses(), metrics: TransferMetrics? = nil,
             usedAlternative: UsedAlternative? = nil) {
            (self.payload, self.source, self.isStale, self.limits) = (payload, source, isStale, limits)
            let plain = failed == nil && misses == Misses() && metrics == nil && usedAlternative == nil
            extras = plain ? nil : Extras(failed, misses, metrics, usedAlternative)
        }

        var failed: (type: ObjectIdentifier?, error: Error)? { extras?.failed }
        var misses: Misses { extras?.misses ?? Misses() }
        var metrics: TransferMetrics? { extras?.metrics }
        var usedAlternative: UsedAlternative? { extras?.usedAlternative }

        /// Itself, holding the image of `used`, the request's alternative, instead of its URL's.
        func with(_ used: UsedAlternative) -> Delivery {
            Delivery(payload: payload, source: source, isStale: isStale, failed: failed, limits: limits, misses: misses,
                     metrics: metrics, usedAlternative: used)
        }
    }

    /// A waiter's own value from a delivery: what the delivery holds if its decoder made it, else
    /// its decoder's reading of the bytes (a download shared by requests for two types).
    internal static func resolve<Value>(_ delivery: Delivery, _ decoder: Decoder) -> Result<Fetched<Value>, Error> {
        if let failed = delivery.failed, failed.type == decoder.type { return .failure(failed.error) }
        let payload = decoder.made(delivery.payload) ? Result.success(delivery.payload)
            : decoder.decode(delivery.payload.bytes ?? delivery.payload.image.flatMap(PlatformDecoder.downloadedBytes(of:)) ?? Data(),
                             delivery.limits)
        return payload.flatMap { payload in
            guard let value = (decoder.type == nil ? shown(payload) as Any? : payload.value?.value) as? Value else {
                return .failure(.decodingFailed("the entry is not a \(Value.self)"))
            }
            return .success(Fetched(value: value, source: delivery.source, isStale: delivery.isStale,
                                    misses: delivery.misses, metrics: delivery.metrics,
                                    usedAlternative: delivery.usedAlternative))
        }
    }

    /// A delivery as an image: the one it holds, or the bytes decoded as one (a download shared
    /// with a request for another type). No generic cast where it holds one. An image whose scale
    /// stood in for the screen's is given the screen's here, if it is known by now: it is read now on
    /// the main thread, where callbacks run on Apple platforms (see ``ImageCache/Sizing/deliveryScale(standIn:screen:)``).
    internal static func image(_ result: Result<Delivery, Error>) -> Result<Fetched<Image>, Error> {
        result.flatMap { delivery in
            guard let image = shown(delivery.payload) else { return resolve(delivery, .image) }
            return .success(Fetched(value: image, source: delivery.source, isStale: delivery.isStale,
                                    misses: delivery.misses, metrics: delivery.metrics,
                                    usedAlternative: delivery.usedAlternative))
        }
    }

    /// The image alone, as the callback forms of `fetch` get it, or nil: the delivery's own image
    /// needs no ``Fetched`` made and dropped (a memory hit's callback is measured in instructions).
    internal static func imageOnly(_ result: Result<Delivery, Error>, _ options: Request.Options) -> Image? {
        if !options.contains(.firstFrameOnly), case .success(let delivery) = result,
           let image = shown(delivery.payload) { return image }
        return try? image(result, options).get().value
    }

    /// A payload's image as a waiter gets it: at the screen's scale if its own stood in for it.
    private static func shown(_ payload: Payload) -> Image? {
        guard let image = payload.image, payload.scaleStandsIn,
              let scale = Sizing.deliveryScale(standIn: 1, screen: screenScale) else { return payload.image }
        return PlatformDecoder.rescaled(image, to: scale)
    }

    /// Runs every waiter's callback on its queue, once, unless it was cancelled; `event` goes to
    /// the event handler first, in the same block as the first queue's callbacks.
    internal func deliver(_ tasks: [FetchTask], _ result: Result<Delivery, Error>,
                         event: Event? = nil, handler: (@Sendable (Event) -> Void)? = nil) {
        if let event, tasks.first?.queue === Self.variantQueue { emit(event); return deliver(tasks, result) }
        if tasks.contains(where: \.waitsForDiskWrite) {
            let waiting = tasks.filter(\.waitsForDiskWrite), now = tasks.filter { !$0.waitsForDiskWrite }
            if !now.isEmpty { deliver(now, result, event: event, handler: handler) }
            let result = Unchecked(result)
            // The disk queue runs its work in order: this runs after the write queued before it.
            diskQueue.async {
                for task in waiting {
                    self.deliver(task, self.written(result.value, task), event: now.isEmpty ? event : nil,
                                 handler: handler, afterWrite: true)
                }
            }
            return
        }
        if tasks.count == 1 { return deliver(tasks[0], result, event: event, handler: handler) }
        let result = Unchecked(result)  // a UIImage or NSImage is used on one queue at a time
        var queues: [DispatchQueue] = []  // in the order of their first task
        for task in tasks where !queues.contains(where: { $0 === task.queue }) { queues.append(task.queue) }
        for (index, queue) in queues.enumerated() {
            queue.async {
                if index == 0, let event, let handler { handler(event) }
                for task in tasks where task.queue === queue { self.complete(task, result.value) }
            }
        }
    }

    /// Delivers the entry of `key` (a download's, or a store's) to `tasks`, its waiters. Those that
    /// asked for another key of the image (a binder's size, or the whole image, which joined it: see
    /// `Ledger.downloadSharing`; or a variant whose job a store stopped) get their key's own decode
    /// of the same bytes instead, with their processors run on it, once per key however many wait
    /// for it, on a decode worker (here if its decoder is cheap and there are none), kept in memory
    /// under their key beside the entry; `event` goes with the first delivery. Without bytes to
    /// decode (an image stored on Apple platforms), every waiter gets the image, and a variant's
    /// processors run on it. A `downloaded` entry that no waiter asked for itself (a binding before
    /// layout rebound at its size, say) leaves memory once theirs are kept: its requests have gone.
    internal func deliver(entryOf key: Key, to tasks: [FetchTask], _ result: Result<Delivery, Error>,
                          event: Event? = nil, handler: (@Sendable (Event) -> Void)? = nil, downloaded: Bool = false) {
        guard case .success(let delivery) = result, delivery.failed == nil,
              tasks.contains(where: { $0.load.key != key }) else {
            return deliver(tasks, result, event: event, handler: handler)
        }
        let bytes = delivery.payload.bytes ?? delivery.payload.image.flatMap(PlatformDecoder.downloadedBytes(of:))
        var own: [Key: [FetchTask]] = [:], order: [Key] = [], shared: [FetchTask] = []
        for task in tasks {
            guard task.load.key != key, bytes != nil || !task.load.processors.isEmpty else {
                shared.append(task)
                continue
            }
            if own[task.load.key] == nil { order.append(task.load.key) }
            own[task.load.key, default: []].append(task)
        }
        if !shared.isEmpty { deliver(shared, result, event: event, handler: handler) }
        let (source, isStale, limits) = (delivery.source, delivery.isStale, delivery.limits)
        let unwanted = downloaded && shared.isEmpty ? Countdown(order.count) : nil
        for (index, ownKey) in order.enumerated() {
            let event = shared.isEmpty && index == 0 ? event : nil
            let tasks = own[ownKey] ?? [], load = tasks[0].load
            let image = Unchecked(delivery.payload.image)  // what the decode is made from, only compared
            let stored = Unchecked(delivery.payload)  // the image itself, when there are no bytes
            // Once the last own decode is kept (or not made), the entry no one asked for goes.
            let release: @Sendable () -> Void = {
                guard unwanted?.done() == true else { return }
                let now = self.currentTime()
                self.locked { $0.release(key, holding: image.value, now: now) }
            }
            let decode: @Sendable () -> Void = {
                guard tasks.contains(where: \.isWaiting) else {  // cancelled meanwhile: not decoded
                    release()
                    if let event { self.emit(event) }
                    return
                }
                let whole = bytes.map { load.decoder.decode($0, limits) } ?? .success(stored.value)
                let decoded = whole.flatMap { payload in
                    guard !load.processors.isEmpty, let made = payload.image else { return Result.success(payload) }
                    return Processor.run(load.processors, on: made, scale: load.scale).map { Payload(image: $0) }
                }.map { payload in
                    let now = self.currentTime()
                    self.locked { $0.keepVariant(payload, under: ownKey, beside: key, from: image.value, now: now) }
                    return Delivery(payload: payload, source: source, isStale: isStale, limits: limits)
                }
                release()
                self.deliver(tasks, decoded, event: event, handler: handler)
            }
            if load.decoder.isCheap(limits) && load.processors.isEmpty { decode() } else { decodes.async(decode) }
        }
    }

    /// What a task that waits for its image's file gets, on the disk queue once the work queued
    /// before is done: `result`, unless it is an image whose file is not there.
    private func written(_ result: Result<Delivery, Error>, _ task: FetchTask) -> Result<Delivery, Error> {
        guard case .success = result, !disk.holds(DiskStore.fileID(for: task.load.key.string)) else { return result }
        return .failure(.network(.cannotWriteToFile, "the image has no file in the cache's folder (a response "
                                 + "marked no-store, a load of it that asked notWrittenToDisk, or a failed write)"))
    }

    /// `deliver` for one task (a memory hit, say): no array, no grouping to pay for.
    internal func deliver(_ task: FetchTask, _ result: Result<Delivery, Error>,
                         event: Event?, handler: (@Sendable (Event) -> Void)?, afterWrite: Bool = false) {
        // A job's request for its original runs on no app's queue: its event goes where events go.
        if let event, task.queue === Self.variantQueue { emit(event); return deliver(task, result, event: nil, handler: nil) }
        if task.waitsForDiskWrite, !afterWrite {
            let result = Unchecked(result)
            return diskQueue.async {
                self.deliver(task, self.written(result.value, task), event: event, handler: handler, afterWrite: true)
            }
        }
        let result = Unchecked(result)
        task.queue.async {
            if let event, let handler { handler(event) }
            self.complete(task, result.value)
        }
    }

    /// Runs a task's callback, on its queue, unless it was cancelled or already ran; first its
    /// `onProgress` with the whole size, if the download left it one.
    private func complete(_ task: FetchTask, _ result: Result<Delivery, Error>) {
        let (due, progress) = locked { $0.answer(task) }
        guard due else { return }
        if let progress { task.load.onProgress?(progress.received, progress.expected) }
        task.completion(result)
    }

    #if canImport(UIKit) || canImport(AppKit)
    /// The queue of the public API's callbacks, which are main-actor isolated here (see
    /// ``FetchCallback``); nil where they run on ``callbackQueue``.
    internal static let callbackActorQueue: DispatchQueue? = .main

    /// Runs `body` with `value` on the main actor; the caller runs on the main queue
    /// (`callbackActorQueue`). The value crosses in a box: it was made for this one callback.
    internal static func onCallbackActor<Value>(_ value: Value, _ body: @MainActor @Sendable (Value) -> Void) {
        let value = Unchecked(value)
        MainActor.assumeIsolated { body(value.value) }
    }
    #else
    internal static let callbackActorQueue: DispatchQueue? = nil

    internal static func onCallbackActor<Value>(_ value: Value, _ body: @Sendable (Value) -> Void) {
        body(value)
    }
    #endif

    /// Sends an event that has no callbacks with it to the handler, on `callbackQueue`.
    internal func emit(_ event: Event) {
        let (handler, queue) = locked { ($0.settings.onEvent, $0.settings.callbackQueue) }
        guard let handler else { return }
        queue.async { handler(event) }
    }
}
