#pragma once
// zkfarmctl's exit codes as ctl/ names them: the table itself is
// client/exit_codes.hpp (the control client's errors carry it); the --help
// footer that lists it is zkfarmctl's own.
#include "client/exit_codes.hpp"

namespace zkfarm::ctl {

using client::ExitCode;
using client::kExitFailed;
using client::kExitNoSupervisor;
using client::kExitAccess;
using client::kExitBusy;
using client::kExitOk;
using client::kExitTimeout;
using client::kExitUsage;

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
    "  4  a --timeout (stop: --wait-timeout) passed before what was waited for happened\n"
    "  5  this user may not reach zkfarmd: the state dir or control.sock refused it (permission denied)\n"
    "  75 zkfarmd is busy (its submit queue is full): nothing is wrong with the request; submit retried it\n"
    "     with backoff for --busy-timeout (default 60 s) first. Retry later (sysexits' EX_TEMPFAIL)";
}  // namespace zkfarm::ctl
