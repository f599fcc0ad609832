// ImageCacheBenchmarks: every figure of issue 4, each against its floor, measured in the same run.
//
//     swift run -c release ImageCacheBenchmarks [--quick] [--json PATH] [--only ID,ID...] [--directory PATH]
//
// Prints a Markdown table (figure, ours, floor, ratio, goal, pass/fail) and writes the same as JSON
// to PATH. `--quick` is the short run CI executes: it proves that everything builds and runs, and
// its numbers are not meant to be judged. Exits with 1 if a figure could not be measured (a wrong
// answer from the cache, a timeout), never because a goal was missed. The caches' folders go under
// the temporary directory, or under `--directory PATH` (to compare file systems: a tmpfs, say).
import Foundation

/// The figures, in the order of the table, except that the ones that delete thousands of
/// files run last: on this machine's ext4 (no journal), creating a file costs up to a millisecond
/// for about 30 s after many deletions, which would otherwise land on the network figures' writes.
let figures: [(id: String, run: (Config) throws -> [Row])] = [
    ("peek", peekOneThread),
    ("peekclock", peekAgainstClock),
    ("peek2", peekTwoThreads),
    ("insert", insertAtCap),
    ("store", storeWithManyEntries),
    ("memoryhit", memoryHitToCallback),
    ("diskhit", diskHitToCallback),
    ("network", networkMissThroughput),
    ("decodepace", transfersWhileDecoding),
    ("urgent", urgentUnderBacklog),
    ("drip", urgentBehindDripFed),
    ("dedup", manyFetchesOfOneURL),
    ("diskwrite", diskWriteThroughput),
    ("tenthousand", tenThousandOnDisk),
    ("resident", residentGrowth),
    ("disklimit", diskLimitKept),
    ("bigfolder", bigFolder),
    ("gzipbomb", gzipBombPeak),
    ("processedhit", processedMemoryHit),  // issue 39, after the rows the Performance article numbers
    ("scrollback", scrollBackFromDisk),  // issue 53
    ("burst", visibleBehindPrefetchBurst),
]

func usage() -> Never {
    let ids = figures.map(\.id).joined(separator: ",")
    FileHandle.standardError.write(Data("usage: ImageCacheBenchmarks [--quick] [--json PATH] [--only \(ids)] [--directory PATH]\n".utf8))
    exit(2)
}

/// The value after an option, which must be there.
func value(_ argument: String?) -> String {
    guard let argument else { usage() }
    return argument
}

var quick = false
var jsonPath: String?
var only: Set<String>?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--json": jsonPath = value(arguments.popFirst())
    case "--only": only = Set(value(arguments.popFirst()).split(separator: ",").map(String.init))
    case "--directory": scratchParent = URL(fileURLWithPath: value(arguments.popFirst()), isDirectory: true)
    case "--child":
        // A child process of the resident-memory figure, of the gzip bomb's (its number is the limit),
        // or of the big folder's.
        guard let kind = arguments.popFirst(), let count = arguments.popFirst().flatMap({ Int($0) }) else { usage() }
        do {
            if kind.hasPrefix("gzip-") {
                try gzipBombChild(kind, limit: count)
            } else if kind == "profile-pair" {
                try profilePair(rounds: count)
            } else if kind.hasPrefix("profile-") {
                try profileChild(kind, rounds: count)
            } else if kind.hasPrefix("bigfolder-") {
                try bigFolderChild(kind, count: count)
            } else {
                try residentChild(kind, count: count)
            }
            exit(0)
        } catch {
            print("error: \(error)")
            exit(1)
        }
    default: usage()
    }
}
if let only, !only.isSubset(of: figures.map(\.id)) { usage() }

let config = Config(quick: quick)
var report = Report(machine: .current, mode: quick ? "quick" : "full", directory: scratchParent.path,
                    date: ISO8601DateFormatter().string(from: Date()), seconds: 0, rows: [])
if report.machine.build == "debug" {
    FileHandle.standardError.write(Data("warning: a debug build; measure with `swift run -c release`\n".utf8))
}
let started = now()
for figure in figures where only?.contains(figure.id) ?? true {
    FileHandle.standardError.write(Data("\(figure.id)...\n".utf8))
    let figureStarted = now()
    do {
        report.rows += try figure.run(config)
    } catch {
        report.rows.append(Row(figure: figure.id, error: "\(error)"))
    }
    FileHandle.standardError.write(Data("\(figure.id): \(Report.format(now() - figureStarted)) s\n".utf8))
}
report.seconds = now() - started
report.printTable()
if let jsonPath {
    do {
        try report.writeJSON(to: jsonPath)
    } catch {
        FileHandle.standardError.write(Data("cannot write \(jsonPath): \(error)\n".utf8))
        exit(1)
    }
}
exit(report.rows.contains { $0.error != nil } ? 1 : 0)
