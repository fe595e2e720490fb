// A data source fills its part of a Snapshot. Sources keep state between samples (open fds, files known
// to be unsupported, a dlopen handle), so one instance lives as long as the sampler.
#pragma once

#include <string_view>

#include "libstallscope/model/snapshot.h"

namespace stallscope {

class Source {
  public:
    virtual ~Source() = default;
    // Short stable name used in collector_failures and warnings: "procfs", "infiniband", "nvml", ...
    virtual std::string_view name() const = 0;
    // Adds this source's data and one warning per bad input to `snapshot`. Bad input never throws;
    // an exception escaping here is treated as a crashed collector (UNKNOWN with a reason).
    virtual void sample(Snapshot& snapshot) = 0;
    // Takes back what this source can reuse from a sample its caller is done with (counter maps whose
    // names did not change: the next sample writes values over them instead of allocating every name
    // and node again). Called before sample(); default: nothing kept. Must not throw.
    virtual void recycle(Snapshot& old) { (void)old; }
    // False when the next sample() is known to make no call that can block (the NVIDIA source once it
    // found no driver): with_deadline() then runs it on the caller's thread, without a hand-off.
    virtual bool may_block() const { return true; }
};

}  // namespace stallscope
