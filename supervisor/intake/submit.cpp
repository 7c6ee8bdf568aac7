// Accepting a job. The key and every witness are taken by content: each is
// opened with the submitter's own rights (a FIFO, device or socket is refused
// without blocking), copied with read(2) into the state dir while it is
// hashed, and only the private copy is checked and ever used (the key under
// inputs/keys/SHA256.zkey, shared by every job of that key; the witnesses
// under inputs/jobs/TOKEN/K.wtns). A file rewritten, re-pointed or truncated
// after submit therefore cannot change a proof or crash anything, and nothing
// zkfarmd maps can shrink under it (docs/decisions.md, "Inputs by content").
// The checks run on a bounded pool of threads (check_pool.hpp) with a timeout;
// the loop journals an accepted job (durable before the client hears its id).
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <spdlog/fmt/fmt.h>

#include "files/file_error.hpp"
#include "files/fs_credentials.hpp"
#include "files/input_file.hpp"
#include "files/safe_write.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "protocol/messages.hpp"
#include "supervisor/model/peer.hpp"
#include "supervisor/intake/key_cache.hpp"
#include "supervisor/intake/submission.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/pipeline/proof_verifier.hpp"
#include "witgen/input_json.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A job's partitions at most: each is a file copied and a row journaled.
constexpr size_t kMaxPartitions = 100000;

// What a check given up at its deadline throws (the client was told already).
InputError stopped_check() { return InputError("the check was stopped: it passed submit_timeout_ms"); }

// A copy's progress callback that ends the copy once `cancel` is set.
files::CopyProgress stop_when(const std::atomic<bool>& cancel) {
  return [&cancel](uint64_t) {
    if (cancel.load()) throw stopped_check();
  };
}

}  // namespace

std::string random_token() {
  unsigned char b[12];
  if (getrandom(b, sizeof b, 0) != ssize_t(sizeof b)) throw std::runtime_error("getrandom failed");
  static const char* hex = "0123456789abcdef";
  std::string t;
  for (unsigned char c : b) {
    t += hex[c >> 4];
    t += hex[c & 15];
  }
  return t;
}

namespace {

// Whether `peer` may read a file with stat `st` by its mode bits (owner,
// group, other; ACLs are not consulted). Used only when zkfarmd is not root
// and so cannot take the peer's rights (files/fs_credentials.hpp).
bool mode_allows_read(const struct stat& st, const Peer& peer) {
  if (st.st_uid == peer.uid) return st.st_mode & S_IRUSR;
  for (gid_t g : groups_of(peer.uid, peer.gid))
    if (g == st.st_gid) return st.st_mode & S_IRGRP;
  return st.st_mode & S_IROTH;
}

}  // namespace

// Opens a client's input with the client's rights and refuses what is not a
// regular file (files/input_file.hpp).
files::UniqueFd open_client_file(const std::string& path, const Peer& peer) {
  files::UniqueFd fd;
  {
    files::FsCredentials as_peer(peer.uid, peer.gid);  // a no-op unless zkfarmd is root
    fd = files::open_regular_file(path);
    if (!as_peer.active() && peer.uid != ::geteuid()) {
      struct stat st {};
      if (::fstat(fd.get(), &st) != 0 || !mode_allows_read(st, peer))
        throw files::FileError(path, EACCES, path + ": cannot open: Permission denied");
    }
  }
  return fd;
}

