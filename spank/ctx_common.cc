// Shared by every context: plugstack arguments and the --stallscope option.
#include <string>
#include <string_view>
#include <vector>

#include "spank/option.h"
#include "spank/plugin.h"

namespace stallscope::spank {

namespace {

PluginConfig g_config = default_config();  // copy for the option callback (a plain C function pointer)
OptionSeen g_seen;
std::string g_friendly_value;  // STALLSCOPE copied into SPANK's option variable by client_init

char g_name[] = "stallscope";
char g_arginfo[] = "SECONDS";
char g_usage[] =
    "Record a stall/slowness timeline for this job on every node (sample every SECONDS, default from "
    "plugstack.conf). Also enabled by the STALLSCOPE=SECONDS environment variable.";

// remote=0: srun/sbatch parsing the command line or SLURM_SPANK__SLURM_SPANK_OPTION_stallscope_stallscope;
// a non-zero return makes srun/sbatch stop (after our line, Slurm adds its generic "Invalid
// --stallscope argument" / "Invalid argument ... for environment variable" line). remote=1: slurmstepd,
// where 22.05 calls us twice with the same value (fixed in 24.05; pyxis args.c copes the same way).
int option_callback(int, const char* optarg, int remote) {
    // SPANK processes the environment before the command line: the first local call with the copied
    // value came from STALLSCOPE, so say that in the message.
    bool from_env =
        !remote && !g_seen.seen && !g_friendly_value.empty() && optarg && g_friendly_value == optarg;
    IntervalChoice choice = parse_interval(optarg, g_config, from_env ? "STALLSCOPE" : "--stallscope");
    g_seen.seen = true;
    g_seen.interval = choice.seconds;
    if (choice.seconds) return 0;
    slurm_error("stallscope: %s", choice.error.c_str());
    return remote ? 0 : -1;
}

struct spank_option g_option = {g_name, g_arginfo, g_usage, 2, 0, option_callback};

}  // namespace

PluginConfig load_config(int ac, char** av) {
    std::vector<std::string_view> args;
    for (int i = 0; i < ac; ++i) args.emplace_back(av[i]);
    ConfigParse parsed = parse_plugin_args(args);
    for (const std::string& error : parsed.errors) slurm_error("stallscope: %s", error.c_str());
    return parsed.config;
}

int register_option(spank_t sp, const PluginConfig& config) {
    g_config = config;
    spank_err_t rc = spank_option_register(sp, &g_option);
    if (rc != ESPANK_SUCCESS) slurm_error("stallscope: cannot register --stallscope: %s", spank_strerror(rc));
    return 0;
}

const OptionSeen& option_seen() {
    return g_seen;
}

void note_friendly_env(const char* value) {
    g_friendly_value = value ? value : "";
}

}  // namespace stallscope::spank
