#include "witgen/generator_build.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>

#include "files/sha256.hpp"
#include "witgen/subprocess.hpp"

#ifndef ZKFARM_WITGEN_SOURCE_ROOT
#define ZKFARM_WITGEN_SOURCE_ROOT ""
#endif

namespace zkfarm::witgen {

namespace fs = std::filesystem;

namespace {

using files::Sha256;

std::string file_sha256(const std::string& path, uint64_t& size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BuildError(path + ": cannot read");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  size = 0;
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const auto n = size_t(in.gcount());
    h.add(buf.data(), n);
    size += n;
  }
  return h.hex_digest();
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

using Step = BuildStep;

class Builder {
 public:
  Builder(const std::string& dir, const BuildOptions& opt)
      : dir_(dir), opt_(opt), deadline_(std::chrono::steady_clock::now() + opt.timeout) {}

  void run_one(const Step& s) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw BuildError(s.what + ": the build's time (" + std::to_string(opt_.timeout.count()) + " ms) is up");
    RunSpec spec;
    spec.argv = s.argv;
    spec.cwd = dir_;
    spec.timeout = left;
    spec.cancel = opt_.cancel;
    spec.output_limit = 16 * 1024;
    spec.sandbox = opt_.sandbox;
    spec.memory_bytes = opt_.memory_bytes;
    spec.file_bytes = uint64_t(4) << 30;  // the C of a large wasm is hundreds of MB, never GBs
    RunResult r = run(spec);
    if (!r.ok())
      throw BuildError(s.what + " failed (" + s.argv.front() + ": " + r.how() + ")" +
                       (r.output.empty() ? "" : ": " + r.tail(6)));
  }

