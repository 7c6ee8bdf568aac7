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

#include <nlohmann/json.hpp>

#include "ctl/client.hpp"

namespace zkfarm::ctl {

/// Writes OUT/k.proof.json and OUT/k.public.json for every partition k of
/// done job `job` into `out` (absolute). Returns the number of partitions
/// written. A page refused as transient (Refused::retry_after_ms > 0: the
/// shared queue restarting, zkfarm-api's 503) is asked for again after the
/// hint, for up to `retry_for_ms` in all (one line on stderr says so).
/// Throws Refused (unknown or unfinished job, or still transient after
/// `retry_for_ms`), NoSupervisor, or CtlError (exit 1) naming the file and
/// the fault when a write fails.
/// With `listing`, each partition written is appended to it as
/// {"partition": K, "proof": "OUT/K.proof.json", "public": "OUT/K.public.json",
/// "timing": {…}} (the stage times zkfarmd kept: docs/protocol.md, "result";
/// null where a reply carries none, an older zkfarmd's).
uint64_t write_results(Caller& client, uint64_t job, const std::string& out, int64_t retry_for_ms = 60000,
                       nlohmann::json* listing = nullptr);

}  // namespace zkfarm::ctl
