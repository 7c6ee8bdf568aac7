#include "witgen/graph_build.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "groth16/curve_list.hpp"
#include "files/safe_write.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/graph_eval.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/graph_plan.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_rewrite.hpp"
#include "witgen/input_json.hpp"
#include "witgen/subprocess.hpp"
#include "witgen/witness_engine.hpp"

namespace zkfarm::witgen {

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw BuildError(p.string() + ": cannot read");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

files::UniqueFd memfd_with(const std::string& text) {
  files::UniqueFd fd(::memfd_create("zkfarm-graph-check", MFD_CLOEXEC));
  if (!fd) throw BuildError(std::string("memfd_create: ") + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
    if (w <= 0) throw BuildError(std::string("cannot write a test input: ") + std::strerror(errno));
    done += size_t(w);
  }
  return fd;
}

// Test inputs of three kinds, so that circuits that check their inputs
// (bits, ranges) pass some: every value a bit, every value below 2^16, every
// value anywhere in the field. Deterministic: a rebuild checks the same ones.
std::vector<std::vector<U256>> random_inputs(const graph::Graph& g, uint32_t n) {
  std::mt19937_64 rng(0x7a6b6661726d3332ULL);
  const uint64_t* p = graph::curve_modulus(g.curve);
  std::vector<std::vector<U256>> out(n, std::vector<U256>(g.input_values));
  for (uint32_t k = 0; k < n; ++k)
    for (auto& v : out[k]) {
      v = U256{};
      switch (k % 3) {
        case 0: v[0] = rng() & 1; break;
        case 1: v[0] = rng() & 0xffff; break;
        default:
          do {
            for (auto& l : v) l = rng();
            v[3] &= p[3] | (p[3] >> 1) | (p[3] >> 2) | (p[3] >> 4) | (p[3] >> 8) | (p[3] >> 16) | (p[3] >> 32);
          } while (!(v[3] < p[3] || (v[3] == p[3] && v[2] < p[2])));
      }
    }
  return out;
}

// The same values as an input file the generator reads with --hashed-keys.
std::string hashed_json(const graph::Graph& g, const std::vector<U256>& values) {
  std::string j = "{";
  for (size_t s = 0; s < g.signals.size(); ++s) {
    const auto& sig = g.signals[s];
    j += (s ? ",\"#" : "\"#") + std::to_string(sig.hash) + "\":[";
    for (uint32_t i = 0; i < sig.size; ++i) {
      std::vector<uint8_t> le(32);
      std::memcpy(le.data(), values[sig.offset + i].data(), 32);
      j += (i ? ",\"" : "\"") + to_decimal(le) + "\"";
    }
    j += "]";
  }
  return j + "}";
}

// The witness values (section 2 of a .wtns in memfd `fd`), or empty when it is not one of 32-byte values.
std::vector<uint8_t> wtns_values(int fd, uint32_t witness_size) {
  const uint64_t n = uint64_t(witness_size) * 32;
  std::vector<uint8_t> buf(size_t(44 + 32 + n));
  const ssize_t got = ::pread(fd, buf.data(), buf.size(), 0);
  if (got != ssize_t(buf.size())) return {};
  return std::vector<uint8_t>(buf.begin() + 76, buf.end());
}

}  // namespace

