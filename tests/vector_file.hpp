#pragma once
// A known-answer file of tests/vectors/ (format: tests/vectors/README.md): one
// vector a line, the op then its numbers; '#' lines are comments. Num is the
// integer type the numbers are parsed into (U256, or wider for BLS12-381's Fq).
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace zkfarm::test {

template <class Num>
struct VectorFile {
  std::multimap<std::string, std::vector<Num>> rows;

  /// Reads tests/vectors/NAME; throws std::runtime_error when it cannot be
  /// opened (parse throws for a bad number).
  VectorFile(const std::string& name, Num (*parse)(const std::string&)) {
    std::ifstream in(repo_path("tests/vectors/" + name));
    if (!in) throw std::runtime_error("cannot open tests/vectors/" + name);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      std::string op, tok;
      ss >> op;
      std::vector<Num> nums;
      while (ss >> tok) nums.push_back(parse(tok));
      rows.emplace(op, nums);
    }
  }

  /// Every vector of `op`, in file order; throws when there is none.
  std::vector<std::vector<Num>> get(const std::string& op) const {
    std::vector<std::vector<Num>> out;
    auto [b, e] = rows.equal_range(op);
    for (auto it = b; it != e; ++it) out.push_back(it->second);
    if (out.empty()) throw std::runtime_error("no vectors for " + op);
    return out;
  }
};

}  // namespace zkfarm::test
