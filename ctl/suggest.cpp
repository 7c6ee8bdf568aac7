#include "ctl/suggest.hpp"

#include <algorithm>

namespace zkfarm::ctl {

VerbScan scan_verbs(const std::vector<std::string>& args, const std::vector<std::string>& takes_value,
                    const std::function<std::vector<std::string>(const std::vector<std::string>&)>& verbs_of) {
  VerbScan scan;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-') {
      // "--opt value" consumes the next word; "--opt=value" does not.
      if (a.find('=') == std::string::npos && std::find(takes_value.begin(), takes_value.end(), a) != takes_value.end())
        ++i;
      continue;
    }
    const auto verbs = verbs_of(scan.path);
    if (verbs.empty()) break;  // a leaf: what follows are its own arguments
    if (std::find(verbs.begin(), verbs.end(), a) == verbs.end()) {
      scan.unknown = a;
      break;
    }
    scan.path.push_back(a);
  }
  return scan;
}

}  // namespace zkfarm::ctl
