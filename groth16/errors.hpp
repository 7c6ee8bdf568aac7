#pragma once
// Errors of the prover library. Every fault in an input file is an InputError
// whose message names the file, the section (where there is one) and the fault,
// e.g. "key.zkey: section 4: coefficient 17: signal 900 out of range (nVars 812)".
//
// Messages never echo file contents: the file may be any file the process can
// read (a path submitted by someone else) and the message goes back to them and
// into logs. Before the magic matches nothing read from the file is shown;
// after it, only the container's structural integers are (version, section
// types and sizes, counts, offsets, indices); never bytes, field elements,
// primes or witness values, which are described instead ("not below the
// prime", "is not 1", "a field of 48 bytes").
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
