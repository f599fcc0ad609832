import Foundation

/// One line of the table: a figure of the issue, ours against its floor, and whether the goal holds.
struct Row: Codable {
    /// What is measured, as the issue names it.
    var figure: String
    /// The unit of `ours` and `floor`: "ns", "us", "ms", "MB", "images/s" or "x".
    var unit: String
    var ours: Stats?
    /// What the floor is: the plainest code that does the same job.
    var floorName: String
    var floor: Stats?
    /// Median of ours over median of the floor.
    var ratio: Double?
    /// The goal, in words.
    var goal: String
    var pass: Bool
    /// What else the run saw (checks, side costs).
    var notes: [String] = []
    /// Why the figure could not be measured; such a row never passes.
    var error: String?

    init(figure: String, unit: String, ours: Stats?, floorName: String, floor: Stats?, goal: String,
         pass: (_ ratio: Double?) -> Bool, notes: [String] = []) {
        self.figure = figure
        self.unit = unit
        self.ours = ours
        self.floorName = floorName
        self.floor = floor
        if let ours, let floor, floor.median > 0 { ratio = ours.median / floor.median }
        self.goal = goal
        self.pass = pass(ratio)
        self.notes = notes
    }

    init(figure: String, error: String) {
        self.figure = figure
        unit = ""
        floorName = ""
        goal = ""
        pass = false
        self.error = error
    }
}

/// The whole run, as written to `--json PATH`.
struct Report: Codable {
    struct Machine: Codable {
        var cores: Int
        var os: String
        var swift: String
        var build: String
    }
    var machine: Machine
    var mode: String
    /// The folder the caches' folders were made in.
    var directory: String
    var date: String
    var seconds: Double
    var rows: [Row]
}

extension Report.Machine {
    static var current: Self {
        #if DEBUG
        let build = "debug"
        #else
        let build = "release"
        #endif
        return .init(cores: ProcessInfo.processInfo.activeProcessorCount,
                     os: ProcessInfo.processInfo.operatingSystemVersionString, swift: compilerVersion, build: build)
    }

    private static var compilerVersion: String {
        #if compiler(>=6.4)
        return "6.4 or later"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0 or earlier"
        #endif
    }
}

// MARK: - Printing

extension Report {
    /// The table as Markdown (so that it can go into the Performance article as it is), then the notes.
    func printTable() {
        print("ImageCache benchmarks (\(mode)): \(machine.cores) cores, Swift \(machine.swift), \(machine.build) build, "
              + "\(machine.os); caches in \(directory); \(Self.format(seconds)) s")
        print("")
        print("| figure | ours (median, min-max) | floor (median) | ratio | goal | result |")
        print("|---|---|---|---|---|---|")
        for (index, row) in rows.enumerated() {
            guard row.error == nil else {
                print("| \(row.figure) [\(index + 1)] | error | | | | FAIL |")
                continue
            }
            let ours = row.ours.map { "\(Self.format($0.median, row.unit)) (\(Self.format($0.min))-\(Self.format($0.max)))" } ?? ""
            let floor = row.floor.map { Self.format($0.median, row.unit) } ?? ""
            let ratio = row.ratio.map { "\(Self.format($0))x" } ?? ""
            print("| \(row.figure) [\(index + 1)] | \(ours) | \(floor) | \(ratio) | \(row.goal) | \(row.pass ? "pass" : "FAIL") |")
        }
        print("")
        for (index, row) in rows.enumerated() {
            var lines: [String] = []
            if let error = row.error { lines.append("error: \(error)") }
            if !row.floorName.isEmpty { lines.append("floor: \(row.floorName)") }
            lines += row.notes
            guard !lines.isEmpty else { continue }
            print("[\(index + 1)] " + lines.joined(separator: "\n    "))
        }
    }

    func writeJSON(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // NaN is not JSON: a figure that could not be computed is written as the string "nan".
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }

    /// Three significant digits or so, with thousands separators: 1,234 / 56.7 / 8.91.
    static func format(_ value: Double, _ unit: String = "") -> String {
        guard value.isFinite else { return "n/a" }
        let text: String
        if abs(value) >= 100 {
            let digits = String(Int(value.rounded()))
            var grouped = ""
            for (i, c) in digits.reversed().enumerated() {
                if i > 0, i % 3 == 0, c != "-" { grouped.append(",") }
                grouped.append(c)
            }
            text = String(grouped.reversed())
        } else if abs(value) >= 10 {
            text = String(format: "%.1f", value)
        } else {
            text = String(format: "%.2f", value)
        }
        return unit.isEmpty ? text : "\(text) \(unit)"
    }
}
