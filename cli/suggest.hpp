#pragma once
// "Did you mean": the word closest to a mistyped one, as git and systemctl
// suggest. Shared by zkfarmctl (verbs, worker ids) and zkfarmd (configuration
// keys), so both programs judge a slip the same way.
#include <string>
#include <vector>

namespace zkfarm::cli {

/// The candidate closest to `word` by edit distance (insertions, deletions,
/// substitutions and swaps of neighbours, case ignored) when it is close
/// enough to be a slip: at most 1 edit for words of up to 4 letters, 2 for
/// longer ones, or `word` is a prefix of exactly one candidate. "" when none
/// is (and for an empty word or one over 64 bytes).
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace zkfarm::cli
