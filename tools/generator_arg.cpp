#include "tools/generator_arg.hpp"

#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "groth16/errors.hpp"
#include "witgen/generator_cache.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/witness_engine.hpp"

namespace zkfarm::tools {

void add_witness_flags(CLI::App& app, WitnessOptions& wo) {
  app.add_option("--timeout-ms", wo.timeout_ms, "witness generation may take this long")
      ->capture_default_str()
      ->check(CLI::Range(1u, 86400000u));
  app.add_option("--build-jobs", wo.build_jobs, "compilers at once when a generator is built (default: the cores)");
  app.add_option("--witness-engine", wo.engine,
                 "auto: a --c circuit's witness graph (built once beside its generator, its plan read back each "
                 "run) unless it was measured slower, else the generator; graph: the graph or an error; "
                 "generator (native or wasm): the circuit's generator, a process a witness")
      ->capture_default_str()
      ->check(CLI::IsMember({"generator", "auto", "graph", "native", "wasm"}));
}

std::string generator_for(const std::string& path, const WitnessOptions& wo, const std::string& first_input) {
  using namespace witgen;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
    char magic[4] = {};
    FILE* f = std::fopen(path.c_str(), "rb");
    const bool wasm = f && std::fread(magic, 1, 4, f) == 4 && std::memcmp(magic, "\0asm", 4) == 0;
    if (f) std::fclose(f);
    if (!wasm) return path;  // a built generator
  }
  GeneratorSources src;
  try {
    src = sources_at(path);
  } catch (const BuildError& e) {
    throw InputError(std::string(e.what()) + " (GENERATOR: a circuit.wasm, a circom --c folder, or a built generator)");
  }
  // `--witness-engine wasm` or `native` names the generator's kind: a --c
  // folder asked for as wasm must not run its native code, nor the other way.
  if ((wo.engine == "wasm" || wo.engine == "native") && wo.engine != generator_kind_name(src.kind))
    throw InputError(path + ": --witness-engine " + wo.engine + ", but this is " +
                     (src.kind == GeneratorKind::kNative ? "a circom --c folder (native code): give its circuit.wasm"
                                                         : "a circuit.wasm: give its circom --c folder") +
                     " or --witness-engine " + generator_kind_name(src.kind));
  BuildOptions bo;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  bo.witgen_root =
      find_witgen_root(n > 0 ? std::filesystem::path(std::string(self, size_t(n))).parent_path().string() : ".");
  bo.jobs = wo.build_jobs ? wo.build_jobs : std::max(1u, std::thread::hardware_concurrency());
  bo.graph = wo.engine == "graph" || wo.engine == "auto";
  if (!first_input.empty()) {  // the user's own input: the graph's first test (a bad one is reported later)
    const int fd = ::open(first_input.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat ist {};
    if (fd >= 0 && ::fstat(fd, &ist) == 0 && S_ISREG(ist.st_mode) && ist.st_size < (64 << 20)) {
      std::string text(size_t(ist.st_size), '\0');
      if (::read(fd, text.data(), text.size()) == ssize_t(text.size())) bo.graph_test_inputs.push_back(text);
    }
    if (fd >= 0) ::close(fd);
  }
  try {
    const std::string cache = user_generator_cache();
    // Hashed once (and, for sources unchanged since, not at all: the cache's index).
    const std::string hash = cache_source_hash(src, cache);
    std::error_code ec;
    const std::filesystem::path done = std::filesystem::path(cache) / hash;
    const bool graph_wanted = bo.graph && src.kind == GeneratorKind::kNative &&
                              !std::filesystem::exists(done / "graph", ec) &&
                              !std::filesystem::exists(done / "graph.refused", ec);
    // Both take seconds to minutes (the graph 7–51 s on circomlib's circuits): say so before the wait.
    if (!std::filesystem::exists(done / "generator", ec))
      std::fprintf(stderr, "zkfarm-prove: building the %s witness generator%s of %s (once; kept in %s)\n",
                   generator_kind_name(src.kind), graph_wanted ? " and its witness graph" : "", path.c_str(),
                   cache.c_str());
    else if (graph_wanted)
      std::fprintf(stderr, "zkfarm-prove: building the witness graph of %s (once; kept in %s)\n", path.c_str(),
                   cache.c_str());
    return cached_generator(src, hash, cache, bo);
  } catch (const BuildError& e) {
    throw InputError(path + ": the witness generator cannot be built: " + e.what());
  }
}

namespace {

// The graph's plan is mapped, not copied (witgen::graph::map_file_bytes): a
// plan truncated under the mapping while this process reads it (only its own
// user can: the cache is theirs) raises SIGBUS. Said plainly and ended with
// exit 1 instead of a core dump; nothing has been written yet (outputs are
// renamed into place at the end).
void plan_truncated(int) {
  static const char kText[] =
      "zkfarm-prove: the witness graph's plan (graph.plan in the generator cache) was cut short while in use; "
      "nothing was written; run the command again\n";
  (void)!::write(2, kText, sizeof kText - 1);
  ::_exit(1);
}

// SIGBUS handled as above while the mapped plan is in use (restored after).
class PlanMappingGuard {
 public:
  PlanMappingGuard() {
    struct sigaction sa {};
    sa.sa_handler = plan_truncated;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &old_);
  }
  ~PlanMappingGuard() { ::sigaction(SIGBUS, &old_, nullptr); }
  PlanMappingGuard(const PlanMappingGuard&) = delete;
  PlanMappingGuard& operator=(const PlanMappingGuard&) = delete;

