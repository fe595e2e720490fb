#include "helper/html_report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "helper/html_sort_script.h"
#include "libstallscope/util/printable.h"

namespace stallscope::cli::svg {
namespace {

// Plot geometry shared by every chart (the browser test crops the plot area by these numbers).
constexpr double kWidth = 960, kHeight = 240, kLeft = 56, kRight = 12, kTop = 12, kBottom = 28;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
constexpr const char* kPalette[] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                                    "#17becf", "#bcbd22", "#7f7f7f", "#ff7f0e", "#393b79"};
constexpr const char* kAlarm = "#d62728";

std::string fmt(const char* format, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

std::string clock_label(double seconds) {
    char buf[32];
    const long s = std::lround(seconds);
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "+%ld:%02ld h", s / 3600, (s / 60) % 60);
    else
        std::snprintf(buf, sizeof buf, "+%ld:%02ld", s / 60, s % 60);
    return buf;
}

// A "nice" step (1, 2, 5 x 10^n) giving about `ticks` intervals over `range`.
double nice_step(double range, int ticks) {
    const double raw = range / ticks;
    const double p = std::pow(10, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * p) return m * p;
    return 10 * p;
}

std::string time_axis(double seconds) {
    std::string out;
    const double step = nice_step(seconds, 8);
    for (double t = 0; t <= seconds + 1e-9; t += step) {
        const double x = kLeft + kPlotW * t / seconds;
        out += "<line class=grid x1='" + fmt("%.1f", x) + "' x2='" + fmt("%.1f", x) + "' y1='" +
               fmt("%.0f", kTop) + "' y2='" + fmt("%.0f", kTop + kPlotH) + "'/>";
        // The last label would cross the chart's right edge if centred on its tick.
        out += "<text class=tick x='" + fmt("%.1f", x) + "' y='" + fmt("%.0f", kHeight - 8) +
               "' text-anchor=" + (x > kWidth - kRight - 20 ? "end" : "middle") + ">" + clock_label(t) +
               "</text>";
    }
    return out;
}

std::string step_marks(double seconds, const std::vector<Mark>& marks) {
    std::string out;
    for (const auto& m : marks) {
        const double x = kLeft + kPlotW * std::clamp(m.at / seconds, 0.0, 1.0);
        const double to = kLeft + kPlotW * std::clamp(m.until / seconds, 0.0, 1.0);
        // A light line (lighter than the browser test's ink threshold) and its label above the plot: a
        // chart's ink is its data. data-to: where the step's last sample is (the browser test looks for
        // ink between the two).
        out += "<line class=stepmark data-to='" + fmt("%.1f", to) + "' x1='" + fmt("%.1f", x) + "' x2='" +
               fmt("%.1f", x) + "' y1='" + fmt("%.0f", kTop) + "' y2='" + fmt("%.0f", kTop + kPlotH) +
               "'/><text class=tick x='" + fmt("%.1f", x + 2) + "' y='" + fmt("%.0f", kTop - 2) + "'>" +
               escape(m.label) + "</text>";
    }
    return out;
}

std::string svg_open(const std::string& id) {
    return "<svg id='" + escape(id) + "-svg' viewBox='0 0 " + fmt("%.0f", kWidth) + " " +
           fmt("%.0f", kHeight) + "' width='" + fmt("%.0f", kWidth) + "' height='" + fmt("%.0f", kHeight) +
           "' xmlns='http://www.w3.org/2000/svg'><rect class=plotbg x='" + fmt("%.0f", kLeft) + "' y='" +
           fmt("%.0f", kTop) + "' width='" + fmt("%.0f", kPlotW) + "' height='" + fmt("%.0f", kPlotH) + "'/>";
}

}  // namespace

std::string line_color(std::size_t i) {
    if (i < std::size(kPalette)) return kPalette[i];
    const double hue = std::fmod(static_cast<double>(i) * 137.508, 360.0);
    return "hsl(" + fmt("%.0f", hue) + ",65%," + (i % 2 ? "38%" : "52%") + ")";
}

std::string escape(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        // A bidi override or isolate reorders what the reader sees (a host name shown reversed); an
        // entity for it would still act, so it goes the way of the C0 controls.
        if (c == 0xe2 && i + 3 <= text.size() && is_bidi_control(text.data() + i, 3)) {
            out += "\xEF\xBF\xBD";
            i += 2;
            continue;
        }
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                if (c < 0x20 && c != '\n' && c != '\t')
                    out += "\xEF\xBF\xBD";  // U+FFFD: no raw controls
                else
                    out += static_cast<char>(c);
        }
    }
    return out;
}

