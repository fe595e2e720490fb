// Timelines written by a test from a scenario's samples (tests/scenarios/*.jsonl): as the helper writes
// them (v1: a header, `sample` lines, and a `verdict` line when the helper finished), with the sample
// times moved (a run that took longer, a run whose last sample was a moment ago) or the RDMA ports
// changed (a node without ports, ports that moved nothing).
#pragma once

#include <fstream>
#include <functional>
#include <string>

#include "libstallscope/model/snapshot_json.h"

namespace stallscope::test {

struct ScenarioRun {
    std::string scenario;     // file name under tests/scenarios/, without .jsonl
    double stretch = 1;       // sample times t0 + (t - t0) * stretch: the run took this much longer
    double end_at = 0;        // when set, the times are shifted so that the last sample is at this time
    bool finished = true;     // a verdict line at the end (the helper stopped cleanly)
    std::string host = "n1";  // the recording's host (and file name)
    std::function<void(Json& sample)> edit;  // any other change, per sample
};

// Writes DIR/timeline.0.HOST.jsonl; returns its path.
inline std::string write_scenario_run(const std::string& dir, const ScenarioRun& run) {
    std::ifstream in(std::string(STALLSCOPE_SOURCE_DIR) + "/tests/scenarios/" + run.scenario + ".jsonl");
    std::vector<Json> samples;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) samples.push_back(Json::parse(line));
    const double t0 = samples.front()["time"].get<double>();
    const double last = t0 + (samples.back()["time"].get<double>() - t0) * run.stretch;
    const double shift = run.end_at > 0 ? run.end_at - last : 0;
    const std::string path = dir + "/timeline.0." + run.host + ".jsonl";
    std::ofstream out(path);
    out << Json{{"type", "header"}, {"schema", "stallscope.timeline/1"},
                {"host", run.host}, {"job_id", "4242"},
                {"step_id", "0"},   {"interval_seconds", 10.0 * run.stretch}}
               .dump()
        << "\n";
    for (Json s : samples) {
        const double t = t0 + (s["time"].get<double>() - t0) * run.stretch + shift;
        s.erase("time");
        s["type"] = "sample";
        s["unix_time"] = t;
        s["host"] = run.host;
        if (run.edit) run.edit(s);
        out << s.dump() << "\n";
    }
    if (run.finished) out << Json{{"type", "verdict"}, {"label", "UNKNOWN"}}.dump() << "\n";
    return path;
}

}  // namespace stallscope::test
