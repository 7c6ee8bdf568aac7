#pragma once
// zkfarmctl's exit codes: one table for every verb (also in `zkfarmctl
// --help` and docs/zkfarmctl.md). A waiting verb (wait, ready --wait, stop
// --wait, restart/upgrade --wait, drain --wait) ends with 0 when what it
// waits for happened, 1 when it failed, 3 when zkfarmd is not there or went
// away first, 4 when its --timeout passed first.

namespace zkfarm::ctl {

/// What zkfarmctl's exit status means.
enum ExitCode : int {
  kExitOk = 0,            ///< the verb succeeded; a waited-for operation completed
  kExitFailed = 1,        ///< refused (ok:false), malformed reply, or what was waited for failed or is not so
  kExitUsage = 2,         ///< unknown verb or bad flags (CLI11's message)
  kExitNoSupervisor = 3,  ///< no zkfarmd answers at the state dir, or it went away before the end
  kExitTimeout = 4,       ///< a --timeout passed before what was waited for happened
};

/// The --help footer listing the exit codes.
inline constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0  success; what was waited for happened (wait: job done; ready: ready; stop --wait: stopped cleanly;\n"
    "     restart/upgrade --wait: every worker replaced; drain --wait: nothing in flight)\n"
    "  1  refused by zkfarmd or failed: the job failed or was cancelled, not ready, an upgrade rolled back,\n"
    "     a stop that did not release GPU memory, a result that cannot be written, a malformed reply\n"
    "  2  usage error: unknown verb or bad flags\n"
    "  3  no zkfarmd at the state dir (socket missing, refused, no reply within --timeout-ms),\n"
    "     or it stopped before what was waited for happened (an accepted job stays in the journal)\n"
    "  4  a --timeout (stop: --wait-timeout) passed before what was waited for happened";

}  // namespace zkfarm::ctl