std::string line_chart(const std::string& id, const std::string& title, const Axis& axis,
                       const std::vector<Line>& lines) {
    double y_max = axis.y_max;
    if (y_max <= 0) {
        for (const auto& l : lines)
            for (double v : l.values)
                if (std::isfinite(v)) y_max = std::max(y_max, v);
        y_max = y_max > 0 ? y_max * 1.1 : 1;
    }
    std::string out = "<figure class=chart id='" + escape(id) + "'><figcaption>" + escape(title) + " (" +
                      escape(axis.y_unit) + ")</figcaption>" + svg_open(id);
    const double ystep = nice_step(y_max, 4);
    for (double y = 0; y <= y_max + 1e-9; y += ystep) {
        const double py = kTop + kPlotH * (1 - y / y_max);
        out += "<line class=grid x1='" + fmt("%.0f", kLeft) + "' x2='" + fmt("%.0f", kLeft + kPlotW) +
               "' y1='" + fmt("%.1f", py) + "' y2='" + fmt("%.1f", py) + "'/><text class=tick x='" +
               fmt("%.0f", kLeft - 4) + "' y='" + fmt("%.1f", py + 4) + "' text-anchor=end>" + fmt("%g", y) +
               "</text>";
    }
    out += time_axis(axis.seconds) + step_marks(axis.seconds, axis.marks);
    std::string legend = "<div class=legend>";
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto& l = lines[i];
        const std::string color = l.highlight ? kAlarm : line_color(i);
        const std::size_t n = l.values.size();
        std::string points, first_x, first_y;
        std::size_t in_run = 0;
        auto flush = [&] {
            if (in_run == 1)
                out += "<circle cx='" + first_x + "' cy='" + first_y + "' r='" +
                       (l.highlight ? "3.5" : "2.5") + "' fill='" + color + "'><title>" + escape(l.label) +
                       "</title></circle>";
            else if (in_run > 1)
                out += "<polyline fill=none stroke='" + color + "' stroke-width='" +
                       (l.highlight ? "2.5" : "1.4") + "' points='" + points + "'><title>" + escape(l.label) +
                       "</title></polyline>";
            points.clear();
            in_run = 0;
        };
        std::size_t missing = 0;  // a bucket or two without a sample is aliasing, more is a gap in the data
        for (std::size_t k = 0; k < n; ++k) {
            const double v = l.values[k];
            if (!std::isfinite(v)) {
                if (++missing > 2) flush();
                continue;
            }
            missing = 0;
            const double x =
                kLeft + kPlotW * (n > 1 ? static_cast<double>(k) / static_cast<double>(n - 1) : 0.5);
            const double y = kTop + kPlotH * (1 - std::clamp(v / y_max, 0.0, 1.0));
            if (in_run++ == 0) first_x = fmt("%.1f", x), first_y = fmt("%.1f", y);
            points += fmt("%.1f", x) + "," + fmt("%.1f", y) + " ";
        }
        flush();
        legend += "<span><i style='background:" + color + "'></i>" + escape(l.label) + "</span>";
    }
    return out + "</svg>" + legend + "</div></figure>\n";
}

std::string heatmap(const std::string& id, const std::string& title, double seconds,
                    const std::vector<Line>& rows, const std::string& tag) {
    const double row_h = std::min(28.0, kPlotH / std::max<std::size_t>(rows.size(), 1));
    std::string out = "<figure class=chart id='" + escape(id) + "'><figcaption>" + escape(title) +
                      "</figcaption>" + svg_open(id);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& row = rows[r];
        const double y = kTop + row_h * static_cast<double>(r);
        const std::size_t n = row.values.size();
        const double cell_w = kPlotW / std::max<std::size_t>(n, 1);
        for (std::size_t k = 0; k < n; ++k) {
            const double v = row.values[k];
            // White (idle) to deep blue (busy); grey where nothing was measured.
            const std::string fill =
                std::isfinite(v) ? "hsl(215,80%," + fmt("%.0f", 96 - 0.6 * std::clamp(v, 0.0, 100.0)) + "%)"
                                 : "#ccc";
            out += "<rect x='" + fmt("%.2f", kLeft + cell_w * static_cast<double>(k)) + "' y='" +
                   fmt("%.1f", y) + "' width='" + fmt("%.2f", cell_w + 0.3) + "' height='" +
                   fmt("%.1f", row_h - 1) + "' fill='" + fill + "'/>";
        }
        // Host names are longer than the axis margin: the label sits inside the row, outlined in white.
        out += "<text class='rowlabel" + std::string(row.highlight ? " alarm" : "") + "' x='" +
               fmt("%.0f", kLeft + 4) + "' y='" + fmt("%.1f", y + row_h / 2 + 4) + "'>" + escape(row.label) +
               "</text>";
        if (row.highlight)
            out += "<rect class=marked x='" + fmt("%.0f", kLeft) + "' y='" + fmt("%.1f", y) + "' width='" +
                   fmt("%.0f", kPlotW) + "' height='" + fmt("%.1f", row_h - 1) +
                   "'/><text class='tick alarm' x='" + fmt("%.0f", kLeft + kPlotW - 4) + "' y='" +
                   fmt("%.1f", y + row_h / 2 + 4) + "' text-anchor=end>" + escape(tag) + "</text>";
    }
    out += time_axis(seconds);
    return out +
           "</svg><div class=legend>GPU utilization: white 0 % &rarr; blue 100 %, grey: no "
           "data</div></figure>\n";
}

