#include "witgen/generator_run.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <system_error>

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

}  // namespace

GeneratorInfo generator_info(const std::string& exe, std::chrono::milliseconds timeout) {
  RunSpec spec;
  spec.argv = {exe, "--info"};
  spec.timeout = timeout;
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
  spec.stdin_fd = input_fd;
  spec.fd3 = out.get();
  spec.timeout = opt.timeout;
  spec.memory_bytes = opt.memory_bytes;
  spec.file_bytes = 44 + uint64_t(info.n8) * (uint64_t(info.witness_size) + 1);
  spec.cancel = opt.cancel;
  RunResult r = run(spec);
  if (!r.ok()) throw GenerateError(explain(r, opt.timeout), r.exit_code == 2);
  ::lseek(out.get(), 0, SEEK_SET);
  return out;
}

}  // namespace zkfarm::witgen
