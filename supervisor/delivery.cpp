// Delivery: a proved partition's proof.json and public.json written into the
// job's output folder (or a `result --out` folder) with the rights of the user
// who asked (files/fs_credentials.hpp), never through a symlink or a guessable
// temporary name (files/safe_write.hpp). A write that fails is reported, never
// swallowed: the job ends `failed` with the reason while its proofs stay in the
// journal for `zkfarmctl result`.
#include <sys/stat.h>
#include <unistd.h>

#include "files/file_error.hpp"
#include "files/fs_credentials.hpp"
#include "files/safe_write.hpp"
#include "groth16/proof_json.hpp"
#include "protocol/proof_codec.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

namespace {

// When zkfarmd is not root it cannot take a client's rights; it then writes
// only into folders that client owns, and never into its own state dir.
std::string unprivileged_refusal(const std::string& out, const Peer& as, const std::string& state_dir) {
  if (::geteuid() == 0 || as.uid == ::geteuid()) return {};
  if (out == state_dir || out.rfind(state_dir + "/", 0) == 0) return out + ": inside zkfarmd's state dir";
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0) return out + ": does not exist (zkfarmd runs unprivileged and cannot create it as uid " + std::to_string(as.uid) + ")";
  if (st.st_uid != as.uid) return out + ": not owned by uid " + std::to_string(as.uid) + " (zkfarmd runs unprivileged: it writes only into the submitter's own folders)";
  return {};
}

}  // namespace

bool Supervisor::deliver_one(const Job& job, uint32_t index, const std::string& out, const Peer& as,
                             bool only_missing, std::string* error) {
  const Partition& p = job.parts.at(index);
  std::string proof = p.proof, public_json = p.public_json;
  if (proof.empty()) {  // proved by an earlier instance: the journal has it
    auto jp = journal_.proof(job.id, index);
    if (!jp) {
      if (error) *error = "partition " + std::to_string(index) + ": no proof in the journal";
      return false;
    }
    proof = jp->proof;
    public_json = jp->public_json;
  }
  const std::string k = std::to_string(index);
  try {
    if (auto why = unprivileged_refusal(out, as, cfg_.state_dir); !why.empty()) throw files::FileError(out, EACCES, why);
    files::FsCredentials creds(as.uid, as.gid);
    files::UniqueFd dir = files::create_dir_safe(out, 0755);
    if (only_missing && files::exists_nofollow(dir.get(), out, k + ".proof.json") &&
        files::exists_nofollow(dir.get(), out, k + ".public.json"))
      return true;
    files::write_file_safe(dir.get(), out, k + ".public.json", public_json, 0644);
    files::write_file_safe(dir.get(), out, k + ".proof.json", proof_to_json(protocol::decode_proof(proof)), 0644);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    log_->error("job {} partition {}: cannot write the result into {}: {}", job.id, index, out, e.what());
    return false;
  }
}

size_t Supervisor::deliver(const Job& job, const std::string& out, const Peer& as, bool only_missing,
                           std::string* error) {
  size_t written = 0;
  for (const auto& p : job.parts) {
    if (p.state != PartState::kDone) continue;
    std::string e;
    if (deliver_one(job, p.index, out, as, only_missing, &e)) {
      ++written;
    } else if (error && error->empty()) {
      *error = e;
    }
  }
  return written;
}

}  // namespace zkfarm::supervisor
