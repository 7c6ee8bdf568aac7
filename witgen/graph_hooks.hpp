#pragma once
// What graph_rewrite.cpp puts into a circuit's C++ (`#include`d at its top)
// and graph_recorder.cpp defines: the hooks through which the recorder sees
// the circuit's branches, loops, asserts and logs, and where it is.
#include "fr.hpp"

/// The circom line being run (set before each operation) and the template or
/// function ("template Foo", "function bar"), for messages.
extern thread_local int zkg_line;
extern thread_local const char* zkg_where;

/// Names the template or function being run while it runs.
struct ZkgScope {
  const char* saved;
  int saved_line;
  explicit ZkgScope(const char* where) : saved(zkg_where), saved_line(zkg_line) { zkg_where = where; }
  ~ZkgScope() {
    zkg_where = saved;
    zkg_line = saved_line;
  }
};

/// `for (ZkgIf i(&c); i.pass() >= 0; i.next()) if (i.pass()) {…} else {…}`:
/// the statement runs once for a known condition; twice (then, else) for one
/// that depends on an input, the two merged into selects.
struct ZkgIf {
  int pass_;
  bool symbolic_;
  __attribute__((noinline)) explicit ZkgIf(PFrElement c);
  int pass() const { return pass_; }
  void next();
  ~ZkgIf();
};

/// A loop condition (an input-dependent one: not a static graph).
bool zkg_loop(PFrElement c);
/// Any other truth test (an input-dependent one: not a static graph).
int zkg_is_true(PFrElement c);
/// An assert of the circuit (`===`, `assert`) at circom line `line`.
void zkg_assert(PFrElement c, int line);
/// circom's log() output.
int zkg_printf(const char* fmt, ...);
