#include "files/file_error.hpp"

#include <cstring>

namespace zkfarm::files {

void throw_errno(const std::string& path, const std::string& action, int err) {
  throw FileError(path, err, path + ": cannot " + action + ": " + std::strerror(err));
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace zkfarm::files
