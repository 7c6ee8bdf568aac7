// Circuits in the farm (docs/witness.md): `zkfarmctl circuit add NAME --zkey
// KEY (--wasm W | --c DIR)` takes the key and the circuit's witness generator
// sources by content (with the requester's rights, as a submit does), builds
// the generator once per content hash under STATE/circuits/HASH/, checks that
// generator and key are of one circuit (the prime, and the witness size
// against nVars), and journals the name. `circuit list`, `circuit remove`.
// A submit of inputs names a circuit; its job keeps the generator's and the
// key's paths, so removing the circuit later changes no accepted job.
//
// Who may add: a wasm generator runs inside wasm's sandbox (bounds-checked
// memory, no calls but its four imports), so any control user may add one; a
// --c circuit is native code run with zkfarmd's user's rights, so adding one
// is an admin's action, like an upgrade (docs/security.md).
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "files/file_error.hpp"
#include "files/fs_credentials.hpp"
#include "files/input_file.hpp"
#include "files/safe_write.hpp"
#include "groth16/decimal.hpp"
#include "groth16/errors.hpp"
#include "protocol/messages.hpp"
#include "supervisor/intake/submission.hpp"
#include "witgen/generator_cache.hpp"
#include "witgen/graph_build.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/graph_file.hpp"
#include "witgen/witness_engine.hpp"

namespace zkfarm::supervisor {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// At most this many files and bytes in a --c folder (a big circuit's .cpp is
// tens of MB, its .dat as much).
constexpr size_t kMaxSourceFiles = 64;
constexpr uint64_t kMaxSourceBytes = uint64_t(8) << 30;
// circuit add --test-input: how many, how large.
constexpr size_t kMaxTestInputs = 16;
constexpr size_t kMaxTestInputBytes = size_t(64) << 20;

// BN254's r in decimal: what a generator's --info must say.
std::string scalar_prime_decimal() {
  U256 r;
  for (int i = 0; i < 4; ++i) r[size_t(i)] = FrParams::kModulus[i];
  return to_decimal(r);
}

}  // namespace

json circuit_json(const CircuitRecord& c, const std::string& witness) {
  return {{"name", c.name},
          {"kind", c.kind},
          {"witness", witness},
          {"generator", c.generator},
          {"zkey_sha256", c.zkey_sha256},
          {"zkey", c.zkey_source},
          {"source", c.source},
          {"owner_uid", c.owner_uid},
          {"added_ms", c.added_ms},
          {"n_vars", c.n_vars},
          {"n_public", c.n_public}};
}

