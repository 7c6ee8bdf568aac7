// api/input_names.hpp: a failure of a job of inputs over zkfarm-api names the
// client's files (issue 49, item 5), not "input K.json".
#include "api/input_names.hpp"

#include <gtest/gtest.h>

namespace zkfarm::api {
namespace {

TEST(InputNames, EachInputKJsonBecomesTheClientsNameAndNothingElseChanges) {
  const std::vector<std::string> names = {"/home/a/in0.json", "/home/a/weird input 0.json", "b.json"};
  EXPECT_EQ(with_input_names("partition 1: input 1.json: Assert Failed. Error in template Checks_0 line: 11", names),
            "partition 1: /home/a/weird input 0.json: Assert Failed. Error in template Checks_0 line: 11")
      << "a name that itself reads \"input 0.json\" is not replaced again";
  EXPECT_EQ(with_input_names("input 0.json and input 2.json", names), "/home/a/in0.json and b.json");
  EXPECT_EQ(with_input_names("input 3.json: past the list", names), "input 3.json: past the list");
  for (const char* kept : {"input 1.jsonx", "input .json", "input 1json", "input 12345678901.json", "an input", "input "})
    EXPECT_EQ(with_input_names(kept, names), kept);
  EXPECT_EQ(with_input_names("input 1.json", {}), "input 1.json") << "no names given: unchanged";
  EXPECT_EQ(with_input_names("input 1.jso", names), "input 1.jso") << "cut short at the end";
}

}  // namespace
}  // namespace zkfarm::api
