#include "cli/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace zkfarm::cli {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring).
size_t distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  // Words longer than any verb are not slips of one; this also bounds the table.
  if (word.empty() || word.size() > 64) return "";
  const std::string w = lower(word);
  const size_t allowed = w.size() <= 4 ? 1 : 2;
  std::string best;
  size_t best_d = allowed + 1;
  std::vector<std::string> prefixed;
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    if (lc.rfind(w, 0) == 0) prefixed.push_back(c);
    const size_t d = distance(w, lc);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (!best.empty()) return best;
  return prefixed.size() == 1 ? prefixed.front() : "";
}

}  // namespace zkfarm::cli
