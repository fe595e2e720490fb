// The exported SPANK surface and a dispatcher on spank_context(), as pyxis does (pyxis_dispatch.c).
// spank.h declares the hooks outside its extern "C" block and SPANK_PLUGIN() exports nothing from
// C++ (research/spank-design.md §1.1), so the symbols are defined by hand; the version script
// (stallscope.lds) keeps everything else local. Each hook is wrapped so no exception crosses the C ABI.
#include <exception>

#include "spank/plugin.h"

extern "C" {
extern const char plugin_name[] = "stallscope";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av);
int slurm_spank_init_post_opt(spank_t sp, int ac, char** av);
int slurm_spank_user_init(spank_t sp, int ac, char** av);
int slurm_spank_task_exit(spank_t sp, int ac, char** av);
int slurm_spank_exit(spank_t sp, int ac, char** av);
int slurm_spank_job_epilog(spank_t sp, int ac, char** av);
}

namespace {

template <typename F>
int guarded(const char* hook, F&& body) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        slurm_error("stallscope: %s: internal error: %s; continuing without stallscope", hook, e.what());
    } catch (...) {
        slurm_error("stallscope: %s: unknown internal error; continuing without stallscope", hook);
    }
    return 0;
}

}  // namespace

namespace ss = stallscope::spank;

int slurm_spank_init(spank_t sp, int ac, char** av) {
    return guarded("init", [&] {
        switch (spank_context()) {
            case S_CTX_LOCAL:
            case S_CTX_ALLOCATOR:
                return ss::client_init(sp, ac, av);
            case S_CTX_REMOTE:
                return ss::stepd_init(sp, ac, av);
            default:
                return 0;
        }
    });
}

int slurm_spank_init_post_opt(spank_t sp, int, char**) {
    return guarded("init_post_opt", [&] {
        switch (spank_context()) {
            case S_CTX_LOCAL:
            case S_CTX_ALLOCATOR:
                return ss::client_init_post_opt(sp);
            case S_CTX_REMOTE:
                return ss::stepd_init_post_opt(sp);
            default:
                return 0;
        }
    });
}

int slurm_spank_user_init(spank_t sp, int, char**) {
    return guarded("user_init", [&] { return spank_remote(sp) ? ss::stepd_user_init(sp) : 0; });
}

int slurm_spank_task_exit(spank_t sp, int, char**) {
    return guarded("task_exit", [&] { return spank_remote(sp) ? ss::stepd_task_exit(sp) : 0; });
}

int slurm_spank_exit(spank_t sp, int, char**) {
    return guarded("exit", [&] { return spank_context() == S_CTX_REMOTE ? ss::stepd_exit(sp) : 0; });
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
    return guarded("job_epilog", [&] { return ss::epilog_job_epilog(sp, ac, av); });
}