std::string span_chart(const std::string& id, const std::string& title, double seconds,
                       const std::vector<Span>& spans) {
    std::string out = "<figure class=chart id='" + escape(id) + "'><figcaption>" + escape(title) +
                      "</figcaption>" + svg_open(id);
    const double row_h = std::min(24.0, kPlotH / std::max<std::size_t>(spans.size(), 1));
    for (std::size_t i = 0; i < spans.size(); ++i) {
        const auto& s = spans[i];
        const double x0 = kLeft + kPlotW * std::clamp(s.from / seconds, 0.0, 1.0);
        const double x1 = std::max(x0 + 3, kLeft + kPlotW * std::clamp(s.to / seconds, 0.0, 1.0));
        const double y = kTop + row_h * static_cast<double>(i);
        out += "<rect class='span " + escape(s.severity) + "' x='" + fmt("%.1f", x0) + "' y='" +
               fmt("%.1f", y + 2) + "' width='" + fmt("%.1f", x1 - x0) + "' height='" +
               fmt("%.1f", row_h - 4) + "'><title>" + escape(s.label) +
               "</title></rect><text class=spanlabel x='" + fmt("%.1f", kLeft + 4) + "' y='" +
               fmt("%.1f", y + row_h / 2 + 4) + "'>" + escape(s.label) + "</text>";
    }
    if (spans.empty())
        out += "<text class=tick x='" + fmt("%.0f", kLeft + 8) + "' y='40'>no reason fired</text>";
    out += time_axis(seconds);
    return out + "</svg></figure>\n";
}

Cell num(double v, int decimals, const std::string& suffix) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return Cell{buf + suffix, v, true};
}

Cell text(const std::string& s) {
    return Cell{s, 0, false};
}

std::string table(const std::string& id, const std::vector<std::string>& head,
                  const std::vector<std::vector<Cell>>& rows, const std::string& caption) {
    std::string out = "<table class=sortable id='" + escape(id) + "'>";
    if (!caption.empty()) out += "<caption>" + escape(caption) + "</caption>";
    out += "<thead><tr>";
    for (const auto& h : head) out += "<th>" + escape(h) + "</th>";
    out += "</tr></thead><tbody>";
    for (const auto& row : rows) {
        out += "<tr>";
        for (const auto& c : row)
            out += c.numeric
                       ? "<td class=n data-v='" + fmt("%.6g", c.number) + "'>" + escape(c.text) + "</td>"
                       : "<td>" + escape(c.text) + "</td>";
        out += "</tr>";
    }
    return out + "</tbody></table>\n";
}

std::string page(const std::string& title, const std::string& body) {
    return R"(<!DOCTYPE html>
<html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width'>
<meta http-equiv=Content-Security-Policy content="default-src 'none'; style-src 'unsafe-inline'; script-src ')" +
           std::string(kSortScriptCspHash) + R"('; img-src data:; base-uri 'none'; form-action 'none'">
<title>)" + escape(title) +
           R"(</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;background:#fff;max-width:1000px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px;border-bottom:1px solid #ddd}
.badge{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:600}
.FAST{background:#2ca02c}.SLOW{background:#ff7f0e}.FAIL_RISK{background:#d62728}.UNKNOWN{background:#7f7f7f}
figure{margin:8px 0}figcaption{font-weight:600;margin-bottom:2px}
.plotbg{fill:#fff;stroke:#bbb}.grid{stroke:#eee}.tick{font-size:11px;fill:#555}.alarm{fill:#d62728;font-weight:700}
.marked{fill:none;stroke:#d62728;stroke-width:2.5}.stepmark{stroke:#d4d4d4;stroke-dasharray:4 3}.span.critical{fill:#d62728}.span.warning{fill:#ff7f0e}
.span.info{fill:#9ecae1}.spanlabel,.rowlabel{font-size:11px;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:3px}
.legend{font-size:12px;color:#444}.legend span{margin-right:12px;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
table{border-collapse:collapse;font-size:13px;margin:4px 0}th,td{padding:2px 8px;border-bottom:1px solid #eee}
caption{text-align:left;font-weight:600;padding:6px 0 2px}th{cursor:pointer;text-align:left;background:#f6f6f6;user-select:none}td.n{text-align:right}
ul.reasons li{margin-bottom:4px}.ev{color:#666;font-size:12px}.up{color:#d62728}.down{color:#2ca02c}
</style></head><body>
)" + body + R"(
<script>)" +
           std::string(kSortScript) + R"(</script>
</body></html>
)";
}

}  // namespace stallscope::cli::svg