 private:
  struct sigaction old_ {};
};

}  // namespace

files::UniqueFd witness_from_input(const std::string& exe, const std::string& generator_path, const std::string& input,
                                   const WitnessOptions& wo) {
  // The input: a regular file, opened without blocking on a FIFO.
  const int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw InputError(input + ": cannot open: " + std::strerror(errno));
  files::UniqueFd in(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw InputError(input + ": not a regular file");
  witgen::WitnessEngine engine = witgen::WitnessEngine::kAuto;
  witgen::parse_witness_engine(wo.engine, engine);
  try {  // the graph alone first: no generator process at all
    const PlanMappingGuard guard;
    if (files::UniqueFd w = witgen::graph_witness_alone(exe, in.get(), engine)) return w;
  } catch (const witgen::GenerateError& e) {
    throw InputError(input + ": " + e.what());
  }
  // What `auto` could have from the graph it had just now: make_witness
  // would only load and evaluate it again. `graph` still goes through it,
  // for the reason it cannot serve.
  if (engine == witgen::WitnessEngine::kAuto) engine = witgen::WitnessEngine::kGenerator;
  witgen::GeneratorInfo info;
  try {
    witgen::GenerateOptions io;  // zkfarm-prove runs circuit code with its user's own rights
    io.timeout = std::chrono::milliseconds(60000);
    info = witgen::generator_info(exe, io);
  } catch (const witgen::GenerateError& e) {
    throw InputError(generator_path + ": " + e.what());
  }
  witgen::GenerateOptions go;
  go.timeout = std::chrono::milliseconds(wo.timeout_ms);
  try {
    return witgen::make_witness(exe, in.get(), info, go, engine);
  } catch (const witgen::GenerateError& e) {
    throw InputError(input + ": " + e.what());
  }
}

Wtns open_generated(const files::UniqueFd& fd, const std::string& name) {
  const std::string p = "/proc/self/fd/" + std::to_string(fd.get());
  try {
    Wtns w = Wtns::open(p);
    w.path = name;
    return w;
  } catch (const InputError& e) {  // the generator's output, named by its input
    std::string m = e.what();
    if (auto at = m.find(p); at != std::string::npos) m.replace(at, p.size(), name);
    throw InputError(m);
  }
}

}  // namespace zkfarm::tools
