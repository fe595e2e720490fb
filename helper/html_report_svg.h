// Inline SVG charts for the self-contained HTML pages (`html`, `compare --html`): no script or network
// needed to draw them, so a page saved from a cluster opens anywhere. Every text is HTML-escaped here.
#pragma once

#include <string>
#include <vector>

namespace stallscope::cli::svg {

std::string escape(const std::string& text);  // HTML text and attribute values

struct Line {
    std::string label;
    std::vector<double> values;  // one per x step; NaN = gap
    bool highlight = false;      // drawn thicker, in the alarm colour (straggler, worst node)
};

struct Span {  // a reason on the time axis
    std::string label, severity;
    double from = 0, to = 0;  // seconds from the chart start
};

struct Mark {                  // a labelled vertical line on the time axis where a step starts
    double at = 0, until = 0;  // seconds from the chart start: the step's first and last sample
    std::string label;
};

struct Axis {
    double seconds = 1;  // x range: 0 .. seconds (the values are spread evenly over it)
    std::string y_unit;
    double y_max = 0;  // 0: from the data
    std::vector<Mark> marks;
};

// The colour of the i-th line: a 10-colour palette, then golden-angle hues (no two lines of a
// 40-GPU job share one).
std::string line_color(std::size_t i);

// A <figure id=ID> with the title, a legend and the lines. A run of values without more than two gaps is
// one <polyline>; a run of one value (a short step, a lone sample) is a <circle>, as a one-point
// polyline draws nothing.
std::string line_chart(const std::string& id, const std::string& title, const Axis& axis,
                       const std::vector<Line>& lines);
// Rows of coloured cells, 0..100 (GPU utilization); highlighted rows get a red frame and a tag.
std::string heatmap(const std::string& id, const std::string& title, double seconds,
                    const std::vector<Line>& rows, const std::string& tag);
std::string span_chart(const std::string& id, const std::string& title, double seconds,
                       const std::vector<Span>& spans);

// The page frame: styles, the sortable-table script, and `body`.
std::string page(const std::string& title, const std::string& body);

// <table id=ID class=sortable>; cells holding a number get data-v for numeric sorting.
struct Cell {
    std::string text;
    double number = 0;
    bool numeric = false;
};
std::string table(const std::string& id, const std::vector<std::string>& head,
                  const std::vector<std::vector<Cell>>& rows, const std::string& caption = "");
Cell num(double v, int decimals, const std::string& suffix = "");
Cell text(const std::string& s);

}  // namespace stallscope::cli::svg
