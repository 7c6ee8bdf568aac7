#include "supervisor/intake/circuit_registry.hpp"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "protocol/messages.hpp"
#include "supervisor/clock.hpp"
#include "witgen/witness_engine.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {
// Circuit names: 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'
// (they name folders and appear in commands).
bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64 || n[0] == '.' || n[0] == '-') return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}
}  // namespace

CircuitRegistry::CircuitRegistry(const Config& cfg, std::shared_ptr<spdlog::logger> log, bool shared,
                                 std::string witgen_root, EventBus& bus, Hooks hooks)
    : cfg_(cfg),
      log_(std::move(log)),
      shared_(shared),
      witgen_root_(std::move(witgen_root)),
      bus_(bus),
      hooks_(std::move(hooks)),
      build_pool_(cfg.generator_builds, 16) {}

std::optional<CircuitForSubmit> CircuitRegistry::for_submit(const std::string& name) const {
  auto it = circuits_.find(name);
  if (it == circuits_.end()) return std::nullopt;
  // A shared queue keeps circuits' keys in the shared dir (where circuit add put them).
  return CircuitForSubmit{it->second, generator_path(it->second.generator),
                          (shared_ ? cfg_.shared_dir + "/keys/" : cfg_.state_dir + "/inputs/keys/") +
                              it->second.zkey_sha256 + ".zkey"};
}

std::string CircuitRegistry::generator_path(const std::string& hash) const {
  return cfg_.state_dir + "/circuits/" + hash + "/generator";
}

const CircuitRecord* CircuitRegistry::by_generator(const std::string& exe) const {
  // STATE/circuits/HASH/generator: the hash named once, not a path built per circuit (each dispatch asks).
  const std::string hash = std::filesystem::path(exe).parent_path().filename().string();
  if (generator_path(hash) != exe) return nullptr;
  for (const auto& [name, c] : circuits_)
    if (c.generator == hash) return &c;
  return nullptr;
}

void CircuitRegistry::replace_all(std::vector<CircuitRecord> circuits) {
  circuits_.clear();
  for (auto& c : circuits) circuits_.emplace(c.name, std::move(c));
}

void CircuitRegistry::start_add(const std::string& identity, const protocol::CircuitAdd& req, const Peer& peer, Role role,
                                bool stopping) {
  auto refuse = [&](const std::string& why) { reply(identity, {{"ok", false}, {"error", why}}); };
  const std::string& name = req.name;
  if (!valid_name(name))
    return refuse("circuit names are 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-'");
  const bool native = req.c_dir.has_value();
  if (native == req.wasm.has_value()) return refuse("circuit add needs --wasm FILE or --c DIR (one of them)");
  if (native && role != Role::kAdmin)
    return refuse("permission denied: a --c circuit is native code that runs with zkfarmd's rights; adding one is "
                  "for root, zkfarmd's user and members of admin_group (a --wasm circuit runs sandboxed: anyone "
                  "may add it)");
  if (auto it = circuits_.find(name); it != circuits_.end() && role != Role::kAdmin && it->second.owner_uid != peer.uid)
    return refuse("circuit " + name + " exists and is uid " + std::to_string(it->second.owner_uid) + "'s");
  if (building_.count(name)) return refuse("circuit " + name + " is being added already");
  if (stopping) return refuse("zkfarmd is stopping");
  // One build slot per submitter: a uid, or the tenant zkfarm-api (an admin)
  // names, so that one submitter's builds never queue another's.
  std::string submitter = "uid " + std::to_string(peer.uid);
  if (req.submitter && role == Role::kAdmin && !req.submitter->empty())
    submitter = "tenant " + req.submitter->substr(0, 128);
  for (const auto& p : pending_builds_)
    if (p.submitter == submitter)
      return refuse(submitter + " is adding circuit " + p.name + " already: one circuit build at a time per "
                    "submitter; retry when it has finished");
  witgen::Sandbox build_sandbox, run_sandbox;
  try {
    const auto pool = witgen::sandbox_pool(cfg_.sandbox_uid_base, cfg_.sandbox_uid_count);
    build_sandbox = witgen::make_sandbox(cfg_.sandbox_user, cfg_.circuit_build_cpu_s, pool);
    run_sandbox = witgen::make_sandbox(cfg_.sandbox_user, cfg_.witness_cpu_s, pool);
  } catch (const witgen::SandboxError& e) {
    log_->error("circuit {}: {}", name, e.what());
    return refuse(e.what());
  }
  SubmitContext ctx = hooks_.submit_context();
  CircuitBuildContext bc{cfg_.state_dir + "/circuits", witgen_root_,
                         cfg_.generator_build_jobs ? cfg_.generator_build_jobs
                                                   : std::max(1u, std::thread::hardware_concurrency()),
                         std::chrono::milliseconds(cfg_.generator_build_timeout_ms), shared_ ? cfg_.shared_dir : ""};
  bc.build_sandbox = build_sandbox;
  bc.build_memory_bytes = cfg_.circuit_build_memory_mib << 20;
  bc.wasm_max_bytes = cfg_.circuit_wasm_max_mib << 20;
  bc.graph = cfg_.witness_engine != "generator";
  bc.graph_max_nodes = cfg_.witness_graph_max_nodes;
  bc.info_run.timeout = std::chrono::milliseconds(60000);
  bc.info_run.memory_bytes = cfg_.witness_memory_mib << 20;
  bc.info_run.sandbox = run_sandbox;
  auto build = build_pool_.run([req, peer, ctx, bc] { return build_circuit(req, peer, ctx, bc); });
  if (!build)
    return reply(identity, {{"ok", false},
                                   {"error", "zkfarmd is busy: too many circuits are being built; retry later"},
                                   {"busy", true},
                                   {"retry_after_ms", 1000}});
  building_.insert(name);
  log_->info("circuit {}: uid {} adds it ({} generator); building", name, peer.uid, native ? "native" : "wasm");
  pending_builds_.push_back({identity, std::move(*build), name, peer.uid, submitter});
}

