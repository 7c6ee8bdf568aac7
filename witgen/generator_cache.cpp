#include "witgen/generator_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "witgen/graph_build.hpp"
#include "witgen/sandbox_uids.hpp"
#include "witgen/source_index.hpp"

namespace zkfarm::witgen {

namespace fs = std::filesystem;

namespace {

// Copies the regular file `name` of folder `from` (the sandbox user's) into a
// new file of `to` (zkfarmd's), mode 0755: never through a link, only a file
// that user made.
void take_product(const fs::path& from, const fs::path& to, const std::string& name, uid_t owner) {
  const std::string src_path = (from / name).string();
  const int in = ::open(src_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (in < 0) throw BuildError(src_path + ": the build left no such file: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } close_in{in};
  struct stat st{};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner || st.st_nlink != 1)
    throw BuildError(src_path + ": not a plain file the build made");
  const std::string dst_path = (to / name).string();
  const int out = ::open(dst_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
  if (out < 0) throw BuildError(dst_path + ": cannot create: " + std::strerror(errno));
  Closer close_out{out};
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0 || ::write(out, buf.data(), size_t(n)) != n)
      throw BuildError(dst_path + ": cannot copy the built generator: " + std::strerror(errno));
  }
  if (::fchmod(out, 0755) != 0 || ::fsync(out) != 0)
    throw BuildError(dst_path + ": cannot finish the built generator: " + std::strerror(errno));
}

// A wasm build as a sandbox uid of its own (opt.sandbox.drop_uid; a uid
// leased from the pool for this build alone, sandbox_uids.hpp): in
// TMP/zkfarm-build-XXXXXX, a folder of that uid's, 0700 (no other local user
// and no other build can list or read it at any moment), the sources are
// copied into src/ and the compilers write into out/; the product is then
// copied into `dest` (zkfarmd's). The uid can reach neither the state dir nor
// the cache. When the build ends, every process of the uid is killed (what
// it left running, setsid or not) before the folder is removed.
void build_as_sandbox_user(const GeneratorSources& src, const fs::path& dest, const BuildOptions& given) {
  std::string tmpl = (fs::temp_directory_path() / "zkfarm-build-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw BuildError(tmpl + ": cannot create: " + std::strerror(errno));
  const fs::path work = tmpl;
  struct Remove {
    fs::path p;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(p, ec);  // removes links, never follows them
    }
  } remove{work};
  BuildOptions opt = given;
  UidLease lease;  // destroyed before `remove`: the uid's processes die first
  try {
    lease = lease_sandbox_uid(opt.sandbox, opt.timeout);
  } catch (const SandboxError& e) {
    throw BuildError(e.what());
  }
  const uid_t uid = opt.sandbox.uid;
  const gid_t gid = opt.sandbox.gid;
  const fs::path sdir = work / "src", out = work / "out";
  auto own = [&](const fs::path& p, mode_t mode) {
    return ::chown(p.c_str(), uid, gid) == 0 && ::chmod(p.c_str(), mode) == 0;
  };
  // mkdtemp made it 0700 and root's: given to the uid before anything of the submitter's is in it.
  if (!own(work, 0700) || ::mkdir(sdir.c_str(), 0700) != 0 || !own(sdir, 0700) || ::mkdir(out.c_str(), 0700) != 0 ||
      !own(out, 0700) || ::mkdir((out / "build").c_str(), 0700) != 0 || !own(out / "build", 0700))
    throw BuildError(work.string() + ": cannot prepare the build folder: " + std::strerror(errno));
  GeneratorSources copy = src;
  copy.dir = sdir.string();
  for (const auto& f : src.files) {
    std::error_code ec;
    fs::copy_file(fs::path(src.dir) / f, sdir / f, ec);
    if (ec || !own(sdir / f, 0400))
      throw BuildError(f + ": cannot copy into the build folder: " + (ec ? ec.message() : std::strerror(errno)));
  }
  build_generator(copy, out.string(), opt);
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) throw BuildError(dest.string() + ": cannot create: " + ec.message());
  take_product(out, dest, "generator", uid);
}

}  // namespace

std::string cache_source_hash(const GeneratorSources& src, const std::string& cache) {
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) throw BuildError(cache + ": cannot create: " + ec.message());
  return indexed_source_hash(src, (fs::path(cache) / "index").string()).hash;
}

std::string cached_generator(const GeneratorSources& src, const std::string& hash, const std::string& cache,
                             const BuildOptions& opt) {
  std::error_code ec;
  fs::create_directories(cache, ec);
  if (ec) throw BuildError(cache + ": cannot create: " + ec.message());
  const fs::path done = fs::path(cache) / hash;
  const fs::path exe = done / "generator";
  // A native build made without its witness graph gets one when asked for.
  auto needs_graph = [&] {
    return src.kind == GeneratorKind::kNative && opt.graph && !fs::exists(done / "graph", ec) &&
           !fs::exists(done / "graph.refused", ec);
  };
  if (fs::exists(exe, ec) && !needs_graph()) return exe.string();
  const std::string lock_path = (fs::path(cache) / (hash + ".lock")).string();
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0) throw BuildError(lock_path + ": cannot open: " + std::strerror(errno));
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  while (::flock(lock, LOCK_EX) != 0)
    if (errno != EINTR) throw BuildError(lock_path + ": cannot lock: " + std::strerror(errno));
  if (fs::exists(exe, ec)) {  // built by whoever held the lock
    if (needs_graph()) {
      BuildOptions own = opt;
      own.sandbox.drop_uid = false;
      build_graph(src, done.string(), own);
    }
    return exe.string();
  }
  const fs::path tmp = fs::path(cache) / (hash + ".building-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  try {
    if (opt.sandbox.enabled && opt.sandbox.drop_uid && src.kind == GeneratorKind::kWasm)
      build_as_sandbox_user(src, tmp, opt);
    else {  // as zkfarmd's user: it is not root, or a native circuit (admins' code, sources in the state dir)
      BuildOptions own = opt;
      own.sandbox.drop_uid = false;
      build_generator(src, tmp.string(), own);
      // The graph is the generator's companion: kept (or its refusal) in the same folder.
      if (src.kind == GeneratorKind::kNative && opt.graph) build_graph(src, tmp.string(), own);
    }
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
