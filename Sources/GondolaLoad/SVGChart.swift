import Foundation

/// Draws a run's timeline as an SVG: latency (p50, p99) above, throughput
/// (messages in and out per second) below, against seconds since the start.
public enum SVGChart {
    static let width = 800.0, panelHeight = 220.0, left = 70.0, right = 20.0, top = 40.0, gap = 60.0
    static let legendCharacterWidth = 7.0, legendGap = 14.0

    /// One line of a panel: its name, colour and points (x, y).
    public typealias Series = (name: String, color: String, points: [(Double, Double)])

    /// The chart of `report`'s timeline.
    public static func render(_ report: LoadReport) -> String {
        let samples = report.timeline
        return render(
            title: "\(report.scenario) against \(report.target)", xLabel: "seconds",
            panels: [
                (
                    "latency (ms)",
                    [
                        ("p50", "#1f77b4", samples.map { (Double($0.second), $0.p50) }),
                        ("p99", "#d62728", samples.map { (Double($0.second), $0.p99) }),
                    ]
                ),
                (
                    "messages per second",
                    [
                        ("in", "#2ca02c", samples.map { (Double($0.second), Double($0.messagesIn)) }),
                        ("out", "#ff7f0e", samples.map { (Double($0.second), Double($0.messagesOut)) }),
                    ]
                ),
            ])
    }

    /// Panels stacked above each other, sharing the x axis (from 0 to the largest x).
    public static func render(title: String, xLabel: String, panels: [(title: String, series: [Series])]) -> String {
        let xMax = max(1, panels.flatMap { $0.series.flatMap { $0.points.map(\.0) } }.max() ?? 1)
        let bottom = top + Double(panels.count) * (panelHeight + gap) - gap
        var svg = [
            #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(Int(width))" height="\#(Int(bottom + 40))" font-family="sans-serif" font-size="12">"#,
            #"<rect width="100%" height="100%" fill="white"/>"#,
            #"<text x="\#(left)" y="20" font-size="14">\#(escape(title))</text>"#,
        ]
        for (index, entry) in panels.enumerated() {
            svg += panel(title: entry.title, y: top + Double(index) * (panelHeight + gap), seconds: xMax, series: entry.series)
        }
        svg.append(#"<text x="\#(left + (width - left - right) / 2)" y="\#(bottom + 30)" text-anchor="middle">\#(escape(xLabel))</text>"#)
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    /// One panel: axes, five horizontal grid lines with values, one polyline per series and a legend.
    static func panel(title: String, y: Double, seconds: Double, series: [Series]) -> [String] {
        let plotWidth = width - left - right
        let highest = niceCeiling(series.flatMap { $0.points.map(\.1) }.max() ?? 1)
        var lines = [
            #"<text x="\#(left)" y="\#(y - 8)">\#(escape(title))</text>"#,
            #"<rect x="\#(left)" y="\#(y)" width="\#(plotWidth)" height="\#(panelHeight)" fill="none" stroke="rgb(136,136,136)"/>"#,
        ]
        for step in 0...4 {
            let value = highest * Double(step) / 4
            let lineY = y + panelHeight - panelHeight * Double(step) / 4
            lines.append(#"<line x1="\#(left)" y1="\#(format(lineY))" x2="\#(left + plotWidth)" y2="\#(format(lineY))" stroke="rgb(230,230,230)"/>"#)
            lines.append(#"<text x="\#(left - 6)" y="\#(format(lineY + 4))" text-anchor="end">\#(format(value))</text>"#)
        }
        for tick in 0...4 {
            let second = (seconds * Double(tick) / 4).rounded()
            lines.append(
                #"<text x="\#(format(left + plotWidth * second / seconds))" y="\#(format(y + panelHeight + 16))" text-anchor="middle">\#(format(second))</text>"#
            )
        }
        // The legend ends at the plot's right edge, each name given its width (about 7 px a
        // character at 12 px) and a gap.
        let legendWidths = series.map { Double($0.name.count) * legendCharacterWidth + legendGap }
        var legendX = left + plotWidth - legendWidths.reduce(0, +) + legendGap
        for (entry, legendWidth) in zip(series, legendWidths) {
            let points = entry.points.map { "\(format(left + plotWidth * $0.0 / seconds)),\(format(y + panelHeight - panelHeight * $0.1 / highest))" }
            lines.append(#"<polyline fill="none" stroke="\#(entry.color)" stroke-width="1.5" points="\#(points.joined(separator: " "))"/>"#)
            lines.append(#"<text x="\#(format(legendX))" y="\#(y - 8)" fill="\#(entry.color)">\#(escape(entry.name))</text>"#)
            legendX += legendWidth
        }
        return lines
    }

    /// The smallest of 1, 2 or 5 × 10ⁿ at or above `value` (1 for nothing).
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        let magnitude = pow(10, floor(log10(value)))
        for factor in [1.0, 2, 5, 10] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.2f", value)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
