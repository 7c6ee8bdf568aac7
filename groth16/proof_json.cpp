#include "groth16/proof_json.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "groth16/decimal.hpp"
#include "groth16/errors.hpp"

namespace zkfarm {

namespace {

using Json = nlohmann::ordered_json;

std::string dec(const Fq& x) { return to_decimal(x.to_u256()); }

}  // namespace

Json g1_to_json(const G1Affine& p) {
  if (p.is_infinity()) return Json::array({"0", "1", "0"});
  return Json::array({dec(p.x), dec(p.y), "1"});
}

Json g2_to_json(const G2Affine& p) {
  if (p.is_infinity()) return Json::array({Json::array({"0", "0"}), Json::array({"1", "0"}), Json::array({"0", "0"})});
  return Json::array({Json::array({dec(p.x.c0), dec(p.x.c1)}), Json::array({dec(p.y.c0), dec(p.y.c1)}),
                      Json::array({"1", "0"})});
}

std::string proof_to_json(const Proof& proof) {
  Json j;
  j["pi_a"] = g1_to_json(proof.a);
  j["pi_b"] = g2_to_json(proof.b);
  j["pi_c"] = g1_to_json(proof.c);
  j["protocol"] = "groth16";
  j["curve"] = "bn128";
  return j.dump(1);
}

std::string public_to_json(const U256* witness, size_t n_public) {
  // snarkjs writes an empty list as "[\n]" (its stringifier, not JSON.stringify).
  if (n_public == 0) return "[\n]";
  Json j = Json::array();
  for (size_t i = 1; i <= n_public; ++i) j.push_back(to_decimal(witness[i]));
  return j.dump(1);
}

void write_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  auto fail = [&](const std::string& what) -> void {
    int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(path + ": cannot write: " + what + ": " + std::strerror(err));
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    throw InputError(path + ": cannot write: " + std::strerror(err));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t k = ::write(fd, text.data() + done, text.size() - done);
    if (k < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail("write");
    }
    done += size_t(k);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
}

}  // namespace zkfarm
