#pragma once
// "Did you mean" for zkfarmctl's command line: which word of it names no
// verb (the suggestion itself is cli/suggest.hpp's, shared with zkfarmd).
#include <functional>
#include <string>
#include <vector>

#include "cli/suggest.hpp"

namespace zkfarm::ctl {

using cli::closest;

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
