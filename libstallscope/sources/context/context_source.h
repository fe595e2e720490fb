// The context source with its inputs exposed, so tests can give it an environment, a namespace file and
// a hostname instead of the process's own (the factory in factories.h uses context_options_for(roots)).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "libstallscope/sources/context/context_parsers.h"
#include "libstallscope/sources/source.h"
#include "libstallscope/util/roots.h"

namespace stallscope {

inline constexpr const char* kKubernetesNamespaceFile =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

struct ContextOptions {
    Environment environment;                // this process's context variables (read once: env is fixed)
    std::string kubernetes_namespace_file;  // the service-account namespace file; "" = not Kubernetes
    std::string hostname;                   // the pod name when POD_NAME and HOSTNAME are not set
    // Without SLURM_JOB_ID in our own environment (a node-level run, e.g. `stallscope --json` from a
    // login shell or a systemd unit), the job running on this node is found by scanning
    // <procfs>/<pid>/environ of our own uid, at most this many processes, once per this many samples.
    int proc_scan_every = 60;
    // ... and no sooner than this many seconds (monotonic) after the last scan: at the periodic CLI's
    // 10 ms, 60 samples would mean listing /proc and reading up to 256 environs every 0.6 s.
    double proc_scan_min_seconds = 30.0;
    std::size_t proc_scan_max_processes = 256;
};

// The process's own environment and hostname. The namespace file is the real path, or in fixture mode
// <parent of roots.procfs>/var/run/secrets/kubernetes.io/serviceaccount/namespace, so a fixture node
// directory (fixtures/nodes/<name>/{proc,sys,var}) can be a pod.
ContextOptions context_options_for(const Roots& roots);

std::unique_ptr<Source> make_context_source(const Roots& roots, ContextOptions options);

}  // namespace stallscope
