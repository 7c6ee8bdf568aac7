#include "supervisor/workers/trusted_binary.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace zkfarm::supervisor {

namespace {

void check_owner_and_mode(const std::string& p, const struct stat& st, const std::string& what) {
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    throw std::runtime_error(what + " " + p + " belongs to uid " + std::to_string(st.st_uid) +
                             ", not to root or zkfarmd's user");
  // A sticky folder (/tmp) lets others add entries but not rename or remove
  // ours, so the root-owned entry below it, checked in its turn, stays ours.
  const bool sticky_folder = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_folder)
    throw std::runtime_error(what + " " + p + " is writable by its group or by others");
}

}  // namespace

std::string trusted_binary(const std::string& path) {
  if (path.empty() || path[0] != '/') throw std::runtime_error("not an absolute path: " + path);
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) throw std::runtime_error("cannot resolve " + path + ": " + std::strerror(errno));
  const std::string resolved(real);
  std::free(real);
  struct stat st {};
  if (::stat(resolved.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + resolved + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(resolved + " is not a regular file");
  if (!(st.st_mode & S_IXUSR)) throw std::runtime_error(resolved + " is not executable");
  check_owner_and_mode(resolved, st, "binary");
  for (std::filesystem::path dir = std::filesystem::path(resolved).parent_path();; dir = dir.parent_path()) {
    if (::stat(dir.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + dir.string() + ": " + std::strerror(errno));
    check_owner_and_mode(dir.string(), st, "folder");
    if (dir == dir.root_path()) break;
  }
  return resolved;
}

bool inside_folder(const std::string& path, const std::string& folder) {
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::canonical(folder, ec);
  if (ec) return false;
  const std::string r = root.string();
  if (path == r) return false;  // the folder itself is no binary
  return path.rfind(r == "/" ? r : r + "/", 0) == 0;
}

}  // namespace zkfarm::supervisor
