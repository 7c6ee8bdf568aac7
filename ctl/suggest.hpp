#pragma once
// "Did you mean": the verb closest to a mistyped one, as git and systemctl
// suggest.
#include <functional>
#include <string>
#include <vector>

namespace zkfarm::ctl {

/// The candidate closest to `word` by edit distance (insertions, deletions,
/// substitutions and swaps of neighbours, case ignored) when it is close
/// enough to be a slip: at most 1 edit for words of up to 4 letters, 2 for
/// longer ones, or `word` is a prefix of exactly one candidate. "" when none is.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

/// The verb path a command line names and the first word that names no verb
/// there: walks `argv` past global options (those in `takes_value` consume
/// the next word), descending through `verbs_of(path)` (the verbs below the
/// path; empty: a leaf, whose own arguments follow). Returns {path, unknown};
/// unknown is "" when every word named a verb or a leaf was reached.
struct VerbScan {
  std::vector<std::string> path;
  std::string unknown;
};
VerbScan scan_verbs(const std::vector<std::string>& args, const std::vector<std::string>& takes_value,
                    const std::function<std::vector<std::string>(const std::vector<std::string>&)>& verbs_of);

}  // namespace zkfarm::ctl
