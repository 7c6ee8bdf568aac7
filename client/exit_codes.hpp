#pragma once
// zkfarmctl's exit codes: one table for every verb (also in `zkfarmctl
// --help`, ctl/exit_codes.hpp, and docs/zkfarmctl.md). It lives beside the
// control client because the client's errors (client/control_client.hpp)
// carry these codes. A waiting verb (wait, ready --wait, stop --wait,
// restart/upgrade --wait, drain --wait) ends with 0 when what it waits for
// happened, 1 when it failed, 3 when zkfarmd is not there or went away
// first, 4 when its --timeout passed first. 5 is kept apart from 3 so that
// a script (or `ready --wait`) never waits for a zkfarmd it may not reach.

namespace zkfarm::client {

/// What zkfarmctl's exit status means.
enum ExitCode : int {
  kExitOk = 0,            ///< the verb succeeded; a waited-for operation completed
  kExitFailed = 1,        ///< refused (ok:false), malformed reply, or what was waited for failed or is not so
  kExitUsage = 2,         ///< unknown verb or bad flags (CLI11's message)
  kExitNoSupervisor = 3,  ///< no zkfarmd answers at the state dir, or it went away before the end
  kExitTimeout = 4,       ///< a --timeout passed before what was waited for happened
  kExitAccess = 5,        ///< this user may not reach zkfarmd: the state dir or control.sock refused it (EACCES, EPERM)
  /// zkfarmd is busy (its submit or build queue is full): nothing is wrong
  /// with the request, retry later. sysexits' EX_TEMPFAIL. zkfarmctl retried
  /// with backoff for --busy-timeout before giving up with it.
  kExitBusy = 75,
};

}  // namespace zkfarm::client
