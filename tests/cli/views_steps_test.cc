// The HTML view of a job with several steps (audit 2026-11-27 findings 1 and 15): buckets on the job's
// real time axis, a host's steps as segments of one line with the gap between them left empty, a marker
// where a segment has one point, a step column in the tables, one legend entry per line. The same pages
// are opened in headless chromium by tests/integration/browser_test.py (ink in every plot).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "helper/html_report_svg.h"
#include "tests/support/job_fixtures.h"
#include "tests/support/run_process.h"

using stallscope::test::kJob4343;
using stallscope::test::make_temp_dir;
using stallscope::test::run_process;
using stallscope::test::slurp;
namespace svg = stallscope::cli::svg;

namespace {

// The text between <figure ... id='ID'> and its </figure>.
std::string figure(const std::string& page, const std::string& id) {
    const auto from = page.find("<figure class=chart id='" + id + "'>");
    if (from == std::string::npos) return "";
    return page.substr(from, page.find("</figure>", from) - from);
}

std::vector<std::string> between_all(const std::string& text, const std::string& open,
                                     const std::string& close) {
    std::vector<std::string> out;
    for (auto at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
        const auto end = text.find(close, at + open.size());
        out.push_back(text.substr(at + open.size(), end - at - open.size()));
    }
    return out;
}

std::size_t points_of(const std::string& points) {
    std::size_t n = 0;
    for (char c : points) n += c == ',';
    return n;
}

// One node (node-01) that ran step 0, then, ten minutes later, step 1.
std::string two_steps_of_one_node() {
    const std::string dir = make_temp_dir("views-steps");
    for (const char* step : {"0", "1"})
        std::filesystem::copy_file(kJob4343 + "/timeline." + step + ".node-01.jsonl",
                                   dir + "/timeline." + step + ".node-01.jsonl");
    return dir;
}

}  // namespace

TEST_CASE("html: two steps of one node with a gap: every line drawn, each step a segment, one legend entry") {
    const std::string dir = two_steps_of_one_node();
    const auto r = run_process({STALLSCOPE_EXE, "html", dir, "-o", dir + "/page.html"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string page = slurp(dir + "/page.html");
    for (const char* id : {"gpu-util", "gpu-power", "fabric-rates"}) {
        const std::string chart = figure(page, id);
        REQUIRE_MESSAGE(!chart.empty(), id);
        const auto lines = between_all(chart, "points='", "'");
        CHECK_MESSAGE(!lines.empty(), id);
        for (const auto& points : lines) CHECK_MESSAGE(points_of(points) > 1, id << ": " << points);
        // A legend entry per line: a node's GPU is one line through both steps.
        const auto legend = between_all(chart, "></i>", "</span>");
        CHECK(std::set<std::string>(legend.begin(), legend.end()).size() == legend.size());
        // The step markers on the axis.
        CHECK(chart.find(">step 0</text>") != std::string::npos);
        CHECK(chart.find(">step 1</text>") != std::string::npos);
    }
    // GPU 0 is one line in two segments: the ten minutes between the steps are a gap, not a ramp.
    const auto gpu0 = between_all(figure(page, "gpu-util"), "<title>GPU 0<", "/title>");
    CHECK(gpu0.size() == 2);
    CHECK(page.find("1 node(s), 2 step(s)") != std::string::npos);
    // Tables: a step column tells node-01's GPU 0 in step 0 from the same GPU in step 1.
    const std::string gpus = page.substr(page.find("<table class=sortable id='gpus-table'>"));
    CHECK(gpus.find("<th>host</th><th>step</th><th>gpu</th>") != std::string::npos);
    CHECK(gpus.find("<caption>") != std::string::npos);
}

TEST_CASE("html: job-4343 (8 nodes, 2 steps) draws every line, counts nodes as nodes, a row per host") {
    const std::string out = make_temp_dir("views-4343") + "/page.html";
    const auto r = run_process({STALLSCOPE_EXE, "html", kJob4343, "-o", out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.find("8 node(s)") != std::string::npos);  // not 11 (node x step recordings)
    const std::string page = slurp(out);
    CHECK(page.find("8 node(s), 2 step(s)") != std::string::npos);
    std::size_t drawn = 0;
    for (const auto& points : between_all(page, "points='", "'")) {
        CHECK_MESSAGE(points_of(points) > 1, points);
        ++drawn;
    }
    CHECK(drawn > 0);
    for (const char* id : {"gpu-util", "gpu-power", "fabric-rates"}) {
        const auto legend = between_all(figure(page, id), "></i>", "</span>");
        CHECK_MESSAGE(!legend.empty(), id);
        CHECK_MESSAGE(std::set<std::string>(legend.begin(), legend.end()).size() == legend.size(), id);
    }
    // The heatmap: one row per host (node-01..08), not one per recording.
    CHECK(between_all(figure(page, "node-heatmap"), "<text class='rowlabel", "</text>").size() == 8);
}

TEST_CASE("line_chart: a run of one value is a marker, a longer run a polyline, a long gap splits a line") {
    const double gap = NAN;
    const std::string chart = svg::line_chart(
        "c", "t", {100, "%", 100, {}}, {{"lone", {gap, gap, gap, 50, gap, gap, gap, 10, 20, 30}, false}});
    CHECK(between_all(chart, "<circle", "</circle>").size() == 1);
    const auto lines = between_all(chart, "points='", "'");
    REQUIRE(lines.size() == 1);
    CHECK(points_of(lines[0]) == 3);
    // Colours: no two of 40 lines share one.
    std::set<std::string> colours;
    for (std::size_t i = 0; i < 40; ++i) colours.insert(svg::line_color(i));
    CHECK(colours.size() == 40);
}
