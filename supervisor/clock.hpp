#pragma once
// zkfarmd's two clocks. Every deadline, heartbeat, backoff and duration is on
// the monotonic clock (steady_ms), which never jumps; the wall clock
// (wall_ms) only stamps what people read and what is journaled (submitted,
// finished, retention). The two are never compared.
#include <chrono>
#include <cstdint>

namespace zkfarm::supervisor {

/// Monotonic milliseconds (std::chrono::steady_clock; an arbitrary epoch).
inline int64_t steady_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

/// Unix milliseconds (std::chrono::system_clock): may jump with the system clock.
inline int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace zkfarm::supervisor
