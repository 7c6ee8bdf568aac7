#include "ctl/progress.hpp"

namespace zkfarm::ctl {

namespace {
bool g_quiet = false;  // one process, one command line: set once by main
}  // namespace

void set_quiet(bool q) { g_quiet = q; }
bool quiet() { return g_quiet; }
void note(const std::string& text) {
  if (!g_quiet) std::cerr << "zkfarmctl: " << text << "\n";
}

}  // namespace zkfarm::ctl
