#include "witgen/generator_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace zkfarm::witgen {

namespace fs = std::filesystem;

std::string cached_generator(const GeneratorSources& src, const std::string& cache, const BuildOptions& opt) {
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) throw BuildError(cache + ": cannot create: " + ec.message());
  const std::string hash = source_hash(src);
  const fs::path done = fs::path(cache) / hash;
  const fs::path exe = done / "generator";
  if (fs::exists(exe, ec)) return exe.string();
  const std::string lock_path = (fs::path(cache) / (hash + ".lock")).string();
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0) throw BuildError(lock_path + ": cannot open: " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  while (::flock(lock, LOCK_EX) != 0)
    if (errno != EINTR) throw BuildError(lock_path + ": cannot lock: " + std::strerror(errno));
  if (fs::exists(exe, ec)) return exe.string();  // built by whoever held the lock
  const fs::path tmp = fs::path(cache) / (hash + ".building-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  try {
    build_generator(src, tmp.string(), opt);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, done, ec);
  if (ec) {
    fs::remove_all(tmp, ec);
    throw BuildError(done.string() + ": cannot move the build into place: " + ec.message());
  }
  ::unlink(lock_path.c_str());
  return exe.string();
}

GeneratorSources sources_at(const std::string& given) {
  // Absolute: the build runs in a folder of its own.
  const std::string path = fs::absolute(given).lexically_normal().string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw BuildError(path + ": " + std::strerror(errno));
  GeneratorSources src;
  if (S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_regular_file()) names.push_back(e.path().filename().string());
    src.kind = GeneratorKind::kNative;
    src.dir = path;
    try {
      src.files = native_source_files(names);
    } catch (const BuildError& e) {
      throw BuildError(path + ": " + e.what());
    }
    return src;
  }
  if (!S_ISREG(st.st_mode)) throw BuildError(path + ": not a file or a folder");
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, 4);
  if (in.gcount() != 4 || std::memcmp(magic, "\0asm", 4) != 0) throw BuildError(path + ": not a wasm module");
  src.kind = GeneratorKind::kWasm;
  src.dir = fs::path(path).parent_path().string();
  src.files = {fs::path(path).filename().string()};
  return src;
}

std::string user_generator_cache() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/zkfarm/generators";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/zkfarm/generators";
  // No shared, guessable folder in /tmp instead: another user could plant one.
  throw BuildError("no folder for built generators: set XDG_CACHE_HOME or HOME");
}

}  // namespace zkfarm::witgen
