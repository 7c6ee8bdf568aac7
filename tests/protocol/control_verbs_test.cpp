// The control verbs' table (protocol/control_verbs.*): one row per verb, in
// Verb's order, with the type on control.sock and who may call it. The set
// of admin verbs is pinned here: widening it to anyone is a security change
// (docs/security.md) that must show up as a failing test.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/control_verbs.hpp"

namespace zkfarm::protocol {
namespace {

TEST(ControlVerbs, EveryTypeNamesOneVerbAndUnknownOnesNone) {
  std::set<std::string> types;
  for (size_t i = 0; i < kVerbs.size(); ++i) {
    const VerbInfo& v = kVerbs[i];
    EXPECT_EQ(size_t(v.verb), i);
    EXPECT_TRUE(types.insert(v.type).second) << v.type;
    EXPECT_EQ(verb_of(v.type), v.verb) << v.type;
    EXPECT_EQ(type_of(make(v.verb)), v.type);
    EXPECT_EQ(std::string(v.command).rfind("zkfarmctl ", 0), 0u) << v.type << ": a refusal names the command";
  }
  for (const std::string none : {std::string(), std::string("STATUS"), std::string("status "),
                                 std::string("kill-worker"), std::string("preload"), std::string("stop\0now", 8)})
    EXPECT_FALSE(verb_of(none).has_value()) << none;  // a NUL inside is no end of the type
}

TEST(ControlVerbs, OnlyTheFarmWideVerbsAreTheAdminsAndTheyAreAllThere) {
  std::set<std::string> admin;
  for (const VerbInfo& v : kVerbs)
    if (v.caller == Caller::kAdmin) admin.insert(v.type);
  EXPECT_EQ(admin, (std::set<std::string>{"stop", "drain", "resume", "kill", "kill_worker", "restart", "upgrade"}));
}

}  // namespace
}  // namespace zkfarm::protocol
