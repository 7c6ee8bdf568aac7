#include "protocol/control_verbs.hpp"

namespace zkfarm::protocol {

namespace {
constexpr bool rows_in_order() {
  for (size_t i = 0; i < kVerbs.size(); ++i)
    if (size_t(kVerbs[i].verb) != i) return false;
  return true;
}
static_assert(rows_in_order(), "kVerbs must list the verbs in Verb's order");
}  // namespace

std::optional<Verb> verb_of(std::string_view type) {
  for (const VerbInfo& v : kVerbs)
    if (type == v.type) return v.verb;
  return std::nullopt;
}

Message make(Verb v) { return make(std::string_view(verb_info(v).type)); }

}  // namespace zkfarm::protocol
