// VerifyingKeys (verifying_keys.hpp): keys' verification data by key.
#include "supervisor/pipeline/verifying_keys.hpp"

#include <nlohmann/json.hpp>

#include "groth16/decimal.hpp"

namespace zkfarm::supervisor {

void VerifyingKeys::remember(const std::string& key_id, std::shared_ptr<const ProofVerifier> vk) {
  if (!vk) return;
  std::lock_guard lock(mutex_);
  by_key_[key_id] = std::move(vk);
}

std::shared_ptr<const ProofVerifier> VerifyingKeys::get(const std::string& key_id, const std::string& zkey) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_key_.find(key_id); it != by_key_.end()) return it->second;
  }
  // Read without the lock: other keys' checks go on meanwhile. Sections 2
  // and 3 only: the verification key checks its own points (canonical, on
  // their curves, in their subgroups), so the whole key's content checks
  // (a read of every byte of a key of tens of GB) would only hold up every
  // proof waiting behind this one.
  auto vk = ProofVerifier::from_zkey(Zkey::open(zkey, ZkeyContents::unchecked));
  std::lock_guard lock(mutex_);
  return by_key_.try_emplace(key_id, std::move(vk)).first->second;
}

std::optional<std::vector<U256>> public_signals_from(std::vector<U256> values, const std::string& json,
                                                     uint32_t n_public) {
  if (!values.empty() || n_public == 0) return values;
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_array()) return std::nullopt;
  std::vector<U256> out;
  for (const auto& v : j) {
    if (!v.is_string()) return std::nullopt;
    auto x = parse_decimal(v.get<std::string>());
    if (!x) return std::nullopt;
    out.push_back(*x);
  }
  return out;
}

}  // namespace zkfarm::supervisor