std::string check_test_input(const std::string& exe, const GeneratorInfo& info, const std::string& text,
                             const GenerateOptions& run, const std::string& graph_sha256) {
  const uint32_t curve = graph_curve_of(info.prime);
  if (curve) {
    try {
      (void)check_input(text, graph::curve_prime_le(curve), InputLimits{});
    } catch (const InputFault& e) {
      return std::string("not an input file: ") + e.what();
    }
  }
  std::vector<uint8_t> want;
  try {
    files::UniqueFd in = memfd_with(text);
    files::UniqueFd w = generate_witness(exe, in.get(), info, run);
    want = wtns_values(w.get(), info.witness_size);
    if (want.empty()) return "the generator's witness is not one of " + std::to_string(info.witness_size) + " values";
    const GraphState st = graph_state(exe);
    if (!curve || !st.present) return "";
    // Read and planned here, not through load_graph's per-process cache:
    // zkfarmd checks once at add and keeps no evaluator.
    std::unique_ptr<graph::Evaluator> ev;
    try {
      ev = std::make_unique<graph::Evaluator>(graph::read_graph_file(st.path, graph::kIndexMask, graph_sha256));
    } catch (const graph::GraphError&) {
      return "";  // an unusable graph is not used (the synthesis worker says so); the generator answered
    }
    if (ev->graph().curve != curve || ev->graph().witness_size != info.witness_size)
      return "the witness graph is not of this generator";
    std::vector<uint8_t> got(size_t(info.witness_size) * 32);
    std::vector<graph::InputOutcome> outcome;
    std::vector<U256> values;
    try {
      values = ev->arrange(parse_input(text, graph::curve_prime_le(curve)));
    } catch (const InputFault& e) {
      return std::string("the witness graph refuses its shape: ") + e.what();
    }
    ev->evaluate({&values}, {got.data()}, outcome);
    if (!outcome[0].ok) return "the witness graph fails it and the generator does not";
    if (got != want) return "the witness graph's witness differs from the generator's";
    return "";
  } catch (const GenerateError& e) {
    if (e.input_fault()) return std::string("not of the circuit's shape: ") + e.what();
    return std::string("the circuit's generator fails on it: ") + e.what();
  } catch (const BuildError& e) {
    return e.what();
  }
}

uint32_t graph_curve_of(const std::string& prime) {
  uint32_t found = 0;
  for_each_curve([&]<class C>(std::type_identity<C>) {
    const uint32_t curve = graph::graph_curve_number(C::kId);
    if (prime == to_decimal(graph::curve_prime_le(curve))) found = curve;
  });
  return found;
}