void CircuitRegistry::finish_adds() {
  for (auto it = pending_builds_.begin(); it != pending_builds_.end();) {
    if (it->result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++it;
      continue;
    }
    CircuitBuild b;
    try {
      b = it->result.get();
    } catch (const std::exception& e) {
      b.error = std::string("cannot add the circuit: ") + e.what();
    }
    const std::string identity = it->identity, name = it->name;
    const uint32_t owner = it->owner_uid;
    it = pending_builds_.erase(it);
    if (!b.circuit) {
      building_.erase(name);
      log_->warn("circuit {}: not added: {}", name, b.error);
      reply(identity, {{"ok", false}, {"error", "circuit " + name + ": " + b.error}});
      continue;
    }
    auto record = std::make_shared<CircuitRecord>(*b.circuit);
    record->added_ms = wall_ms();
    record->owner_uid = owner;
    if (b.vk) hooks_.remember_vk(record->zkey_sha256, b.vk);
    // The name stays in building_ until the write returns: until then no
    // job and no circuit names the key copy the build made (building()).
    hooks_.put(record, [this, identity, record](const std::string& error) {
      building_.erase(record->name);
      if (!error.empty())
        return reply(identity, {{"ok", false}, {"error", "cannot journal the circuit: " + error}});
      circuits_[record->name] = *record;
      log_->info("circuit {}: added ({} generator {}, key {}, {} signals, {} public)", record->name, record->kind,
                 record->generator.substr(0, 16), record->zkey_sha256.substr(0, 16), record->n_vars,
                 record->n_public);
      reply(identity, {{"ok", true},
                              {"circuit", circuit_json(*record, witgen::witness_engine_line(
                                                                    generator_path(record->generator), record->kind))}});
    });
  }
}

json CircuitRegistry::list(const Peer& peer, Role role) const {
  // Any user may prove with any circuit, so every name is listed; where
  // another user's files came from and who they are is for admins and the
  // owner only.
  json list = json::array();
  for (const auto& [name, c] : circuits_) {
    json j = circuit_json(c, witgen::witness_engine_line(generator_path(c.generator), c.kind));
    if (role != Role::kAdmin && c.owner_uid != peer.uid)
      for (const char* k : {"zkey", "source", "owner_uid"}) j.erase(k);
    list.push_back(std::move(j));
  }
  return {{"ok", true}, {"circuits", list}};
}

json CircuitRegistry::remove(const protocol::CircuitRemove& req, const Peer& peer, Role role) {
  const std::string& name = req.name;
  auto it = circuits_.find(name);
  if (it == circuits_.end()) return {{"ok", false}, {"error", "no circuit '" + name.substr(0, 64) + "'"}};
  if (role != Role::kAdmin && it->second.owner_uid != peer.uid)
    return {{"ok", false}, {"error", "permission denied: circuit " + name + " is uid " +
                                         std::to_string(it->second.owner_uid) + "'s (its owner or an admin may remove it)"}};
  circuits_.erase(it);
  hooks_.remove(name);
  log_->info("circuit {}: removed by uid {} (accepted jobs of it go on)", name, peer.uid);
  return {{"ok", true}};
}

}  // namespace zkfarm::supervisor
