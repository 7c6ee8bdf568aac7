#include "witgen/statement_check.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

namespace zkfarm::witgen {

void check_statement(std::string_view input, const std::vector<uint8_t>& prime_le,
                     const std::vector<SignalShape>& inputs, uint32_t n_public, const uint8_t* witness,
                     uint32_t count) {
  const std::vector<InputSignal> given = parse_input(input, prime_le);
  std::unordered_map<uint64_t, const InputSignal*> by_hash;
  for (const auto& s : given) by_hash[s.hash] = &s;  // a repeated name: its last values, as the generators take it
  for (const auto& shape : inputs) {
    if (shape.at == 0 || shape.at > n_public) continue;  // unknown, or a private input
    const auto it = by_hash.find(shape.hash);
    // Every input was checked present at submit; one missing now is a changed copy.
    if (it == by_hash.end() || it->second->values.size() != shape.size)
      throw StatementError("the input no longer has the circuit's input signal #" + std::to_string(shape.at) +
                           " with " + std::to_string(shape.size) + " values");
    const InputSignal& s = *it->second;
    for (uint32_t k = 0; k < shape.size; ++k) {
      const uint64_t w = uint64_t(shape.at) + k;
      if (w > n_public) break;
      if (w >= count) throw StatementError("the witness has " + std::to_string(count) + " values, fewer than its inputs");
      const uint8_t* have = witness + w * 32;
      const std::vector<uint8_t>& want = s.values[k];
      bool same = want.size() <= 32;
      for (size_t b = 0; same && b < 32; ++b) same = have[b] == (b < want.size() ? want[b] : 0);
      if (!same) {
        const std::vector<uint8_t> have_le(have, have + 32);
        throw StatementError("the witness does not prove the input: public signal " + std::to_string(w) + " (" +
                             s.name + (shape.size > 1 ? "[" + std::to_string(k) + "]" : "") + ") is " +
                             to_decimal(have_le) + " in the witness, the input says " + to_decimal(want) +
                             "; no proof of another statement is made");
      }
    }
  }
}

void check_statement_fd(int input_fd, const std::string& statement, const std::vector<uint8_t>& prime_le,
                        uint32_t n_public, const uint8_t* witness, uint32_t count) {
  if (statement.empty()) return;
  std::vector<SignalShape> inputs;
  try {
    inputs = signal_shapes_from_json(statement);
  } catch (const std::exception& e) {
    throw StatementError(std::string("the circuit's recorded inputs cannot be read: ") + e.what());
  }
  bool any = false;
  for (const auto& s : inputs) any = any || (s.at != 0 && s.at <= n_public);
  if (!any) return;  // no public input (or positions not recorded): nothing the proof states of the input
  constexpr size_t kMax = size_t(256) << 20;
  std::string text;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(input_fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StatementError(std::string("cannot read the input again: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, size_t(n));
    at += n;
    if (text.size() > kMax) throw StatementError("the input grew past 256 MiB since it was checked");
  }
  check_statement(text, prime_le, inputs, n_public, witness, count);
}

}  // namespace zkfarm::witgen