// Copies a built generator's file into SHARED/generators/SHA256 (once: a
// file of that name holds those bytes) and returns the hash.
static std::string publish_generator_file(const std::string& path, const std::string& shared_dir) {
  const std::string dir = shared_dir + "/generators";  // made and checked at start (check_shared_dir)
  files::UniqueFd src = files::open_regular_file(path);
  files::UniqueFd d = files::open_dir(dir);
  const std::string incoming = "incoming-" + random_token();
  const files::CopyResult c = files::copy_into(src.get(), path, d.get(), incoming, 0500);
  if (::renameat(d.get(), incoming.c_str(), d.get(), c.sha256_hex.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(d.get(), incoming.c_str(), 0);
    throw files::FileError(dir, err, dir + ": cannot store a generator: " + std::strerror(err));
  }
  return c.sha256_hex;
}

// On a build-pool thread: everything of `circuit add` that touches files and
// compilers. Never throws; the error names the client's file and the fault.
CircuitBuild build_circuit(const protocol::CircuitAdd& req, const Peer& peer, const SubmitContext& ctx,
                           const CircuitBuildContext& bc) {
  CircuitBuild out;
  const std::string incoming = bc.circuits_dir + "/incoming-" + ctx.token;
  std::error_code ec;
  try {
    CircuitRecord c;
    c.name = req.name;
    c.zkey_source = req.zkey;
    const auto& wasm = req.wasm;
    const auto& cdir = req.c_dir;
    c.source = wasm ? *wasm : cdir.value_or("");
    for (const auto& p : {c.zkey_source, c.source})
      if (p.empty() || p[0] != '/') throw InputError("paths must be absolute: " + p);
    const TakenKey key = take_key(c.zkey_source, peer, ctx);
    c.zkey_sha256 = key.sha256;
    c.n_vars = key.facts.n_vars;
    c.n_public = key.facts.n_public;
    out.vk = key.facts.vk;

    // The generator's sources, copied (with the requester's rights) into a
    // folder of zkfarmd's own: only the copies are hashed, built and kept.
    if (::mkdir(incoming.c_str(), 0700) != 0 && errno != EEXIST)
      throw files::FileError(incoming, errno, "cannot create " + incoming + ": " + std::strerror(errno));
    files::UniqueFd in_dir = files::open_dir(incoming);
    witgen::GeneratorSources src;
    src.dir = incoming;
    if (wasm) {
      files::UniqueFd fd = open_client_file(*wasm, peer);
      struct stat st{};
      if (::fstat(fd.get(), &st) == 0 && bc.wasm_max_bytes && uint64_t(st.st_size) > bc.wasm_max_bytes)
        throw InputError(*wasm + ": " + std::to_string(st.st_size) + " bytes, more than circuit_wasm_max_mib (" +
                         std::to_string(bc.wasm_max_bytes >> 20) + " MiB) allows");
      files::copy_into(fd.get(), *wasm, in_dir.get(), "circuit.wasm", 0400, {}, files::TempMethod::kAuto,
                       files::CopyHash::kNone);
      src.kind = witgen::GeneratorKind::kWasm;
      src.files = {"circuit.wasm"};
      c.kind = "wasm";
    } else {
      std::vector<std::string> names;
      {
        files::FsCredentials as_peer(peer.uid, peer.gid);  // list it as the requester
        for (const auto& e : fs::directory_iterator(*cdir))
          if (e.is_regular_file()) names.push_back(e.path().filename().string());
      }
      try {
        src.files = witgen::native_source_files(names);
      } catch (const witgen::BuildError& e) {
        throw InputError(*cdir + ": " + e.what());
      }
      if (src.files.size() > kMaxSourceFiles)
        throw InputError(*cdir + ": " + std::to_string(src.files.size()) + " source files, more than " +
                         std::to_string(kMaxSourceFiles));
      uint64_t total = 0;
      for (const auto& f : src.files) {
        files::UniqueFd fd = open_client_file(*cdir + "/" + f, peer);
        total += files::copy_into(fd.get(), *cdir + "/" + f, in_dir.get(), f, 0400, {}, files::TempMethod::kAuto,
                                  files::CopyHash::kNone)
                     .bytes;
        if (total > kMaxSourceBytes) throw InputError(*cdir + ": more than 8 GiB of sources");
      }
      src.kind = witgen::GeneratorKind::kNative;
      c.kind = "native";
    }
    c.generator = witgen::source_hash(src);
    witgen::BuildOptions bo;
    // The circuit's own inputs, read with the requester's rights: its witness
    // graph is held to the generator on them first (docs/witness.md).
    if (!req.test_inputs.empty()) {
      if (req.test_inputs.size() > kMaxTestInputs)
        throw InputError("test_inputs: at most " + std::to_string(kMaxTestInputs) + " paths");
      for (const std::string& p : req.test_inputs) {
        if (p.empty() || p[0] != '/') throw InputError("test_inputs: paths must be absolute");
        files::UniqueFd fd = open_client_file(p, peer);
        std::string text;
        char buf[1 << 16];
        for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) throw InputError(p + ": cannot read: " + std::strerror(errno));
          text.append(buf, size_t(n));
          if (text.size() > kMaxTestInputBytes) throw InputError(p + ": a test input of more than 64 MiB");
        }
        bo.graph_test_inputs.push_back(std::move(text));
      }
    }
    bo.witgen_root = bc.witgen_root;
    bo.jobs = bc.jobs;
    bo.timeout = bc.timeout;
    bo.sandbox = bc.build_sandbox;
    bo.memory_bytes = bc.build_memory_bytes;
    bo.graph = bc.graph;
    bo.graph_max_nodes = bc.graph_max_nodes;
    const std::string exe = witgen::cached_generator(src, c.generator, bc.circuits_dir, bo);
    // Used now: housekeeping keeps an unused build for retention_hours from here.
    fs::last_write_time(fs::path(exe).parent_path(), fs::file_time_type::clock::now(), ec);
    const witgen::GeneratorInfo info = witgen::generator_info(exe, bc.info_run, witgen::InfoInputs::kList);
    if (info.prime != scalar_prime_decimal() || info.n8 != 32)
      throw InputError(c.source + ": the circuit is over another field (prime " + info.prime.substr(0, 20) +
                       "…), the key over BN254's r (zkfarm proves bn128 circuits)");
    if (info.witness_size != c.n_vars)
      throw InputError(c.source + ": the circuit has " + std::to_string(info.witness_size) + " signals, " +
                       c.zkey_source + " was made for " + std::to_string(c.n_vars) +
                       " (nVars): they are not of one circuit");
    if (info.inputs) c.inputs = witgen::signal_shapes_json(*info.inputs);
    // The graph as built and checked now: its digest in the journal's record,
    // so a graph file rewritten later (digest and all) is not used.
    if (const witgen::GraphState g = witgen::graph_state(exe); g.present && bc.shared_dir.empty()) {
      try {
        c.graph_sha256 = witgen::graph::graph_file_sha256(g.path);
      } catch (const witgen::graph::GraphError& e) {
        throw InputError(std::string("the circuit's witness graph cannot be read: ") + e.what());
      }
    }
    // The circuit's own test inputs on every add, a build found in the
    // cache as well as one made now (whose graph was held to them already):
    // one that is not JSON, not of the circuit's shape, failing its
    // asserts, or on which graph and generator differ is refused, by name.
    for (size_t k = 0; k < bo.graph_test_inputs.size(); ++k)
      if (std::string fault = witgen::check_test_input(exe, info, bo.graph_test_inputs[k], bc.info_run, c.graph_sha256);
          !fault.empty())
        throw InputError(req.test_inputs[k] + ": " + fault);
    if (!bc.shared_dir.empty()) {
      // Every host of the queue fetches this build to run jobs of the
      // circuit (claim_prep.cpp), checking it by these hashes.
      c.exe_sha256 = publish_generator_file(exe, bc.shared_dir);
      if (fs::exists(exe + ".dat")) c.dat_sha256 = publish_generator_file(exe + ".dat", bc.shared_dir);
      // Its witness graph too, and whether `auto` keeps the generator (witgen::graph_state).
      if (const witgen::GraphState g = witgen::graph_state(exe); g.present) {
        c.graph_file_sha256 = publish_generator_file(g.path, bc.shared_dir);
        c.graph_slower = witgen::graph_slower_text(g);
      }
    }
    out.circuit = std::move(c);
  } catch (const InputError& e) {
    out.error = e.what();
  } catch (const files::FileError& e) {
    out.error = e.what();
  } catch (const witgen::BuildError& e) {
    out.error = std::string("the witness generator cannot be built: ") + e.what();
  } catch (const witgen::GenerateError& e) {
    out.error = std::string("the built generator does not answer: ") + e.what();
  } catch (const protocol::ProtocolError& e) {
    out.error = std::string("bad request: ") + e.what();
  } catch (const std::exception& e) {
    out.error = std::string("cannot add the circuit: ") + e.what();
  }
  fs::remove_all(incoming, ec);
  return out;
}

}  // namespace zkfarm::supervisor
