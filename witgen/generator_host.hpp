#pragma once
#include <sys/prctl.h>
// The one command line of every witness generator zkfarm builds (a circom
// `--c` circuit with native_main.cpp, a circom `--wasm` circuit through
// wasm2c with wasm_host.cpp). Header-only: compiled into each generator.
//
//   GENERATOR --info [--inputs] one JSON line on stdout: kind, prime (decimal),
//                               n8, witness_size, input_count; with --inputs
//                               also inputs: the circuit's input signals,
//                               [{"hash": 16 hex digits of fnv1a(name),
//                               "size": values}, ...] (left out when the host
//                               cannot list them). Asked for at `circuit add`
//                               only: listing loads a native circuit's .dat
//                               and searches a wasm's memory, which the
//                               --info of each zkfarm-prove witness need not.
//   GENERATOR < INPUT.json 3> WITNESS.wtns
//                               the witness, as snarkjs writes it, on fd 3;
//                               the circuit's own log lines on stdout
//   GENERATOR --hashed-keys < INPUT.json 3> WITNESS.wtns
//                               the same, the input's keys "#HASH" (decimal
//                               FNV-1a of a name) instead of names
//
// Exit codes: 0 written; 2 the input is wrong (the message on stderr names
// the signal and the fault); 3 the circuit failed (circom's own message on
// stdout/stderr: "Assert Failed …", "Failed assert in template … line N");
// 4 usage or an internal fault. A crash or a signal is the runner's to
// report (witgen/generator_run.hpp).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "witgen/input_json.hpp"
#include "witgen/wtns_writer.hpp"

namespace zkfarm::witgen {

/// What a generator host must give: the circuit behind one interface.
struct CircuitBackend {
  virtual ~CircuitBackend() = default;
  virtual const char* kind() const = 0;             ///< "native" or "wasm"
  virtual std::vector<uint8_t> prime() = 0;         ///< n8 bytes little-endian
  virtual uint32_t witness_size() = 0;
  virtual uint32_t input_count() = 0;               ///< values of the main component's inputs
  /// The number of values of the input signal with this name hash; nullopt when none.
  virtual std::optional<uint32_t> signal_size(uint64_t hash) = 0;
  /// Every input signal of the main component (what zkfarmd checks inputs
  /// against at submit); nullopt when the circuit does not let them be listed.
  virtual std::optional<std::vector<SignalShape>> input_signals() = 0;
  /// Sets value `index` of a signal; the circuit runs once the last input is set.
  virtual void set(uint64_t hash, uint32_t index, const std::vector<uint8_t>& le) = 0;
  /// Runs a circuit that has no inputs at all.
  virtual void run_without_inputs() = 0;
  /// Witness value `i`, plain form, into `le` (n8 bytes).
  virtual void witness(uint32_t i, uint8_t* le) = 0;
};

/// At most this much input is read (the supervisor bounds inputs too).
inline constexpr size_t kMaxInputBytes = size_t(256) << 20;

[[noreturn]] inline void fail(int code, const std::string& message) {
  std::fflush(stdout);  // the circuit's log lines first, as they came
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  _exit(code);
}

inline int generator_main(int argc, char** argv, CircuitBackend& c) {
  // Not dumpable: no core, and /proc/PID/mem and ptrace stay out of reach of
  // any other process of its uid (the kernel's ptrace access check).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const bool info = argc >= 2 && std::strcmp(argv[1], "--info") == 0;
  const bool with_inputs = argc == 3 && std::strcmp(argv[2], "--inputs") == 0;
  if (info && (argc == 2 || with_inputs)) {
    std::string listed;
    if (with_inputs)
      if (const auto inputs = c.input_signals()) listed = ",\"inputs\":" + signal_shapes_json(*inputs);
    std::printf("{\"kind\":\"%s\",\"prime\":\"%s\",\"n8\":%zu,\"witness_size\":%u,\"input_count\":%u%s}\n",
                c.kind(), to_decimal(c.prime()).c_str(), c.prime().size(), c.witness_size(), c.input_count(),
                listed.c_str());
    return 0;
  }
  // --hashed-keys: each key is "#" and the decimal hash of a name (the graph
  // check of graph_build.cpp knows the circuit's inputs by hash only).
  const bool hashed_keys = argc == 2 && std::strcmp(argv[1], "--hashed-keys") == 0;
  if (argc != 1 && !hashed_keys)
    fail(4, "usage: " + std::string(argv[0]) + " [--info [--inputs] | --hashed-keys] < INPUT.json 3> WITNESS.wtns");
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(4, std::string("cannot read the input: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (text.size() > kMaxInputBytes) fail(2, "the input is larger than 256 MiB");
  }
  const std::vector<uint8_t> prime = c.prime();
  std::vector<InputSignal> signals;
  try {
    signals = parse_input(text, prime);
  } catch (const InputFault& e) {
    fail(2, e.what());
  }
  if (hashed_keys)
    for (auto& s : signals) s.hash = std::strtoull(s.name.c_str() + (s.name.empty() ? 0 : 1), nullptr, 10);
  // Every signal and size is checked before any is set: the circuit starts
  // running as its last input is set, so a wrong file must fail first.
  std::vector<SignalCount> given;
  for (const auto& s : signals) given.push_back({s.name, s.hash, s.values.size()});
  try {
    check_signals(given, [&](uint64_t hash) { return c.signal_size(hash); }, c.input_count());
  } catch (const InputFault& e) {
    fail(2, e.what());
  }
  if (c.input_count() == 0) c.run_without_inputs();
  for (const auto& s : signals)
    for (uint32_t i = 0; i < s.values.size(); ++i) c.set(s.hash, i, s.values[i]);
  const uint32_t n = c.witness_size();
  WtnsWriter out(prime, n);
  std::vector<uint8_t> v(prime.size());
  for (uint32_t i = 0; i < n; ++i) {
    c.witness(i, v.data());
    out.value(v.data(), v.size());
  }
  std::fflush(stdout);
  if (!out.write_to(3)) fail(4, std::string("cannot write the witness to descriptor 3: ") + std::strerror(errno));
  return 0;
}

}  // namespace zkfarm::witgen
