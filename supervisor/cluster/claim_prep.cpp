#include "supervisor/cluster/claim_prep.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "files/input_file.hpp"
#include "files/file_error.hpp"
#include "files/safe_write.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "supervisor/intake/submission.hpp"

namespace zkfarm::supervisor {

namespace fs = std::filesystem;

namespace {

// A fault of this host's view of the shared mount rather than of the file.
bool host_errno(int e) { return e == EIO || e == ESTALE || e == ENOTCONN || e == ETIMEDOUT || e == EHOSTDOWN; }

// A path under the shared dir as the queue stores it: relative, no "..", no
// empty or "." components (a row written by a hostile peer must not point
// outside the shared dir).
bool safe_relative(const std::string& rel) {
  if (rel.empty() || rel[0] == '/' || rel.size() > 4096) return false;
  size_t start = 0;
  while (start <= rel.size()) {
    const size_t end = std::min(rel.find('/', start), rel.size());
    const std::string part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

// Opens shared/REL for reading without following a symlink at its last
// component, refusing anything but a regular file (never blocks on a FIFO).
files::UniqueFd open_shared(const std::string& shared_dir, const std::string& rel) {
  const std::string path = shared_dir + "/" + rel;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw files::FileError(path, err, path + ": cannot open: " + std::strerror(err));
  }
  files::UniqueFd out(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw files::FileError(path, EINVAL, path + ": not a regular file");
  return out;
}

// Copies shared/REL into `dir` as `name`, checking its SHA-256; a mismatch
// removes the copy and throws InputError naming the shared file.
void copy_checked(const std::string& shared_dir, const std::string& rel, const std::string& want_sha,
                  const std::string& dir, const std::string& name, mode_t mode = 0400) {
  files::UniqueFd src = open_shared(shared_dir, rel);
  files::UniqueFd d = files::open_dir(dir);
  const std::string path = shared_dir + "/" + rel;
  files::CopyResult c = files::copy_into(src.get(), path, d.get(), name, mode);
  if (c.sha256_hex != want_sha) {
    ::unlinkat(d.get(), name.c_str(), 0);
    throw InputError(path + ": its SHA-256 is " + c.sha256_hex + ", not " + want_sha +
                     " as the queue says: the shared copy was changed or damaged");
  }
}

}  // namespace

bool is_sha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

PreparedClaim prepare_claim(const ClaimedPartition& c, const std::string& zkey_sha256, const ClaimDirs& dirs,
                            CheckedKeys& checked, const GeneratorFiles& generator) {
  PreparedClaim out;
  out.claim = c;
  out.zkey_sha256 = zkey_sha256;
  const std::string token = std::to_string(c.lease.token);
  try {
    // The key: once per host, kept by its hash (and checked by it).
    if (!is_sha256(zkey_sha256))
      throw InputError("the queue names a key by '" + zkey_sha256.substr(0, 80) + "', not a SHA-256");
    const std::string key_name = zkey_sha256 + ".zkey";
    if (!files::exists_nofollow(dirs.keys_dir, key_name)) {
      const std::string incoming = "incoming-" + token + ".zkey";
      copy_checked(dirs.shared_dir, "keys/" + key_name, zkey_sha256, dirs.keys_dir, incoming);
      if (::rename((dirs.keys_dir + "/" + incoming).c_str(), (dirs.keys_dir + "/" + key_name).c_str()) != 0) {
        const int err = errno;
        ::unlink((dirs.keys_dir + "/" + incoming).c_str());
        throw files::FileError(dirs.keys_dir, err, dirs.keys_dir + ": cannot store the key: " + std::strerror(err));
      }
    }
    out.zkey = dirs.keys_dir + "/" + key_name;
    out.key = stored_key_facts(out.zkey, dirs.shared_dir + "/keys/" + key_name, zkey_sha256, checked);
    if (!generator.path.empty() && !files::exists_nofollow(fs::path(generator.path).parent_path().string(),
                                                          "generator")) {
      // A job of inputs whose circuit was built on another host: its build,
      // by the hashes in the job's row, into STATE/circuits/HASH/.
      if (!is_sha256(generator.exe_sha256) || (!generator.dat_sha256.empty() && !is_sha256(generator.dat_sha256)) ||
          (!generator.graph_sha256.empty() && !is_sha256(generator.graph_sha256)) || generator.graph_slower.size() > 1024)
        throw InputError("the queue names no generator build for " + generator.path +
                         " (its circuit was added on a host without a shared queue?)");
      const std::string dir = fs::path(generator.path).parent_path().string();
      if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw files::FileError(dir, errno, dir + ": cannot create: " + std::strerror(errno));
      if (!generator.dat_sha256.empty())
        copy_checked(dirs.shared_dir, "generators/" + generator.dat_sha256, generator.dat_sha256, dir, "generator.dat");
      // The graph before the generator: the generator's presence says the build is here.
      if (!generator.graph_sha256.empty()) {
        copy_checked(dirs.shared_dir, "generators/" + generator.graph_sha256, generator.graph_sha256, dir, "graph");
        if (!generator.graph_slower.empty()) files::write_file_safe(dir, "graph.slower", generator.graph_slower, 0400);
      }
      copy_checked(dirs.shared_dir, "generators/" + generator.exe_sha256, generator.exe_sha256, dir, "generator", 0500);
    }
    if (!c.input_name.empty() || !c.input.empty()) {
      // circom inputs: their bytes came with the claim.
      files::write_file_safe(dirs.claims_dir, token + ".json", c.input, 0400);
      out.input = dirs.claims_dir + "/" + token + ".json";
    } else {
      if (!safe_relative(c.wtns)) throw InputError("the queue names the witness '" + c.wtns.substr(0, 200) + "'");
      copy_checked(dirs.shared_dir, c.wtns, c.wtns_sha256, dirs.claims_dir, token + ".wtns");
      out.wtns = dirs.claims_dir + "/" + token + ".wtns";
      // Checked against the key as at submit, and its public signals read
      // from this host's copy (not taken from the queue's row).
      Wtns wtns = Wtns::open(out.wtns);
      check_witness_matches(out.key.n_vars, out.zkey, wtns, out.key.curve);
      std::vector<U256> pub(size_t(out.key.n_public) + 1);
      std::memcpy(pub.data(), wtns.values.data(), pub.size() * 32);
      out.public_json = public_to_json(pub.data(), out.key.n_public);
      out.public_values.assign(pub.begin() + 1, pub.end());
    }
  } catch (const files::FileError& e) {
    out.error = e.what();
    // This host's fault (the claim goes back uncounted, claims pause): its
    // mount failing, a path outside the shared dir, or a missing file while
    // the queue's marker is missing too — the shared folder is not mounted
    // here, and every file would look missing.
    out.host_fault = host_errno(e.code()) || e.path().rfind(dirs.shared_dir, 0) != 0 ||
                     (e.code() == ENOENT && !files::exists_nofollow(dirs.shared_dir, kSharedMarker));
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

void remove_claim_files(const ClaimDirs& dirs, uint64_t token) {
  const std::string t = std::to_string(token);
  for (const char* ext : {".wtns", ".json"}) ::unlink((dirs.claims_dir + "/" + t + ext).c_str());
}

}  // namespace zkfarm::supervisor
