// libcurl, loaded with dlopen the first time an Alertmanager sink is created, not linked.
//
// Linking libcurl made every start of the `stallscope` binary map and relocate libcurl's ~28 libraries
// (TLS, Kerberos, LDAP, SSH, ...): ~5-8 ms of CPU and ~430 page faults before main(), for every helper,
// epilog and CLI run, although only --alert-webhook-url posts anything. The function pointers are typed
// from <curl/curl.h>'s own prototypes, so a signature mismatch is a compile error, not a crash.
#pragma once

#include <curl/curl.h>

#include <string>

namespace stallscope {

// Debian package libcurl4 (the OpenSSL flavour, what libcurl4-openssl-dev builds against).
inline constexpr const char* kCurlSoname = "libcurl.so.4";

struct CurlLibrary {
    decltype(&::curl_global_init) global_init;
    decltype(&::curl_easy_init) easy_init;
    decltype(&::curl_easy_cleanup) easy_cleanup;
    decltype(&::curl_easy_reset) easy_reset;
    decltype(&::curl_easy_setopt) easy_setopt;
    decltype(&::curl_easy_getinfo) easy_getinfo;
    decltype(&::curl_easy_strerror) easy_strerror;
    decltype(&::curl_slist_append) slist_append;
    decltype(&::curl_slist_free_all) slist_free_all;
    decltype(&::curl_multi_init) multi_init;
    decltype(&::curl_multi_cleanup) multi_cleanup;
    decltype(&::curl_multi_add_handle) multi_add_handle;
    decltype(&::curl_multi_remove_handle) multi_remove_handle;
    decltype(&::curl_multi_perform) multi_perform;
    decltype(&::curl_multi_poll) multi_poll;  // libcurl >= 7.66
    decltype(&::curl_multi_info_read) multi_info_read;
};

// The process's libcurl (kCurlSoname), loaded and curl_global_init'ed once, thread-safe; never unloaded.
// nullptr with `error` saying what is missing when it cannot be loaded or lacks a function.
const CurlLibrary* curl_library(std::string& error);

// The same for another shared object, loaded anew each call (tests: a missing or wrong library).
const CurlLibrary* load_curl_library(const char* soname, std::string& error);

}  // namespace stallscope
