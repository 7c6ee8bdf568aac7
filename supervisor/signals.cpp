#include "supervisor/signals.hpp"

#include <initializer_list>

namespace zkfarm::supervisor {

bool stray_signal(int sig) {
  switch (sig) {
    case SIGALRM:
    case SIGVTALRM:
    case SIGPROF:
    case SIGPOLL:
    case SIGXCPU:
    case SIGXFSZ:
    case SIGPWR:
    case SIGSTKFLT:
      return true;
    default:
      return sig >= SIGRTMIN && sig <= SIGRTMAX;
  }
}

sigset_t loop_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&mask, s);
  for (int s = 1; s < NSIG; ++s)
    if (stray_signal(s)) sigaddset(&mask, s);
  return mask;
}

}  // namespace zkfarm::supervisor