GraphBuildResult build_graph(const GeneratorSources& src, const std::string& dir, const BuildOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  GraphBuildResult res;
  const fs::path out(dir), work = out / "graph-build";
  auto finish = [&](std::string why) {
    std::error_code ec;
    fs::remove_all(work, ec);
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (why.empty()) return res;
    res.built = false;
    res.reason = why;
    try {
      files::write_file_safe(out.string(), "graph.refused", why + "\n");
    } catch (const std::exception& e) {
      throw BuildError(e.what());
    }
    return res;
  };
  if (src.kind != GeneratorKind::kNative) return finish("built from a wasm: a graph is recorded from the circom --c folder");
  const std::string exe = (out / "generator").string();
  GenerateOptions run_opt;
  run_opt.sandbox = opt.sandbox;
  run_opt.sandbox.drop_uid = false;  // native: zkfarmd's user (generator_run.hpp)
  run_opt.timeout = std::chrono::milliseconds(60000);
  GeneratorInfo info;
  try {
    info = generator_info(exe, run_opt);
  } catch (const GenerateError& e) {
    return finish(std::string("the generator's --info failed: ") + e.what());
  }
  const uint32_t curve = graph_curve_of(info.prime);
  if (!curve) return finish("its prime is the scalar field of none of " + curve_names(Curves{}));

  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec) throw BuildError(work.string() + ": cannot create: " + ec.message());
  std::string dat;
  for (const auto& f : src.files)
    if (f.size() > 4 && f.compare(f.size() - 4, 4, ".dat") == 0) dat = f;
  const std::string cpp = dat.substr(0, dat.size() - 4) + ".cpp";
  {
    std::ofstream rewritten(work / "graph_circuit.cpp", std::ios::binary);
    rewritten << rewrite_for_recording(read_all(fs::path(src.dir) / cpp));
    if (!rewritten) throw BuildError((work / "graph_circuit.cpp").string() + ": cannot write");
  }
  // -O0 for the circuit (megabytes of generated C++; the recorder runs it
  // once, its build time matters more than its speed), -O2 for the recorder.
  const std::string root = opt.witgen_root;
  const std::vector<std::string> cxx = {"g++", "-std=c++20", "-O0", "-pthread", "-I" + src.dir, "-I" + root};
  auto step = [&](const std::string& what, std::vector<std::string> extra) {
    BuildStep s{what, cxx};
    s.argv.insert(s.argv.end(), extra.begin(), extra.end());
    return s;
  };
  const std::string s = src.dir + "/";
  BuildOptions bo = opt;
  bo.sandbox.drop_uid = false;
  std::vector<BuildStep> steps = {
      step("compiling the circuit for the graph recorder", {"-c", "graph_circuit.cpp", "-o", "circuit.o"}),
      step("compiling the graph recorder", {"-O2", "-DZKG_CURVE=" + std::to_string(curve), "-c",
                                            root + "/witgen/graph_recorder.cpp", "-o", "recorder.o"})};
  // circom's main.cpp and calcwit.cpp as the generator's build left them (build_generator), else compiled here.
  if (!fs::exists(work / "circom_main.o", ec))
    steps.push_back(step("compiling circom's main.cpp for the recorder",
                         {"-O1", "-Dmain=circom_generated_main", "-c", s + "main.cpp", "-o", "circom_main.o"}));
  if (!fs::exists(work / "calcwit.o", ec))
    steps.push_back(step("compiling calcwit.cpp for the recorder", {"-O1", "-c", s + "calcwit.cpp", "-o", "calcwit.o"}));
  try {
    run_build_steps(work.string(), bo, steps,
                    {step("linking the graph recorder", {"-o", "recorder", "circuit.o", "circom_main.o", "calcwit.o",
                                                         "recorder.o", "-lgmp"})});
  } catch (const BuildError& e) {
    return finish(std::string("the graph recorder did not build: ") + e.what());
  }
  RunSpec spec;
  spec.argv = {(work / "recorder").string(), (out / "generator.dat").string(), (work / "graph.raw").string(),
               std::to_string(opt.graph_max_nodes)};
  spec.cwd = work.string();
  spec.timeout = opt.timeout;
  spec.cancel = opt.cancel;
  spec.sandbox = bo.sandbox;
  spec.memory_bytes = opt.memory_bytes;
  spec.file_bytes = opt.graph_max_nodes * 13 + (uint64_t(1) << 30);
  spec.output_limit = 4096;
  const RunResult r = run(spec);
  if (r.exit_code == graph::kExitNotStatic) return finish(r.tail(1));
  if (r.exit_code == graph::kExitTooLarge)
    return finish("its graph passes witness_graph_max_nodes (" + std::to_string(opt.graph_max_nodes) + " nodes)");
  if (!r.ok()) return finish("the graph recorder failed (" + r.how() + (r.output.empty() ? ")" : "): " + r.tail(3)));

  std::vector<uint8_t> raw;
  std::unique_ptr<graph::Evaluator> ev;
  try {
    const std::string bytes = read_all(work / "graph.raw");
    raw.assign(bytes.begin(), bytes.end());
    graph::Graph g = graph::parse_graph(raw.data(), raw.size(), opt.graph_max_nodes);
    res.nodes = g.nodes.size();
    if (g.witness_size != info.witness_size || g.input_values != info.input_count)
      return finish("the recorded graph's sizes are not the generator's");
    ev = std::make_unique<graph::Evaluator>(std::move(g));
  } catch (const std::exception& e) {
    return finish(std::string("the recorded graph is unusable: ") + e.what());
  }

  // Held to the generator, byte for byte: the circuit's own test inputs, then random ones.
  const graph::Graph& g = ev->graph();
  const std::vector<uint8_t> prime = graph::curve_prime_le(curve);
  struct Case {
    std::string text;
    bool hashed;
    std::vector<U256> values;
    bool input_fault = false;
  };
  std::vector<Case> cases;
  // The fastest witness of each engine over the cases: the generator's whole
  // process (what the farm pays a witness without the graph), the graph's
  // evaluation of one input (held in memory, as a synthesis worker holds it).
  double generator_s = 1e30, graph_s = 1e30;
  const std::vector<U256>* batch_probe = nullptr;  // a checked input, to time a batch with
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  for (const auto& t : opt.graph_test_inputs) {
    Case c{t, false, {}};
    try {
      c.values = ev->arrange(parse_input(t, prime));
    } catch (const InputFault&) {
      c.input_fault = true;
    }
    cases.push_back(std::move(c));
  }
  for (auto& v : random_inputs(g, opt.graph_random_inputs)) cases.push_back({hashed_json(g, v), true, std::move(v)});
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::string which = k < opt.graph_test_inputs.size() ? "test input " + std::to_string(k + 1)
                                                          : "random input " + std::to_string(k + 1 - opt.graph_test_inputs.size());
    GenerateOptions go = run_opt;
    go.timeout = std::chrono::milliseconds(600000);
    go.memory_bytes = opt.memory_bytes;
    go.cancel = opt.cancel;
    go.hashed_keys = c.hashed;
    files::UniqueFd in = memfd_with(c.text);
    std::vector<uint8_t> want;
    bool generator_ok = false, generator_input_fault = false;
    const auto g0 = std::chrono::steady_clock::now();
    try {
      files::UniqueFd w = generate_witness(exe, in.get(), info, go);
      generator_s = std::min(generator_s, seconds_since(g0));
      want = wtns_values(w.get(), info.witness_size);
      generator_ok = true;
    } catch (const GenerateError& e) {
      if (std::string(e.what()).find("timed out") != std::string::npos) continue;  // no verdict either way
      generator_input_fault = e.input_fault();
    }
    if (c.input_fault || generator_input_fault) {
      if (c.input_fault != generator_input_fault) return finish("the graph and the generator disagree on " + which + "'s shape");
      continue;
    }
    std::vector<uint8_t> got(size_t(g.witness_size) * 32);
    std::vector<graph::InputOutcome> outcome;
    const auto e0 = std::chrono::steady_clock::now();
    ev->evaluate({&c.values}, {got.data()}, outcome);
    graph_s = std::min(graph_s, seconds_since(e0));
    if (generator_ok != outcome[0].ok)
      return finish("on " + which + " the " + (generator_ok ? "generator succeeded and the graph failed"
                                                            : "generator failed and the graph did not"));
    if (generator_ok && got != want) return finish("its witness differs from the generator's on " + which);
    if (generator_ok) batch_probe = &c.values;
    ++res.checked;
  }
  try {
    const std::string graph_sha256 = graph::write_graph_file((out / "graph").string(), raw);
    // Its plan beside it: a process that evaluates a few witnesses reads it
    // instead of planning again (graph_plan.hpp).
    graph::write_plan_file(graph::plan_path((out / "graph").string()), *ev, graph_sha256);
    // `auto` takes the faster engine (docs/witness.md): a graph measured
    // slower than the generator's whole process (circuits heavy in field
    // inversions) is kept, for `graph` and for batches, but not chosen.
    if (res.checked && graph_s > generator_s) {
      // In a batch (the farm's synthesis workers) its inversions are shared
      // and the program streams once: timed too, at up to 16 inputs within
      // 256 MiB of witnesses, so the farm keeps the graph where it wins there.
      const size_t w_bytes = size_t(g.witness_size) * 32;
      const size_t b = std::min<size_t>(16, (size_t(256) << 20) / std::max<size_t>(1, w_bytes));
      double batch_s = 1e30;
      if (b >= 2 && batch_probe) {
        std::vector<std::vector<uint8_t>> outs(b, std::vector<uint8_t>(w_bytes));
        std::vector<const std::vector<U256>*> ins(b, batch_probe);
        std::vector<uint8_t*> outp;
        for (auto& o : outs) outp.push_back(o.data());
        std::vector<graph::InputOutcome> outcome;
        const auto b0 = std::chrono::steady_clock::now();
        ev->evaluate(ins, outp, outcome);
        batch_s = seconds_since(b0) / double(b);
      }
      const bool batches_faster = batch_s < generator_s;
      char line[240];
      if (batches_faster)
        std::snprintf(line, sizeof line,
                      "measured slower than the generator: %.1f ms a witness against %.1f ms; in batches it is faster "
                      "(%.1f ms a witness in batches of %zu)\nbatches: faster\n",
                      graph_s * 1e3, generator_s * 1e3, batch_s * 1e3, b);
      else
        std::snprintf(line, sizeof line,
                      "measured slower than the generator: %.1f ms a witness against %.1f ms\nbatches: slower\n",
                      graph_s * 1e3, generator_s * 1e3);
      files::write_file_safe(out.string(), "graph.slower", line);
    }
  } catch (const graph::GraphError& e) {
    throw BuildError(e.what());
  } catch (const files::FileError& e) {
    throw BuildError(e.what());
  }
  res.built = true;
  return finish("");
}

}  // namespace zkfarm::witgen
