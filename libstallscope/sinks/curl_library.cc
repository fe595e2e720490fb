#include "libstallscope/sinks/curl_library.h"

#include <dlfcn.h>

#include <mutex>

namespace stallscope {

namespace {

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn& out, std::string& missing) {
    out = reinterpret_cast<Fn>(::dlsym(handle, symbol));
    if (out == nullptr && missing.empty()) missing = symbol;
    return out != nullptr;
}

}  // namespace

const CurlLibrary* load_curl_library(const char* soname, std::string& error) {
    // RTLD_LOCAL: libcurl's symbols (and its TLS library's) satisfy no one else's lookups; RTLD_NOW: a
    // broken install fails here, where the sink is created, not at the first alert.
    void* handle = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = ::dlerror();
        error = std::string("stallscope: the Alertmanager sink needs libcurl (") + soname +
                ", Debian package libcurl4): " + (why ? why : "dlopen failed");
        return nullptr;
    }
    auto* lib = new CurlLibrary{};
    std::string missing;
    resolve(handle, "curl_global_init", lib->global_init, missing);
    resolve(handle, "curl_easy_init", lib->easy_init, missing);
    resolve(handle, "curl_easy_cleanup", lib->easy_cleanup, missing);
    resolve(handle, "curl_easy_reset", lib->easy_reset, missing);
    resolve(handle, "curl_easy_setopt", lib->easy_setopt, missing);
    resolve(handle, "curl_easy_getinfo", lib->easy_getinfo, missing);
    resolve(handle, "curl_easy_strerror", lib->easy_strerror, missing);
    resolve(handle, "curl_slist_append", lib->slist_append, missing);
    resolve(handle, "curl_slist_free_all", lib->slist_free_all, missing);
    resolve(handle, "curl_multi_init", lib->multi_init, missing);
    resolve(handle, "curl_multi_cleanup", lib->multi_cleanup, missing);
    resolve(handle, "curl_multi_add_handle", lib->multi_add_handle, missing);
    resolve(handle, "curl_multi_remove_handle", lib->multi_remove_handle, missing);
    resolve(handle, "curl_multi_perform", lib->multi_perform, missing);
    resolve(handle, "curl_multi_poll", lib->multi_poll, missing);
    resolve(handle, "curl_multi_info_read", lib->multi_info_read, missing);
    if (!missing.empty()) {
        error = std::string("stallscope: ") + soname + " is not a usable libcurl (no " + missing +
                "; the Alertmanager sink needs libcurl >= 7.66)";
        delete lib;
        ::dlclose(handle);
        return nullptr;
    }
    // curl_global_init is not thread-safe on older libcurl: callers reach it once, before any worker.
    if (lib->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        error = std::string("stallscope: ") + soname + ": curl_global_init failed";
        delete lib;
        ::dlclose(handle);
        return nullptr;
    }
    return lib;  // kept for the process's life, like the library: sinks come and go, curl stays loaded
}

const CurlLibrary* curl_library(std::string& error) {
    static std::once_flag once;
    static const CurlLibrary* library = nullptr;
    static std::string load_error;
    std::call_once(once, [] { library = load_curl_library(kCurlSoname, load_error); });
    if (library == nullptr) error = load_error;
    return library;
}

}  // namespace stallscope
