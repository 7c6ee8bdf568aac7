#pragma once
// A finished job's results written by zkfarmctl itself, with the rights of
// whoever runs it: `result --out DIR`, and `wait` for a job zkfarmd does not
// deliver (it runs as another user and cannot write as the submitter;
// docs/security.md). The texts come from zkfarmd's journal a page at a time
// (the `result` request, docs/protocol.md); the files are written as
// zkfarmd would (files/safe_write.hpp: new file, fsync, rename; never through
// a symlink; the folder created if missing, its last component not a symlink).
#include <cstdint>
#include <string>

#include "ctl/client.hpp"

namespace zkfarm::ctl {

/// Writes OUT/k.proof.json and OUT/k.public.json for every partition k of
/// done job `job` into `out` (absolute). Returns the number of partitions
/// written. Throws Refused (unknown or unfinished job), NoSupervisor, or
/// CtlError (exit 1) naming the file and the fault when a write fails.
uint64_t write_results(Caller& client, uint64_t job, const std::string& out);

}  // namespace zkfarm::ctl
