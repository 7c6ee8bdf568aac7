#include "witgen/source_index.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <optional>

#include "files/sha256.hpp"
#include "files/unique_fd.hpp"

namespace zkfarm::witgen {

namespace {

constexpr const char* kMagic = "zkfarm-source-index 1\n";
constexpr off_t kMaxIndexBytes = 1 << 20;  // 64 source files at most take a few KiB

int64_t ns_of(const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

// What stat(2) says of each source, one line a file in name order, as the
// index records it; nullopt when one cannot be stat'ed (source_hash then
// reports it). Sources are followed through links, as source_hash reads them.
// `newest_change`: the latest ctime among them.
std::optional<std::string> stat_lines(const GeneratorSources& src, int64_t& newest_change) {
  std::vector<std::string> names = src.files;
  std::sort(names.begin(), names.end());
  std::string out;
  newest_change = 0;
  for (const auto& f : names) {
    struct stat st {};
    if (::stat((src.dir + "/" + f).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    newest_change = std::max(newest_change, ns_of(st.st_ctim));
    out += std::to_string(f.size()) + ":" + f + " " + std::to_string(st.st_size) + " " +
           std::to_string(ns_of(st.st_mtim)) + " " + std::to_string(ns_of(st.st_ctim)) + " " +
           std::to_string(st.st_ino) + " " + std::to_string(st.st_dev) + "\n";
  }
  return out;
}

// The index file's name: the folder and the names of the files in it (each
// length-prefixed, so no two lists read alike), with the host version, since
// the hash it holds includes it.
std::string index_name(const GeneratorSources& src) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::weakly_canonical(src.dir, ec);
  if (ec) dir = src.dir;
  files::Sha256 h;
  h.add(std::string(kHostVersion) + "\n" + generator_kind_name(src.kind) + "\n" + dir.string() + "\n");
  std::vector<std::string> names = src.files;
  std::sort(names.begin(), names.end());
  for (const auto& f : names) h.add(std::to_string(f.size()) + ":" + f + "\n");
  return h.hex_digest();
}

bool is_hash(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// The index folder, ours and not a link; an invalid fd when it is not usable
// (then nothing is read or written there).
files::UniqueFd open_index_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return {};
  files::UniqueFd d(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!d || ::fstat(d.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 0022)) return {};
  return d;
}

// The hash the index holds for exactly these stats, else nullopt.
std::optional<std::string> read_index(int dir, const std::string& name, const std::string& stats) {
  files::UniqueFd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      st.st_size > kMaxIndexBytes)
    return std::nullopt;
  std::string text(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += size_t(n);
  }
  const std::string magic = kMagic;
  if (text.compare(0, magic.size(), magic) != 0) return std::nullopt;
  const size_t nl = text.find('\n', magic.size());
  if (nl == std::string::npos) return std::nullopt;
  const std::string hash = text.substr(magic.size(), nl - magic.size());
  if (!is_hash(hash) || text.compare(nl + 1, std::string::npos, stats) != 0) return std::nullopt;
  return hash;
}

// Writes the index beside, then renames it over the old one: a reader sees
// the old file or the new, never half of one. Failing is only a lost saving.
void write_index(int dir, const std::string& name, const std::string& hash, const std::string& stats) {
  static std::atomic<unsigned> serial{0};
  const std::string tmp = name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  ::unlinkat(dir, tmp.c_str(), 0);  // one a killed run of this pid left
  files::UniqueFd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return;
  const std::string text = kMagic + hash + "\n" + stats;
  const bool ok = ::write(fd.get(), text.data(), text.size()) == ssize_t(text.size());
  fd.reset();
  if (!ok || ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) ::unlinkat(dir, tmp.c_str(), 0);
}

int64_t wall_ns() {
  struct timespec t {};
  ::clock_gettime(CLOCK_REALTIME, &t);  // the clock file times are taken from
  return ns_of(t);
}

}  // namespace

IndexedHash indexed_source_hash(const GeneratorSources& src, const std::string& index_dir,
                                std::chrono::nanoseconds settle) {
  const int64_t started = wall_ns();
  int64_t newest_change = 0;
  const std::optional<std::string> before = stat_lines(src, newest_change);
  files::UniqueFd dir = open_index_dir(index_dir);
  const std::string name = index_name(src);
  if (before && dir)
    if (auto hash = read_index(dir.get(), name, *before)) return {*hash, true};
  IndexedHash out{source_hash(src), false};
  // Recorded only for sources that had settled before they were read, and
  // read unchanged: a change in the tick they were read in would otherwise
  // leave every stat as recorded.
  int64_t unused = 0;
  if (before && dir && newest_change < started - settle.count() && stat_lines(src, unused) == before)
    write_index(dir.get(), name, out.hash, *before);
  return out;
}

}  // namespace zkfarm::witgen
