#pragma once
// zkfarmctl's exit codes (also in `zkfarmctl --help` and docs/zkfarmctl.md).

namespace zkfarm::ctl {

/// What zkfarmctl's exit status means.
enum ExitCode : int {
  kExitOk = 0,            ///< the verb succeeded (wait: the job is done)
  kExitFailed = 1,        ///< refused (ok:false), malformed reply, job failed or cancelled (wait)
  kExitUsage = 2,         ///< unknown verb or bad flags (CLI11's message)
  kExitNoSupervisor = 3,  ///< no zkfarmd answers at the state dir
  kExitTimeout = 4,       ///< wait: the job did not finish within --timeout
};

/// The --help footer listing the exit codes.
inline constexpr const char* kExitCodesHelp =
    "Exit codes:\n"
    "  0  success (wait: the job is done)\n"
    "  1  refused by zkfarmd, malformed reply, or (wait) the job failed or was cancelled\n"
    "  2  usage error: unknown verb or bad flags\n"
    "  3  no zkfarmd is running at the state dir (socket missing or no reply within --timeout-ms)\n"
    "  4  wait: the job did not finish within --timeout";

}  // namespace zkfarm::ctl