namespace {

SubmitCheck refused(std::string why) {
  SubmitCheck c;
  c.error = std::move(why);
  return c;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// One witness taken: opened with the submitter's rights, copied into the
// job's folder as K.wtns (no hash: nothing names a witness by its content),
// its private copy checked against the key and its public signals read.
// Throws what the caller turns into the job's refusal.
void take_witness(const std::string& path, uint32_t k, const Peer& peer, const std::string& zkey_source,
                  const std::string& zkey, const KeyFacts& key, int dir_fd, const std::string& job_dir,
                  Partition& p, uint64_t& bytes, bool hash) {
  files::UniqueFd fd = open_client_file(path, peer);
  const std::string name = std::to_string(k) + ".wtns";
  // Hashed only for a shared queue, whose hosts check the copy by it.
  files::CopyResult c = files::copy_into(fd.get(), path, dir_fd, name, 0400, {}, files::TempMethod::kAuto,
                                         hash ? files::CopyHash::kSha256 : files::CopyHash::kNone);
  bytes = c.bytes;
  p.wtns_sha256 = c.sha256_hex;
  p.wtns = job_dir + "/" + name;
  try {
    Wtns wtns = Wtns::open(p.wtns);
    check_witness_matches(key.n_vars, zkey, wtns, key.curve);
    // public.json now: the proof's arrival then needs no file.
    std::vector<U256> pub(size_t(key.n_public) + 1);
    std::memcpy(pub.data(), wtns.values.data(), pub.size() * 32);
    p.public_json = public_to_json(pub.data(), key.n_public);
    p.public_values.assign(pub.begin() + 1, pub.end());
  } catch (const InputError& e) {
    std::string m = e.what();
    if (auto at = m.find(p.wtns); at != std::string::npos) m.replace(at, p.wtns.size(), path);
    if (auto at = m.find(zkey); at != std::string::npos) m.replace(at, zkey.size(), zkey_source);
    throw std::runtime_error(m);
  }
}

// Takes every partition's file of a job on `pool` (`take(k)` copies and
// checks file k, returning the bytes copied) and waits for all of them. The
// first failure by index (so the same submit is refused with the same
// message however the threads ran) is rethrown; after one failure the rest
// are skipped. Returns the bytes copied.
uint64_t take_all(size_t n, CheckPool& pool, const std::atomic<bool>& cancel,
                  const std::function<uint64_t(size_t)>& take) {
  struct Shared {
    std::mutex m;
    std::condition_variable cv;
    size_t left;
    std::atomic<bool> failed{false};
    std::vector<std::exception_ptr> errors;
    std::vector<uint64_t> bytes;
  } st;
  st.left = n;
  st.errors.resize(n);
  st.bytes.resize(n);
  auto one = [&](size_t k) {
    if (!st.failed && cancel.load()) {
      st.errors[k] = std::make_exception_ptr(stopped_check());
      st.failed = true;
    }
    if (!st.failed) {
      try {
        st.bytes[k] = take(k);
      } catch (...) {
        st.errors[k] = std::current_exception();
        st.failed = true;
      }
    }
    std::lock_guard lock(st.m);
    if (--st.left == 0) st.cv.notify_all();
  };
  for (size_t k = 0; k < n; ++k)
    if (!pool.post([&one, k] { one(k); })) one(k);  // a full queue: this thread copies it itself
  {
    std::unique_lock lock(st.m);
    st.cv.wait(lock, [&] { return st.left == 0; });
  }
  for (const auto& e : st.errors)
    if (e) std::rethrow_exception(e);
  uint64_t total = 0;
  for (uint64_t b : st.bytes) total += b;
  return total;
}

}  // namespace

std::optional<KeyFacts> CheckedKeys::lookup(const std::string& sha) const {
  std::lock_guard<std::mutex> lock(m_);
  for (const auto& [k, v] : entries_)
    if (k == sha) return v;
  return std::nullopt;
}

void CheckedKeys::remember(const std::string& sha, const KeyFacts& facts) {
  std::lock_guard<std::mutex> lock(m_);
  if (entries_.size() >= 64) entries_.erase(entries_.begin());
  entries_.emplace_back(sha, facts);
}

TakenKey take_key(const std::string& source, const Peer& peer, const SubmitContext& ctx) {
  // One private copy per content (inputs/keys/SHA256.zkey). An unchanged
  // source (same inode, size, mtime and ctime) is not read again.
  const auto t_key = std::chrono::steady_clock::now();
  TakenKey k;
  files::UniqueFd key_fd = open_client_file(source, peer);
  const files::FileIdentity ident = files::FileIdentity::of(key_fd.get(), source);
  std::string sha = ctx.key_hashes->lookup(ident);
  files::UniqueFd keys_dir = files::open_dir(ctx.inputs_dir + "/keys");
  if (sha.empty() || !files::exists_nofollow(keys_dir.get(), ctx.inputs_dir + "/keys", sha + ".zkey")) {
    const std::string incoming = "incoming-" + ctx.token + ".zkey";
    files::CopyResult c = files::copy_into(key_fd.get(), source, keys_dir.get(), incoming, 0400, stop_when(*ctx.cancel));
    sha = c.sha256_hex;
    if (::renameat(keys_dir.get(), incoming.c_str(), keys_dir.get(), (sha + ".zkey").c_str()) != 0) {
      const int err = errno;
      ::unlinkat(keys_dir.get(), incoming.c_str(), 0);
      throw files::FileError(ctx.inputs_dir + "/keys", err, ctx.inputs_dir + "/keys: cannot store the key: " + std::strerror(err));
    }
    ctx.key_hashes->remember(c.source, sha);
  } else {
    // Used again: its mtime says so (housekeeping keeps keys used within the
    // hour; a shared queue's other hosts clean the shared copies by it).
    ::utimensat(keys_dir.get(), (sha + ".zkey").c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
  }
  key_fd.reset();
  k.path = ctx.inputs_dir + "/keys/" + sha + ".zkey";
  k.sha256 = sha;
  k.facts = stored_key_facts(k.path, source, sha, *ctx.checked_keys, &k.cached);
  k.ms = ms_since(t_key);
  return k;
}

KeyFacts stored_key_facts(const std::string& path, const std::string& source, const std::string& sha,
                          CheckedKeys& checked, bool* cached) {
  // The private copy is immutable and named by its content: a key checked
  // once (Zkey::open reads every coordinate of it) is not checked again.
  std::optional<KeyFacts> facts = checked.lookup(sha);
  if (cached) *cached = facts.has_value();
  if (facts) return *facts;
  try {
    const Zkey key = Zkey::open(path);
    // The header points every proof uses, on their curves and (BLS12-381's
    // G1) in their subgroup: a bad key is refused here, not after synthesis.
    with_curve(key.curve, [&]<class C>(std::type_identity<C>) { check_key_points_of<C>(key); });
    facts = KeyFacts{key.n_vars, key.n_public, key.curve, ProofVerifier::from_zkey(key)};
  } catch (const InputError& e) {  // name the client's file, not our copy
    std::string m = e.what();
    if (auto at = m.find(path); at != std::string::npos) m.replace(at, path.size(), source);
    throw InputError(m);
  }
  checked.remember(sha, *facts);
  return *facts;
}

namespace {

// A request's paths, `what` each: 1..kMaxPartitions of them, all absolute.
const std::vector<std::string>& path_list(const std::vector<std::string>& paths, const char* what) {
  if (paths.empty()) throw InputError(std::string("a job needs at least one ") + what);
  if (paths.size() > kMaxPartitions)
    throw InputError("a job may have at most " + std::to_string(kMaxPartitions) + " " + what + "s");
  for (const auto& p : paths)
    if (p.empty() || p[0] != '/') throw InputError("paths must be absolute: " + p);
  return paths;
}

// BN254's r as a .wtns header holds it: the prime every input value is below.
std::vector<uint8_t> scalar_prime_le() {
  std::vector<uint8_t> p(32);
  for (int i = 0; i < 32; ++i) p[size_t(i)] = uint8_t(FrParams::kModulus[i / 8] >> (8 * (i % 8)));
  return p;
}

// A circuit's input signals, as check_signals asks for them.
struct InputShape {
  std::unordered_map<uint64_t, uint32_t> sizes;  ///< fnv1a(name) -> values
  uint64_t input_count = 0;
};

// The shape journaled with a circuit; nullopt when none was (or, never
// expected, it does not read back: the generator still checks at synthesis).
std::optional<InputShape> input_shape(const CircuitRecord& c) {
  if (c.inputs.empty()) return std::nullopt;
  try {
    InputShape shape;
    for (const auto& s : witgen::signal_shapes_from_json(c.inputs)) {
      shape.sizes[s.hash] = s.size;
      shape.input_count += s.size;
    }
    return shape;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// One circom input taken: opened with the submitter's rights, no larger than
// input_max_bytes (and, with the job's other inputs, job_input_max_bytes,
// counted in `job_bytes`), copied into the job's folder as K.json and read
// back as a stream: its values must be field elements, within
// input_max_signals and input_max_values (witgen/input_json.hpp: one pass,
// linear time, no value kept), and its signals the circuit's inputs, each
// with the circuit's number of values, none missing (`shape`: the names'
// hashes and counts only). With no shape (a circuit added before zkfarmd
// asked generators for their inputs) that is left to the generator, at
// synthesis, which fails the job instead.
uint64_t take_input(const std::string& path, uint32_t k, const Peer& peer, const SubmitContext& ctx, int dir_fd,
                    const std::string& job_dir, std::atomic<uint64_t>& job_bytes, const InputShape* shape,
                    Partition& p) {
  files::UniqueFd fd = open_client_file(path, peer);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw files::FileError(path, errno, path + ": cannot stat: " + std::strerror(errno));
  if (uint64_t(st.st_size) > ctx.input_max_bytes)
    throw InputError(path + ": " + std::to_string(st.st_size) + " bytes, more than input_max_bytes (" +
                     std::to_string(ctx.input_max_bytes) + ")");
  if (job_bytes += uint64_t(st.st_size); job_bytes > ctx.job_input_max_bytes)
    throw InputError(path + ": the job's inputs come to more than job_input_max_bytes (" +
                     std::to_string(ctx.job_input_max_bytes) + " bytes): split it into several jobs");
  const std::string name = std::to_string(k) + ".json";
  const uint64_t bytes = files::copy_into(fd.get(), path, dir_fd, name, 0400, stop_when(*ctx.cancel),
                                          files::TempMethod::kAuto, files::CopyHash::kNone)
                             .bytes;
  p.input = job_dir + "/" + name;
  p.input_source = path;
  static const std::vector<uint8_t> prime = scalar_prime_le();
  witgen::InputLimits limits;
  limits.max_signals = ctx.input_max_signals;
  limits.max_values = ctx.input_max_values;
  limits.cancel = ctx.cancel.get();
  std::ifstream in(p.input, std::ios::binary);
  if (!in) throw files::FileError(p.input, errno, p.input + ": cannot read the copy back");
  try {
    const witgen::InputSummary summary = witgen::check_input(in, prime, limits);
    if (shape) {
      witgen::check_signals(
          summary.per_signal,
          [&](uint64_t hash) -> std::optional<uint32_t> {
            auto it = shape->sizes.find(hash);
            if (it == shape->sizes.end()) return std::nullopt;
            return it->second;
          },
          shape->input_count);
    }
  } catch (const witgen::InputFault& e) {
    if (ctx.cancel->load()) throw stopped_check();
    throw InputError(path + ": " + e.what());
  }
  return bytes;
}

}  // namespace

// Runs on a CheckPool thread: reads only its arguments and the files they name.
SubmitCheck check_submission(const protocol::Submit& req, const Peer& peer, const SubmitContext& ctx) {
  SubmitCheck out;
  out.token = ctx.token;
  const std::string job_dir = ctx.inputs_dir + "/jobs/" + ctx.token;
  try {
    Job job;
    // No `out` (zkfarm-api, docs/api.md): nothing is written; the client reads
    // the proofs with `result`.
    job.out = req.out;
    job.owner_uid = peer.uid;
    job.owner_gid = peer.gid;
    auto prio = parse_priority(req.priority);
    if (!prio) return refused("priority must be low, normal, high or critical");
    job.priority = *prio;
    if (!job.out.empty() && job.out[0] != '/') return refused("paths must be absolute: " + job.out);
    const bool inputs = req.circuit.has_value();
    const std::vector<std::string>& paths = inputs ? path_list(req.inputs, "input") : path_list(req.wtns, "witness");

    // The key: a circuit's (registered with it), or the one the client names.
    KeyFacts facts;
    if (inputs) {
      if (!ctx.circuit)
        return refused("no circuit '" + req.circuit->substr(0, 64) +
                       "' (zkfarmctl circuit list; circuit add registers one)");
      const auto t_key = std::chrono::steady_clock::now();
      job.circuit = ctx.circuit->record.name;
      job.generator = ctx.circuit->generator;
      job.generator_exe_sha256 = ctx.circuit->record.exe_sha256;
      job.generator_dat_sha256 = ctx.circuit->record.dat_sha256;
      job.generator_graph_sha256 = ctx.circuit->record.graph_file_sha256;
      job.generator_graph_slower = ctx.circuit->record.graph_slower;
      job.zkey = ctx.circuit->zkey;
      job.zkey_sha256 = ctx.circuit->record.zkey_sha256;
      job.zkey_source = ctx.circuit->record.zkey_source;
      bool cached = false;
      facts = stored_key_facts(job.zkey, job.zkey_source, job.zkey_sha256, *ctx.checked_keys, &cached);
      out.key_cached = cached;
      out.key_ms = ms_since(t_key);
    } else {
      job.zkey_source = req.zkey;
      if (job.zkey_source.empty() || job.zkey_source[0] != '/') return refused("paths must be absolute: " + job.zkey_source);
      TakenKey k = take_key(job.zkey_source, peer, ctx);
      job.zkey = k.path;
      job.zkey_sha256 = k.sha256;
      facts = k.facts;
      out.key_cached = k.cached;
      out.key_ms = k.ms;
    }
    out.vk = facts.vk;

    // The witnesses or inputs: copied and checked on the copy pool, several
    // at once and in the order jobs were submitted (first submitted, first
    // accepted), into this job's own folder.
    const auto t_wtns = std::chrono::steady_clock::now();
    if (::mkdir(job_dir.c_str(), 0700) != 0) {
      const int err = errno;
      throw files::FileError(job_dir, err, "cannot create " + job_dir + ": " + std::strerror(err));
    }
    files::UniqueFd dir = files::open_dir(job_dir);
    job.parts.resize(paths.size());
    if (inputs) {
      std::atomic<uint64_t> job_bytes{0};
      const std::optional<InputShape> shape = input_shape(ctx.circuit->record);
      out.witness_bytes = take_all(paths.size(), *ctx.copy_pool, *ctx.cancel, [&](size_t k) {
        return take_input(paths[k], uint32_t(k), peer, ctx, dir.get(), job_dir, job_bytes, shape ? &*shape : nullptr,
                          job.parts[k]);
      });
    } else {
      out.witness_bytes = take_all(paths.size(), *ctx.copy_pool, *ctx.cancel, [&](size_t k) {
        uint64_t bytes = 0;
        take_witness(paths[k], uint32_t(k), peer, job.zkey_source, job.zkey, facts, dir.get(), job_dir, job.parts[k],
                     bytes, ctx.shared);
        return bytes;
      });
    }
    out.witness_ms = ms_since(t_wtns);
    job.slot_bytes = uint64_t(facts.n_vars) * 32;  // witness_bytes(key): a slot carries the witness
    job.n_public = facts.n_public;
    // The output folder, made now (as the submitter) so a bad --out is refused
    // at once rather than after the proofs. When zkfarmd cannot take the
    // submitter's rights (it runs as another user, not root), it writes
    // nothing there: the client writes the results (`zkfarmctl wait`,
    // `result`), so they land only where the submitter may write.
    job.files_dir = job_dir;
    // A shared queue's results are written by clients on whichever host they ask.
    job.client_delivery = ctx.shared || job.out.empty() || !files::can_act_as(peer.uid);
    if (!job.client_delivery) {
      files::FsCredentials as_peer(peer.uid, peer.gid);
      files::UniqueFd out_dir = files::create_dir_safe(job.out, 0755);
      // Kept as the kernel resolved it: delivery walks this path again with
      // no symlink allowed anywhere on it (delivery.cpp), so a folder on the
      // way that someone swaps for a symlink after this reply (a folder of
      // another user's inside the path) cannot send root's writes elsewhere.
      job.out = files::resolved_dir_path(out_dir.get(), job.out);
    }
    out.job = std::move(job);
  } catch (const InputError& e) {
    out.error = e.what();
  } catch (const files::FileError& e) {
    out.error = e.what();
    // The state dir's own filesystem refusing a copy (full, read-only, failing)
    // is the farm's fault, not the client's: intake closes until it works again.
    const int c = e.code();
    if ((c == ENOSPC || c == EDQUOT || c == EROFS || c == EIO) && e.path().rfind(ctx.inputs_dir, 0) == 0) {
      out.storage_fault = "cannot keep a copy of the job's files in " + ctx.inputs_dir + ": " + std::strerror(c);
      out.error = out.storage_fault;
    }
  } catch (const protocol::ProtocolError& e) {
    out.error = std::string("bad request: ") + e.what();
  } catch (const std::exception& e) {
    out.error = std::string("cannot accept the job: ") + e.what();
  }
  if (!out.job) {
    std::error_code ec;
    fs::remove_all(job_dir, ec);  // the witnesses copied so far
  }
  return out;
}

std::string KeyHashCache::lookup(const files::FileIdentity& id) const {
  std::lock_guard<std::mutex> lock(m_);
  for (const auto& [k, v] : entries_)
    if (k == id) return v;
  return {};
}

void KeyHashCache::remember(const files::FileIdentity& id, const std::string& sha) {
  std::lock_guard<std::mutex> lock(m_);
  if (entries_.size() >= 256) entries_.erase(entries_.begin());
  entries_.emplace_back(id, sha);
}

}  // namespace zkfarm::supervisor
