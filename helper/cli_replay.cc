// `stallscope replay TIMELINE... [--rules FILE] [--json]`: deterministic re-profile of recordings.
#include <cstdio>

#include "helper/cli_args.h"
#include "helper/replay_timeline.h"
#include "helper/subcommands.h"
#include "helper/text_output.h"
#include "helper/thresholds_option.h"

namespace stallscope::cli {

int run_replay(int argc, char** argv, int first) {
    const ParsedArgs args = parse_args(argc, argv, first, {"rules"}, {"json"});
    if (args.positional.empty()) throw UsageError("replay needs at least one timeline file");
    std::optional<Thresholds> thresholds;
    if (args.has("rules")) thresholds = thresholds_from_option(args.value("rules"));
    int failures = 0;
    for (const auto& path : args.positional) {
        ReplayResult result;
        std::string error;
        if (!replay_timeline(path, thresholds, /*progress=*/true, result, error)) {
            std::fprintf(stderr, "stallscope: replay: %s\n", error.c_str());
            ++failures;
            continue;
        }
        for (const auto& w : result.warnings) std::fprintf(stderr, "stallscope: warning: %s\n", w.c_str());
        if (args.has("json")) {
            Json out = to_json(result.verdict);
            out["timeline"] = path;
            out["matches_recorded"] =
                result.matches_recorded ? Json(*result.matches_recorded) : Json(nullptr);
            out["replay_warnings"] = result.warnings;
            std::printf("%s\n", out.dump().c_str());
        } else {
            std::printf("%s: %zu samples\n%s", path.c_str(), result.samples,
                        verdict_text(result.verdict).c_str());
            if (result.matches_recorded)
                std::printf("  %s\n", *result.matches_recorded
                                          ? "matches the recorded verdict"
                                          : "differs from the recorded verdict (other thresholds?)");
        }
    }
    // A file that cannot be read at all is an error of the invocation, not of the data.
    return failures ? 1 : 0;
}

}  // namespace stallscope::cli
