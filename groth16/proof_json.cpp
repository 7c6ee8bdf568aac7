#include "groth16/proof_json.hpp"

#include <nlohmann/json.hpp>
#include <utility>

#include "files/file_error.hpp"
#include "files/input_file.hpp"
#include "files/safe_write.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/decimal.hpp"
#include "groth16/errors.hpp"

namespace zkfarm {

namespace {

using Json = nlohmann::ordered_json;

// Decimal of a field element of any width (its canonical integer's bytes;
// x86-64 is little-endian, as the limbs are).
template <class F>
std::string dec(const F& x) {
  const auto v = x.to_int();
  return le_to_decimal({reinterpret_cast<const uint8_t*>(v.data()), sizeof(v)});
}

}  // namespace

template <class P>
Json g1_to_json(const Affine<P>& p) {
  if (p.is_infinity()) return Json::array({"0", "1", "0"});
  return Json::array({dec(p.x), dec(p.y), "1"});
}

template <class P>
Json g2_to_json(const Affine<P>& p) {
  if (p.is_infinity()) return Json::array({Json::array({"0", "0"}), Json::array({"1", "0"}), Json::array({"0", "0"})});
  return Json::array({Json::array({dec(p.x.c0), dec(p.x.c1)}), Json::array({dec(p.y.c0), dec(p.y.c1)}),
                      Json::array({"1", "0"})});
}

template <class C>
std::string proof_to_json(const ProofOf<C>& proof) {
  Json j;
  j["pi_a"] = g1_to_json(proof.a);
  j["pi_b"] = g2_to_json(proof.b);
  j["pi_c"] = g1_to_json(proof.c);
  j["protocol"] = "groth16";
  j["curve"] = C::kName;
  return j.dump(1);
}

std::string public_to_json(const U256* witness, size_t n_public) {
  // snarkjs writes an empty list as "[\n]" (its stringifier, not JSON.stringify).
  if (n_public == 0) return "[\n]";
  Json j = Json::array();
  for (size_t i = 1; i <= n_public; ++i) j.push_back(to_decimal(witness[i]));
  return j.dump(1);
}

namespace {

// An output path's folder ("" for the working folder) and last component.
std::pair<std::string, std::string> split_output_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view text) {
  // files::write_file_safe: an unguessable temporary (O_TMPFILE, or 128 random
  // bits with O_EXCL|O_NOFOLLOW), fsync, rename over `path` (a symlink there is
  // replaced, not followed), folder fsync, every fault reported, no temp left.
  const auto [dir, name] = split_output_path(path);
  try {
    files::write_file_safe(dir, name, text, 0644);
  } catch (const files::FileError& e) {
    throw InputError(e.what());
  }
}

void copy_file_atomic(const std::string& path, int src_fd, const std::string& src_name) {
  const auto [dir, name] = split_output_path(path);
  try {
    const files::UniqueFd d = files::open_dir(dir.empty() ? "." : dir);
    files::copy_into(src_fd, src_name, d.get(), name, 0644, {}, files::TempMethod::kAuto, files::CopyHash::kNone);
  } catch (const files::FileError& e) {
    throw InputError(e.what());
  }
}

// Every curve of Curves gets its proof.json.
#define ZKFARM_PROOF_JSON_INSTANTIATE(C)                                             \
  template Json g1_to_json<C::G1Params>(const Affine<C::G1Params>&);                \
  template Json g2_to_json<C::G2Params>(const Affine<C::G2Params>&);                \
  template std::string proof_to_json<C>(const ProofOf<C>&);
ZKFARM_FOR_EACH_CURVE(ZKFARM_PROOF_JSON_INSTANTIATE)

}  // namespace zkfarm