  // Several steps at once, at most opt.jobs; the first failure (in order) is thrown.
  void run_all(const std::vector<Step>& steps) {
    std::vector<std::future<void>> running;
    std::vector<std::exception_ptr> errors(steps.size());
    size_t next = 0;
    std::mutex m;
    auto worker = [&] {
      for (;;) {
        size_t i;
        {
          std::lock_guard<std::mutex> lock(m);
          if (next >= steps.size()) return;
          i = next++;
        }
        try {
          run_one(steps[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    for (unsigned j = 0; j < std::max(1u, opt_.jobs); ++j) running.push_back(std::async(std::launch::async, worker));
    for (auto& f : running) f.get();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  std::string dir_;
  BuildOptions opt_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace

const char* generator_kind_name(GeneratorKind k) { return k == GeneratorKind::kWasm ? "wasm" : "native"; }

std::vector<std::string> native_source_files(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::vector<std::string> dats;
  for (const auto& n : names) {
    if (ends_with(n, ".cpp") || ends_with(n, ".hpp") || n == "fr.asm") out.push_back(n);
    if (ends_with(n, ".dat")) {
      out.push_back(n);
      dats.push_back(n);
    }
  }
  for (const char* need : {"main.cpp", "calcwit.cpp", "calcwit.hpp", "circom.hpp", "fr.cpp", "fr.hpp", "fr.asm"})
    if (std::find(out.begin(), out.end(), need) == out.end())
      throw BuildError(std::string("not a circom --c folder: ") + need + " is missing");
  if (dats.size() != 1)
    throw BuildError("not a circom --c folder: " + std::to_string(dats.size()) + " .dat files (one CIRCUIT.dat expected)");
  const std::string cpp = dats[0].substr(0, dats[0].size() - 4) + ".cpp";
  if (std::find(out.begin(), out.end(), cpp) == out.end())
    throw BuildError("not a circom --c folder: " + dats[0] + " without its " + cpp);
  std::sort(out.begin(), out.end());
  return out;
}

std::string source_hash(const GeneratorSources& src) {
  Sha256 h;
  h.add(std::string(kHostVersion) + "\n" + generator_kind_name(src.kind) + "\n");
  std::vector<std::string> files = src.files;
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    uint64_t size = 0;
    const std::string sum = file_sha256(src.dir + "/" + f, size);
    // A wasm is one file whatever it is called; a --c folder's names matter (CIRCUIT.cpp).
    const std::string name = src.kind == GeneratorKind::kWasm ? "circuit.wasm" : f;
    h.add(name + "\n" + std::to_string(size) + "\n" + sum + "\n");
  }
  return h.hex_digest();
}

std::string find_witgen_root(const std::string& exe_dir) {
  const fs::path installed = fs::path(exe_dir) / ".." / "share" / "zkfarm";
  std::error_code ec;
  if (fs::exists(installed / "witgen" / "generator_host.hpp", ec)) return fs::weakly_canonical(installed, ec).string();
  const std::string built = ZKFARM_WITGEN_SOURCE_ROOT;
  if (!built.empty() && fs::exists(fs::path(built) / "witgen" / "generator_host.hpp", ec)) return built;
  return {};
}

void run_build_steps(const std::string& cwd, const BuildOptions& opt, const std::vector<BuildStep>& at_once,
                     const std::vector<BuildStep>& then) {
  Builder b(cwd, opt);
  b.run_all(at_once);
  for (const auto& s : then) b.run_one(s);
}

void build_generator(const GeneratorSources& src, const std::string& out, const BuildOptions& opt) {
  if (opt.witgen_root.empty()) throw BuildError("the witness generator hosts' sources (witgen/) are not installed");
  std::error_code ec;
  const fs::path work = fs::path(out) / "build";
  fs::create_directories(work, ec);
  if (ec) throw BuildError(work.string() + ": cannot create: " + ec.message());
  const std::string root = opt.witgen_root;
  const std::vector<std::string> cxx = {"g++", "-std=c++17", "-O2", "-pthread", "-I" + root};
  auto cxx_step = [&](const std::string& what, const std::vector<std::string>& extra) {
    Step s{what, cxx};
    s.argv.insert(s.argv.end(), extra.begin(), extra.end());
    return s;
  };
  Builder b(work.string(), opt);
  const std::string input_json = root + "/witgen/input_json.cpp";
  if (src.kind == GeneratorKind::kWasm) {
    const std::string wasm = src.dir + "/" + src.files.at(0);
    b.run_one({"wasm2c", {"wasm2c", "-n", "circuit", wasm, "-o", "circuit.c"}});
    b.run_all({
        // The generated C is large (megabytes for big circuits): -O1 builds it
        // several times faster than -O2 for little loss (docs/performance.md).
        {"compiling the circuit's C (wasm2c output)", {"gcc", "-O1", "-c", "circuit.c", "-o", "circuit.o"}},
        cxx_step("compiling the wasm host", {"-I.", "-I/usr/share/wabt/wasm2c", "-c", root + "/witgen/wasm_host.cpp", "-o", "host.o"}),
        cxx_step("compiling the input reader", {"-c", input_json, "-o", "input_json.o"}),
    });
    b.run_one(cxx_step("linking the generator",
                       {"-o", (fs::path(out) / "generator").string(), "circuit.o", "host.o", "input_json.o", "-lwasm-rt-impl"}));
  } else {
    std::string dat, cpp;
    for (const auto& f : src.files)
      if (ends_with(f, ".dat")) dat = f;
    cpp = dat.substr(0, dat.size() - 4) + ".cpp";
    const std::string s = src.dir + "/";
    // NDEBUG stays undefined: circom's generated code reports a failed
    // circuit assertion through assert().
    b.run_all({
        cxx_step("compiling the circuit (" + cpp + ")",
                 {"-O3", "-I" + src.dir, "-include", root + "/witgen/fr_inline.hpp", "-c", s + cpp, "-o", "circuit.o"}),
        cxx_step("compiling circom's main.cpp", {"-I" + src.dir, "-Dmain=circom_generated_main", "-c", s + "main.cpp", "-o", "circom_main.o"}),
        cxx_step("compiling calcwit.cpp", {"-I" + src.dir, "-c", s + "calcwit.cpp", "-o", "calcwit.o"}),
        cxx_step("compiling fr.cpp", {"-I" + src.dir, "-c", s + "fr.cpp", "-o", "fr.o"}),
        {"assembling fr.asm", {"nasm", "-felf64", s + "fr.asm", "-o", "fr_asm.o"}},
        cxx_step("compiling the native host", {"-I" + src.dir, "-c", root + "/witgen/native_main.cpp", "-o", "host.o"}),
        cxx_step("compiling the input reader", {"-c", input_json, "-o", "input_json.o"}),
    });
    b.run_one(cxx_step("linking the generator",
                       {"-o", (fs::path(out) / "generator").string(), "circuit.o", "circom_main.o", "calcwit.o", "fr.o",
                        "fr_asm.o", "host.o", "input_json.o", "-lgmp", "-Wl,-z,noexecstack"}));
    fs::copy_file(s + dat, fs::path(out) / "generator.dat", fs::copy_options::overwrite_existing, ec);
    if (ec) throw BuildError(dat + ": cannot copy beside the generator: " + ec.message());
    if (opt.graph) {  // circom's main.cpp and calcwit.cpp, compiled once: the graph recorder links them too
      fs::create_directories(fs::path(out) / "graph-build", ec);
      for (const char* o : {"circom_main.o", "calcwit.o"}) fs::rename(work / o, fs::path(out) / "graph-build" / o, ec);
    }
  }
  fs::remove_all(work, ec);
}

}  // namespace zkfarm::witgen
