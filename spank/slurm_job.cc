// stallscope-slurm-job: `stallscope-slurm-job --json show job <id>` prints job <id>'s record in the form
// `scontrol --json show job <id>` prints on Slurm >= 23.02, reduced to what the plugin reads:
//
//   {"jobs": [{"job_id": 13, "array_job_id": 0, "array_task_id": 4294967294,
//              "admin_comment": "JS1:abc; stallscope/1 SLOW ..."}],
//    "errors": [], "meta": {"plugin": {"name": "stallscope-slurm-job"}, "slurm": {"release": "22.05.8"}}}
//
// Run as root by the SPANK plugin (spank/comment_writer.cc, plugstack `job_reader=`) to read the job's
// AdminComment before merging its segment into it: libslurm's slurm_load_job() hands over typed records,
// so no job field (JobName, Comment, WorkDir: the job user's text) can move a field boundary, on every
// release the project supports (22.05's scontrol has no --json). Only the records whose job_id is <id>
// are printed (an array's other tasks are not); no other job field is printed. Strings are written as
// strict UTF-8 JSON: an AdminComment that is not UTF-8 is an error, never a lossy copy that the plugin
// would write back. Exit status 0 with the record, 1 with {"jobs": [], "errors": [...]}, 2 on a usage error.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
}

namespace {

using Json = nlohmann::json;

// The release of the libslurm headers this reader was built against (the plugin is built with the same).
Json meta() {
    char release[32];
    std::snprintf(release, sizeof release, "%d.%02d.%d", (SLURM_VERSION_NUMBER >> 16) & 0xff,
                  (SLURM_VERSION_NUMBER >> 8) & 0xff, SLURM_VERSION_NUMBER & 0xff);
    return {{"plugin", {{"name", "stallscope-slurm-job"}}}, {"slurm", {{"release", release}}}};
}

int fail(const std::string& error, int error_number) {
    const Json doc = {{"jobs", Json::array()},
                      {"errors", Json::array({{{"error", error}, {"error_number", error_number}}})},
                      {"meta", meta()}};
    std::printf("%s\n", doc.dump(-1, ' ', true).c_str());  // ASCII: the message is ours or Slurm's
    return 1;
}

bool parse_job_id(std::string_view text, std::uint32_t* id) {
    if (text.empty() || text.size() > 10) return false;
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (value == 0 || value > 0xfffffff0u) return false;
    *id = static_cast<std::uint32_t>(value);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    std::uint32_t job_id = 0;
    if (argc != 5 || std::strcmp(argv[1], "--json") != 0 || std::strcmp(argv[2], "show") != 0 ||
        std::strcmp(argv[3], "job") != 0 || !parse_job_id(argv[4], &job_id)) {
        std::fprintf(stderr, "usage: stallscope-slurm-job --json show job <job id>\n");
        return 2;
    }
    slurm_init(nullptr);
    job_info_msg_t* msg = nullptr;
#ifdef SLURM_STEP_ID_INITIALIZER
    // 26.05 asks for one job by step id (a SLUID or a job id): its C11 _Generic that accepts a bare job id
    // is not there for C++. Fields set one by one: the initializer macro is a C compound literal.
    slurm_step_id_t step;
    std::memset(&step, 0, sizeof step);
    step.job_id = job_id;
    step.step_het_comp = NO_VAL;
    step.step_id = NO_VAL;
    const int rc = slurm_load_job(&msg, step, SHOW_ALL);
#else
    const int rc = slurm_load_job(&msg, job_id, SHOW_ALL);
#endif
    if (rc != SLURM_SUCCESS || msg == nullptr) {
        // libslurm leaves its error in errno (slurm_get_errno() is gone from 24.11's headers).
        const int err = errno;
        slurm_fini();
        return fail(std::string("slurm_load_job: ") + slurm_strerror(err), err);
    }
    Json jobs = Json::array();
    for (std::uint32_t i = 0; i < msg->record_count; ++i) {
        const slurm_job_info_t& job = msg->job_array[i];
        if (job.job_id != job_id) continue;
        jobs.push_back({{"job_id", job.job_id},
                        {"array_job_id", job.array_job_id},
                        {"array_task_id", job.array_task_id},
                        {"admin_comment", job.admin_comment ? job.admin_comment : ""}});
    }
    slurm_free_job_info_msg(msg);
    slurm_fini();
    std::string text;
    try {
        text = Json{{"jobs", jobs}, {"errors", Json::array()}, {"meta", meta()}}.dump();
    } catch (const std::exception&) {  // type_error 316: not UTF-8
        return fail("the job's AdminComment is not valid UTF-8; not printed", 0);
    }
    if (jobs.empty()) return fail("no record of job " + std::to_string(job_id), 0);
    std::printf("%s\n", text.c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
}
