#pragma once
// Errors of the prover library. Every fault in an input file is an InputError
// whose message names the file, the section (where there is one) and the fault,
// e.g. "key.zkey: section 4: coefficient 17: signal 900 out of range (nVars 812)".
#include <stdexcept>
#include <string>

namespace zkfarm {

/// Bad input: a missing, truncated, corrupt or mismatched file. Callers at the
/// outside boundary (zkfarm-prove, the supervisor's submit) turn it into exit
/// code 2 or a refused job; it never means a bug in zkfarm.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The caller asked for the work to stop (e.g. its job was cancelled): thrown at
/// the next stage boundary of synthesize() or Prover::prove().
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("aborted: the job was cancelled") {}
};

}  // namespace zkfarm
