#include "api/input_names.hpp"

#include <cctype>

namespace zkfarm::api {

std::string with_input_names(std::string text, const std::vector<std::string>& names) {
  static const std::string kInput = "input ", kJson = ".json";
  for (size_t at = text.find(kInput); at != std::string::npos; at = text.find(kInput, at + 1)) {
    const size_t digits = at + kInput.size();
    size_t end = digits;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    // 1 to 9 digits, then ".json" ending the word: anything else is not
    // tenant_text's name.
    const size_t after = end + kJson.size();
    if (end == digits || end - digits > 9 || text.compare(end, kJson.size(), kJson) != 0) continue;
    if (after < text.size() && (std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_')) continue;
    const size_t k = std::stoul(text.substr(digits, end - digits));
    if (k >= names.size() || names[k].empty()) continue;
    text.replace(at, end + kJson.size() - at, names[k]);
    at += names[k].size() - 1;  // past the name: the next find starts after it
  }
  return text;
}

}  // namespace zkfarm::api
