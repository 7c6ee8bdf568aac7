#pragma once
// The signals zkfarmd takes through its loop's signalfd instead of letting
// their default action run: blocked in every thread from the first line of
// main() (so one arriving during start-up waits for the loop), read one at
// a time by Supervisor::handle_signals. Children get an empty mask and
// default dispositions back before exec (children.cpp, witgen/subprocess.cpp).
#include <signal.h>

namespace zkfarm::supervisor {

/// SIGTERM, SIGINT (stop), SIGCHLD (reap), SIGHUP, SIGUSR1 (reopen logs),
/// SIGUSR2 (reserved), and the "stray" ones below, every one of them.
sigset_t loop_signals();

/// Signals whose default action would end zkfarmd although nothing in a
/// farm sends them on purpose: a stray `kill -ALRM`, an expired timer of a
/// library, SIGXCPU/SIGXFSZ from a limit an operator set, SIGPWR, SIGSTKFLT,
/// SIGVTALRM, SIGPROF, SIGPOLL and the real-time signals glibc leaves to
/// programs (SIGRTMIN..SIGRTMAX). zkfarmd logs each and goes on; SIGXFSZ
/// blocked makes the write that passed the limit fail with EFBIG instead.
bool stray_signal(int sig);

}  // namespace zkfarm::supervisor
