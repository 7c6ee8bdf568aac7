#include "witgen/generator_run.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <system_error>

#include "witgen/sandbox_uids.hpp"
#include "witgen/subprocess.hpp"

namespace zkfarm::witgen {

namespace {

std::string explain(const RunResult& r, std::chrono::milliseconds timeout) {
  if (r.cancelled) return "cancelled";
  if (r.timed_out) return "witness generation timed out after " + std::to_string(timeout.count()) + " ms";
  const std::string said = r.tail(6);
  const std::string with = said.empty() ? "" : ": " + said;
  if (r.exit_code == 2) return said.empty() ? "the input is wrong" : said;
  if (r.exit_code == 3) return "the circuit failed" + with;
  if (r.signal == SIGABRT) return "the circuit failed (its generator aborted)" + with;
  if (r.signal == SIGKILL) return "the generator was killed (out of memory?)" + with;
  if (r.signal) return "the generator crashed (" + r.how() + ")" + with;
  return "the generator failed (" + r.how() + ")" + with;
}

// What a confined run holds until it ends: the generator's descriptor and
// the uid leased for this run alone (given back, its processes killed, after it).
struct Confinement {
  files::UniqueFd exe;
  UidLease uid;
};

// Fills spec's program, limits and sandbox for `exe`. When the uid is
// dropped, the generator runs as a uid of its own (sandbox_uids.hpp),
// executed from a descriptor opened here.
Confinement confine(const std::string& exe, const GenerateOptions& opt, RunSpec& spec) {
  spec.memory_bytes = opt.memory_bytes;
  spec.sandbox = opt.sandbox;
  Confinement c;
  if (!opt.sandbox.enabled || !opt.sandbox.drop_uid) return c;
  struct stat st{};
  if (::stat((exe + ".dat").c_str(), &st) == 0) {  // native: see GenerateOptions::sandbox
    spec.sandbox.drop_uid = false;
    return c;
  }
  c.exe.reset(::open(exe.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!c.exe || ::fstat(c.exe.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw GenerateError(exe + ": cannot open the generator: " + std::strerror(errno), false);
  // Built before generators were run as the sandbox user (mode 0700): zkfarmd's own file.
  if ((st.st_mode & 0005) != 0005 && st.st_uid == ::geteuid()) ::fchmod(c.exe.get(), 0755);
  spec.exec_fd = c.exe.get();
  try {
    c.uid = lease_sandbox_uid(spec.sandbox, opt.timeout);
  } catch (const SandboxError& e) {
    throw GenerateError(e.what(), false);
  }
  return c;
}

}  // namespace

GeneratorInfo generator_info(const std::string& exe, const GenerateOptions& opt, InfoInputs inputs) {
  const auto timeout = opt.timeout;
  RunSpec spec;
  spec.argv = {exe, "--info"};
  if (inputs == InfoInputs::kList) spec.argv.push_back("--inputs");
  spec.timeout = timeout;
  spec.cancel = opt.cancel;
  Confinement keep = confine(exe, opt, spec);
  RunResult r = run(spec);
  if (!r.ok()) throw GenerateError(exe + " --info: " + explain(r, timeout), false);
  try {
    // The info line is the last line of the output.
    std::string line = r.output;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    if (auto nl = line.rfind('\n'); nl != std::string::npos) line = line.substr(nl + 1);
    const auto j = nlohmann::json::parse(line);
    GeneratorInfo info;
    info.kind = j.at("kind").get<std::string>();
    info.prime = j.at("prime").get<std::string>();
    info.n8 = j.at("n8").get<uint32_t>();
    info.witness_size = j.at("witness_size").get<uint32_t>();
    info.input_count = j.at("input_count").get<uint32_t>();
    if (info.n8 == 0 || info.n8 > 128) throw std::runtime_error("n8 out of range");
    if (j.contains("inputs")) {
      info.inputs = signal_shapes_from_json(j.at("inputs").dump());
      uint64_t total = 0;
      for (const auto& s : *info.inputs) total += s.size;
      if (total != info.input_count) throw std::runtime_error("the inputs' sizes do not add up to input_count");
    }
    return info;
  } catch (const std::exception& e) {
    throw GenerateError(exe + " --info: not a generator's info line (" + e.what() + ")", false);
  }
}

files::UniqueFd generate_witness(const std::string& exe, int input_fd, const GeneratorInfo& info,
                                 const GenerateOptions& opt) {
  files::UniqueFd out(::memfd_create("zkfarm-witness", MFD_CLOEXEC));
  if (!out) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::lseek(input_fd, 0, SEEK_SET) < 0) throw std::system_error(errno, std::generic_category(), "lseek");
  RunSpec spec;
  spec.argv = {exe};
  if (opt.hashed_keys) spec.argv.push_back("--hashed-keys");
  spec.stdin_fd = input_fd;
  spec.fd3 = out.get();
  spec.timeout = opt.timeout;
  Confinement keep = confine(exe, opt, spec);
  spec.file_bytes = 44 + uint64_t(info.n8) * (uint64_t(info.witness_size) + 1);
  spec.cancel = opt.cancel;
  RunResult r = run(spec);
  if (!r.ok()) throw GenerateError(explain(r, opt.timeout), r.exit_code == 2);
  ::lseek(out.get(), 0, SEEK_SET);
  return out;
}

}  // namespace zkfarm::witgen
