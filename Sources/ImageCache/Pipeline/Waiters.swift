// Waiters: the fetches waiting for a job (a download, a variant's job, a store's decode).

import Dispatch
import Foundation

nonisolated extension ImageCache {
    /// The fetches waiting for one job (a ``Download``, a ``VariantJob``, a ``StoreDecode``), in the
    /// order they came; the job holds it and changes it only through these methods.
    internal struct Waiters: Sequence {
        private var tasks: [FetchTask] = []

        var isEmpty: Bool { tasks.isEmpty }

        /// Adds `task`.
        mutating func add(_ task: FetchTask) { tasks.append(task) }

        /// Takes `task` out (a cancellation).
        mutating func remove(_ task: FetchTask) { tasks.removeAll { $0 === task } }

        /// All of them, who all leave: the job ended, or was stopped.
        mutating func takeAll() -> [FetchTask] {
            defer { tasks = [] }
            return tasks
        }

        func makeIterator() -> IndexingIterator<[FetchTask]> { tasks.makeIterator() }
    }
}
