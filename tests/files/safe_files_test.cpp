// The safe file operations (files/), each against the attack it answers, run as
// root as CI does: symlinks planted at the output name and at the old
// predictable temp name; FIFOs, devices, folders and sockets given as inputs;
// a source changed while it is copied; a full and a read-only filesystem; a
// client's filesystem credentials on one thread while another keeps root's.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "files/file_error.hpp"
#include "files/fs_credentials.hpp"
#include "files/input_file.hpp"
#include "files/safe_write.hpp"
#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;
using files::FileError;
using files::FsCredentials;
using files::TempMethod;
using test::read_file;

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

bool is_root() { return ::geteuid() == 0; }

// A test folder that user nobody can enter (mkdtemp makes it 0700).
struct Dir : test::TempDir {
  Dir() : test::TempDir("zkfarm-files") { fs::permissions(path, fs::perms(0755)); }
};

void put(const std::string& path, const std::string& content, mode_t mode = 0644) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  ASSERT_EQ(::write(fd, content.data(), content.size()), ssize_t(content.size()));
  ASSERT_EQ(::fchmod(fd, mode), 0);
  ::close(fd);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct stat lstat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path << ": " << std::strerror(errno);
  return st;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Deterministic bytes of every value (a 64-bit LCG), for copies that span chunks.
std::string pattern(size_t n, uint64_t seed) {
  std::string s(n, '\0');
  for (auto& c : s) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    c = char(seed >> 56);
  }
  return s;
}

// A 1 MiB tmpfs mounted on a fresh folder, unmounted (lazily) at the end.
struct Tmpfs {
  std::string path;
  int err = 0;
  explicit Tmpfs(const std::string& where) : path(where) {
    ::mkdir(path.c_str(), 0755);
    if (::mount("zkfarm-test", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") != 0) err = errno;
  }
  ~Tmpfs() {
    if (!err) ::umount2(path.c_str(), MNT_DETACH);
  }
  uint64_t free_blocks() const {
    struct statvfs sv {};
    ::statvfs(path.c_str(), &sv);
    return sv.f_bfree;
  }
};

std::string method_name(const testing::TestParamInfo<TempMethod>& info) {
  return info.param == TempMethod::kAuto ? "Tmpfile" : "NamedTemp";
}

// ---------------------------------------------------------------- writing ---

class SafeWrite : public testing::TestWithParam<TempMethod> {};

// The attack on main: OUT/k.proof.json and OUT/k.proof.json.tmp.<pid> are
// symlinks to a root-only file; the old writer opened the temp name with
// O_CREAT|O_TRUNC, followed the link and replaced the root file's contents.
TEST_P(SafeWrite, PlantedSymlinksAreReplacedNeverFollowed) {
  Dir d;
  const std::string secret_dir = d / "secret", out = d / "out";
  ASSERT_EQ(::mkdir(secret_dir.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(out.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(out.c_str(), 0777), 0);  // a client's folder, as open as it likes
  const std::string secret = secret_dir + "/shadow", secret_text = "root:$6$only-root-may-read:19000::::::\n";
  put(secret, secret_text, 0600);
  const std::string attack_created = secret_dir + "/created-by-attack";

  const std::string pid = std::to_string(::getpid());
  ASSERT_EQ(::symlink(secret.c_str(), (out + "/0.proof.json").c_str()), 0);
  ASSERT_EQ(::symlink(secret.c_str(), (out + "/0.proof.json.tmp." + pid).c_str()), 0);
  ASSERT_EQ(::symlink(attack_created.c_str(), (out + "/0.public.json").c_str()), 0);  // dangling
  ASSERT_EQ(::symlink(attack_created.c_str(), (out + "/0.public.json.tmp." + pid).c_str()), 0);

  files::write_file_safe(out, "0.proof.json", "{\"proof\": 1}", 0644, GetParam());
  files::write_file_safe(out, "0.public.json", "[\"7\"]", 0644, GetParam());

  EXPECT_EQ(read_file(secret), secret_text);
  struct stat st = lstat_of(secret);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());  // root in CI: a root-only file
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_FALSE(fs::exists(fs::symlink_status(attack_created)));
  for (const char* name : {"0.proof.json", "0.public.json"})
    EXPECT_TRUE(S_ISREG(lstat_of(out + "/" + name).st_mode)) << name;
  EXPECT_EQ(read_file(out + "/0.proof.json"), "{\"proof\": 1}");
  EXPECT_EQ(read_file(out + "/0.public.json"), "[\"7\"]");
  // The old temp names are left as they were, and nothing else was added.
  EXPECT_TRUE(S_ISLNK(lstat_of(out + "/0.proof.json.tmp." + pid).st_mode));
  EXPECT_EQ(entries(out), (std::vector<std::string>{"0.proof.json", "0.proof.json.tmp." + pid, "0.public.json",
                                                     "0.public.json.tmp." + pid}));
}

INSTANTIATE_TEST_SUITE_P(Methods, SafeWrite, testing::Values(TempMethod::kAuto, TempMethod::kNamed), method_name);

// zkfarm-prove and the supervisor write through write_file_atomic: the same attack.
TEST(SafeWriteAtomic, WriteFileAtomicDoesNotFollowPlantedSymlinks) {
  Dir d;
  const std::string secret = d / "root-only", out = d / "out", secret_text = "do not overwrite\n";
  put(secret, secret_text, 0600);
  ASSERT_EQ(::mkdir(out.c_str(), 0755), 0);
  const std::string path = out + "/3.proof.json";
  ASSERT_EQ(::symlink(secret.c_str(), path.c_str()), 0);
  ASSERT_EQ(::symlink(secret.c_str(), (path + ".tmp." + std::to_string(::getpid())).c_str()), 0);

  write_file_atomic(path, "{\"pi_a\": []}");
  EXPECT_EQ(read_file(secret), secret_text);
  EXPECT_TRUE(S_ISREG(lstat_of(path).st_mode));
  EXPECT_EQ(read_file(path), "{\"pi_a\": []}");

  try {
    write_file_atomic(d / "missing/4.proof.json", "x");
    FAIL() << "wrote into a missing folder";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), d / "missing/4.proof.json")) << e.what();
    EXPECT_TRUE(contains(e.what(), "No such file or directory")) << e.what();
  }
}

TEST(SafeWriteAtomic, ReplacesAnOldResultWithANewFile) {
  Dir d;
  const mode_t old_mask = ::umask(077);  // zkfarmd's own umask: the mode asked for still wins
  put(d / "1.proof.json", "old", 0644);
  ASSERT_EQ(::link((d / "1.proof.json").c_str(), (d / "other-link").c_str()), 0);
  files::write_file_safe(d.path.string(), "1.proof.json", "new result", 0640);
  EXPECT_EQ(read_file(d / "1.proof.json"), "new result");
  EXPECT_EQ(read_file(d / "other-link"), "old");  // a new inode, not a write through the old one
  ::umask(old_mask);
  EXPECT_EQ(lstat_of(d / "1.proof.json").st_mode & 0777, 0640u);
  EXPECT_EQ(entries(d.path.string()), (std::vector<std::string>{"1.proof.json", "other-link"}));
}

TEST(SafeWriteAtomic, RefusesBadNamesAndFolders) {
  Dir d;
  ASSERT_EQ(::mkdir((d / "sub").c_str(), 0755), 0);
  auto code_of = [&](const std::string& dir, const std::string& name) {
    try {
      files::write_file_safe(dir, name, "x");
    } catch (const FileError& e) {
      EXPECT_TRUE(contains(e.what(), name)) << e.what();
      return e.code();
    }
    return 0;
  };
  EXPECT_EQ(code_of(d.path.string(), "sub"), EISDIR);
  EXPECT_EQ(code_of(d.path.string(), "a/b"), EINVAL);
  EXPECT_EQ(code_of(d.path.string(), ".."), EINVAL);
  EXPECT_EQ(code_of(d.path.string(), ""), EINVAL);
  EXPECT_EQ(code_of(d / "nowhere", "0.proof.json"), ENOENT);
  EXPECT_EQ(entries(d.path.string()), std::vector<std::string>{"sub"});
}

TEST(SafeWriteAtomic, ExistsNoFollowSeesEntriesWithoutFollowingThem) {
  Dir d;
  put(d / "present", "x");
  ASSERT_EQ(::symlink((d / "target-never-made").c_str(), (d / "dangling").c_str()), 0);
  EXPECT_TRUE(files::exists_nofollow(d.path.string(), "present"));
  EXPECT_TRUE(files::exists_nofollow(d.path.string(), "dangling"));
  EXPECT_FALSE(files::exists_nofollow(d.path.string(), "absent"));
  EXPECT_FALSE(files::exists_nofollow(d / "no-such-folder", "present"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(d / "target-never-made")));
  EXPECT_THROW(files::exists_nofollow(d / "present", "x"), FileError);  // ENOTDIR
}

// ---------------------------------------------------------- full / read-only ---

class FullFilesystem : public testing::TestWithParam<TempMethod> {};

TEST_P(FullFilesystem, WriteFailsWithEnospcAndLeavesNothing) {
  if (!is_root()) GTEST_SKIP() << "needs root to mount a tmpfs";
  Dir d;
  Tmpfs mnt(d / "mnt");
  if (mnt.err) GTEST_SKIP() << "cannot mount a 1 MiB tmpfs here: " << std::strerror(mnt.err);
  const uint64_t free_before = mnt.free_blocks();
  try {
    files::write_file_safe(mnt.path, "0.proof.json", std::string(2 << 20, 'p'), 0644, GetParam());
    FAIL() << "2 MiB fitted in a 1 MiB filesystem";
  } catch (const FileError& e) {
    EXPECT_EQ(e.code(), ENOSPC);
    EXPECT_TRUE(contains(e.what(), "No space left on device")) << e.what();
    EXPECT_TRUE(contains(e.what(), mnt.path + "/0.proof.json")) << e.what();
  }
  EXPECT_TRUE(entries(mnt.path).empty());
  EXPECT_EQ(mnt.free_blocks(), free_before);  // no unnamed temp kept open either

  // copy_into into the same full filesystem.
  const std::string src = d / "big.zkey";
  put(src, pattern(3 << 20, 1));
  files::UniqueFd in = files::open_regular_file(src);
  files::UniqueFd dir = files::open_dir(mnt.path);
  try {
    files::copy_into(in.get(), src, dir.get(), "key.zkey", 0600, {}, GetParam());
    FAIL() << "3 MiB copied into a 1 MiB filesystem";
  } catch (const FileError& e) {
    EXPECT_EQ(e.code(), ENOSPC) << e.what();
    EXPECT_TRUE(contains(e.what(), "key.zkey")) << e.what();
  }
  EXPECT_TRUE(entries(mnt.path).empty());
  EXPECT_EQ(mnt.free_blocks(), free_before);
}

TEST_P(FullFilesystem, ReadOnlyFilesystemFailsWithErofs) {
  if (!is_root()) GTEST_SKIP() << "needs root to mount a tmpfs";
  Dir d;
  Tmpfs mnt(d / "mnt");
  if (mnt.err) GTEST_SKIP() << "cannot mount a 1 MiB tmpfs here: " << std::strerror(mnt.err);
  ASSERT_EQ(::mount(nullptr, mnt.path.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0) << std::strerror(errno);
  try {
    files::write_file_safe(mnt.path, "0.public.json", "[]", 0644, GetParam());
    FAIL() << "wrote into a read-only filesystem";
  } catch (const FileError& e) {
    EXPECT_EQ(e.code(), EROFS);
    EXPECT_TRUE(contains(e.what(), "Read-only file system")) << e.what();
  }
  EXPECT_TRUE(entries(mnt.path).empty());
}

INSTANTIATE_TEST_SUITE_P(Methods, FullFilesystem, testing::Values(TempMethod::kAuto, TempMethod::kNamed),
                         method_name);

// ------------------------------------------------------------------ inputs ---

std::string refusal(const std::string& path) {
  try {
    files::open_regular_file(path);
  } catch (const FileError& e) {
    return e.what();
  }
  return "(opened)";
}

// A FIFO with no writer: a plain open(O_RDONLY) waits for one forever. The
// watchdog turns a hang into a failure: if the open has not returned after a
// minute, it reports and opens the FIFO for writing, which releases the reader.
TEST(OpenRegularFile, RefusesAFifoWithoutBlocking) {
  Dir d;
  const std::string fifo = d / "witness.wtns";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lock(m);
    if (cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; })) return;
    ADD_FAILURE() << "open_regular_file blocked on a FIFO";
    int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
  });
  const std::string msg = refusal(fifo);
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  EXPECT_EQ(msg, fifo + ": is a FIFO, not a regular file");
}

TEST(OpenRegularFile, RefusesDevicesFoldersAndSockets) {
  Dir d;
  EXPECT_EQ(refusal("/dev/null"), "/dev/null: is a character device, not a regular file");
  EXPECT_EQ(refusal(d.path.string()), d.path.string() + ": is a directory, not a regular file");

  const std::string sock_path = d / "key.zkey";
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock_path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock_path.c_str(), sock_path.size() + 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  EXPECT_EQ(refusal(sock_path), sock_path + ": is a socket, not a regular file");
  ::close(s);

  EXPECT_EQ(refusal(d / "missing.wtns"), d / "missing.wtns" + ": cannot open: No such file or directory");
}

TEST(OpenRegularFile, OpensRegularFilesBlockingAndFollowsSymlinks) {
  Dir d;
  put(d / "w.wtns", "witness bytes");
  ASSERT_EQ(::symlink((d / "w.wtns").c_str(), (d / "link.wtns").c_str()), 0);
  for (const std::string& p : {d / "w.wtns", d / "link.wtns"}) {
    files::UniqueFd fd = files::open_regular_file(p);
    const int flags = ::fcntl(fd.get(), F_GETFL);
    EXPECT_EQ(flags & O_NONBLOCK, 0) << p;
    EXPECT_EQ(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC) << p;
    char buf[32] = {};
    EXPECT_EQ(::read(fd.get(), buf, sizeof buf), 13) << p;
    EXPECT_EQ(std::string(buf), "witness bytes");
  }
}

// ------------------------------------------------------------------ copying ---

struct Copied {
  files::CopyResult result;
  std::string error;  // what() when the copy failed
};

Copied copy(const std::string& src, const std::string& dir, const std::string& name,
            const files::CopyProgress& progress = {}, TempMethod method = TempMethod::kAuto) {
  files::UniqueFd in = files::open_regular_file(src);
  files::UniqueFd out = files::open_dir(dir);
  Copied c;
  try {
    c.result = files::copy_into(in.get(), src, out.get(), name, 0600, progress, method);
  } catch (const FileError& e) {
    c.error = e.what();
  }
  return c;
}

TEST(CopyInto, HashesMatchTheFips180Vectors) {
  Dir d;
  const std::string spool = d / "spool";
  ASSERT_EQ(::mkdir(spool.c_str(), 0700), 0);
  struct Vector {
    std::string text, sha256;
  };
  // FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA256_2.pdf") and the empty string.
  const Vector vectors[] = {
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
  };
  int i = 0;
  for (const auto& v : vectors) {
    const std::string src = d / ("v" + std::to_string(i) + ".wtns"), name = "c" + std::to_string(i++);
    put(src, v.text);
    Copied c = copy(src, spool, name);
    ASSERT_EQ(c.error, "");
    EXPECT_EQ(c.result.sha256_hex, v.sha256) << v.text;
    EXPECT_EQ(c.result.bytes, v.text.size());
    EXPECT_EQ(read_file(spool + "/" + name), v.text);
    EXPECT_EQ(lstat_of(spool + "/" + name).st_mode & 0777, 0600u);
  }
}

TEST(CopyInto, HashMatchesSha256sumAcrossChunks) {
  Dir d;
  const std::string src = d / "key.zkey", data = pattern((3 << 20) + 17, 42);
  put(src, data);
  std::vector<uint64_t> seen;
  Copied c = copy(src, d.path.string(), "copy.zkey", [&](uint64_t n) { seen.push_back(n); }, TempMethod::kNamed);
  ASSERT_EQ(c.error, "");
  FILE* p = ::popen(("sha256sum '" + src + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char out[65] = {};
  ASSERT_EQ(std::fread(out, 1, 64, p), 64u);
  ASSERT_EQ(::pclose(p), 0);
  EXPECT_EQ(c.result.sha256_hex, std::string(out));
  EXPECT_EQ(c.result.bytes, data.size());
  EXPECT_TRUE(read_file(d / "copy.zkey") == data);
  EXPECT_EQ(seen, (std::vector<uint64_t>{1 << 20, 2 << 20, 3 << 20, (3 << 20) + 17}));
  files::UniqueFd fd = files::open_regular_file(src);
  EXPECT_EQ(c.result.source, files::FileIdentity::of(fd.get(), src));
  EXPECT_EQ(c.result.source.size, off_t(data.size()));
}

TEST(CopyInto, LargerThanTheWritebackWindowsAndUnhashedCopiesEveryByte) {
  // Past three writeback windows (temp_file.hpp), with a ragged tail: the
  // streaming writeback must not change a byte; kNone leaves the hash empty.
  Dir d;
  const uint64_t w = files::TempFile::kWritebackWindow;
  const std::string src = d / "w.wtns", data = pattern(3 * w + (1 << 20) + 5, 9);
  put(src, data);
  files::UniqueFd in = files::open_regular_file(src);
  files::UniqueFd out = files::open_dir(d.path.string());
  files::CopyResult c = files::copy_into(in.get(), src, out.get(), "copy.wtns", 0600, {}, TempMethod::kAuto,
                                         files::CopyHash::kNone);
  EXPECT_EQ(c.sha256_hex, "");
  EXPECT_EQ(c.bytes, data.size());
  EXPECT_TRUE(read_file(d / "copy.wtns") == data);
}

class CopyChanged : public testing::TestWithParam<TempMethod> {
 protected:
  // A 3 MiB source whose mtime is set well in the past, so that any write
  // during the copy moves it whatever the clock's granularity.
  void SetUp() override {
    src = d / "w.wtns";
    spool = d / "spool";
    put(src, pattern(3 << 20, 7));
    ASSERT_EQ(::mkdir(spool.c_str(), 0700), 0);
    const struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, src.c_str(), old, 0), 0);
  }
  void expect_refused(const Copied& c) {
    EXPECT_TRUE(contains(c.error, src + ": changed while it was read")) << c.error;
    EXPECT_TRUE(entries(spool).empty());
  }
  Dir d;
  std::string src, spool;
};

TEST_P(CopyChanged, TruncatedDuringTheCopy) {
  Copied c = copy(src, spool, "w.wtns", [&](uint64_t n) {
    if (n == 1 << 20) {
      ASSERT_EQ(::truncate(src.c_str(), 1000), 0);
    }
  }, GetParam());
  expect_refused(c);
}

TEST_P(CopyChanged, GrewDuringTheCopy) {
  Copied c = copy(src, spool, "w.wtns", [&](uint64_t n) {
    if (n == 1 << 20) {
      int fd = ::open(src.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      ASSERT_EQ(::write(fd, "x", 1), 1);
      ::close(fd);
    }
  }, GetParam());
  expect_refused(c);
}

TEST_P(CopyChanged, RewrittenInPlaceKeepingItsSize) {
  Copied c = copy(src, spool, "w.wtns", [&](uint64_t n) {
    if (n == 2 << 20) {
      int fd = ::open(src.c_str(), O_WRONLY | O_CLOEXEC);
      const std::string other = pattern(1 << 20, 8);
      ASSERT_EQ(::pwrite(fd, other.data(), other.size(), 0), ssize_t(other.size()));
      ::close(fd);
    }
  }, GetParam());
  expect_refused(c);
}

TEST_P(CopyChanged, ACancelledCopyLeavesNothing) {
  files::UniqueFd in = files::open_regular_file(src);
  files::UniqueFd out = files::open_dir(spool);
  auto cancel = [](uint64_t n) {
    if (n >= 2 << 20) throw std::runtime_error("job cancelled");
  };
  EXPECT_THROW(files::copy_into(in.get(), src, out.get(), "w.wtns", 0600, cancel, GetParam()), std::runtime_error);
  EXPECT_TRUE(entries(spool).empty());
}

INSTANTIATE_TEST_SUITE_P(Methods, CopyChanged, testing::Values(TempMethod::kAuto, TempMethod::kNamed), method_name);

// ctime moves on any change, even one that restores size and mtime.
TEST(FileIdentityTest, RewriteRestoringSizeAndMtimeStillChangesIdentity) {
  Dir d;
  const std::string p = d / "k.zkey";
  put(p, "0123456789");
  files::UniqueFd fd = files::open_regular_file(p);
  const files::FileIdentity before = files::FileIdentity::of(fd.get(), p);
  // Wait for the coarse clock to pass the ctime just read, so the test holds on
  // kernels without multigrain timestamps too (see FileIdentity).
  for (;;) {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    if (int64_t(now.tv_sec) * 1000000000 + now.tv_nsec > before.ctime_ns) break;
    std::this_thread::yield();
  }
  int w = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_EQ(::pwrite(w, "9876543210", 10, 0), 10);
  ::close(w);
  const struct timespec times[2] = {{0, UTIME_OMIT},
                                    {time_t(before.mtime_ns / 1000000000), long(before.mtime_ns % 1000000000)}};
  ASSERT_EQ(::futimens(fd.get(), times), 0);
  const files::FileIdentity after = files::FileIdentity::of(fd.get(), p);
  EXPECT_EQ(after.size, before.size);
  EXPECT_EQ(after.mtime_ns, before.mtime_ns);
  EXPECT_NE(after.ctime_ns, before.ctime_ns);
  EXPECT_NE(after, before);
}

// ------------------------------------------------------------ create_dir_safe ---

TEST(CreateDirSafe, MakesParentsAndRefusesASymlinkedLastComponent) {
  Dir d;
  files::UniqueFd fd = files::create_dir_safe(d / "a/b//c/", 0750);
  files::write_file_safe(fd.get(), d / "a/b/c", "0.proof.json", "{}");
  EXPECT_EQ(read_file(d / "a/b/c/0.proof.json"), "{}");
  EXPECT_TRUE(fs::is_directory(d / "a/b"));
  files::create_dir_safe(d / "a/b/c");  // exists: fine

  ASSERT_EQ(::mkdir((d / "elsewhere").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((d / "elsewhere").c_str(), (d / "out").c_str()), 0);
  try {
    files::create_dir_safe(d / "out");
    FAIL() << "a symlinked output folder was accepted";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), d / "out" + ": is a symbolic link, not a folder");
  }
  files::create_dir_safe(d / "out/inner");  // earlier components are followed (documented)
  EXPECT_TRUE(fs::is_directory(d / "elsewhere/inner"));

  put(d / "file", "x");
  EXPECT_THROW(files::create_dir_safe(d / "file"), FileError);
  EXPECT_THROW(files::create_dir_safe(d / "file/sub"), FileError);
}

// The second pass's finding: a folder on the way swapped for a symlink after
// submit. Resolved at submit, walked again with kRefuse, the write fails
// instead of landing where the link points.
TEST(CreateDirSafe, ResolvedPathWalkedAgainRefusesAFolderOnTheWaySwappedForALink) {
  Dir d;
  ASSERT_EQ(::mkdir((d / "real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((d / "real").c_str(), (d / "via").c_str()), 0);
  files::UniqueFd fd = files::create_dir_safe(d / "via/m/res", 0755);  // the submitter's own link: followed
  const std::string resolved = files::resolved_dir_path(fd.get(), d / "via/m/res");
  EXPECT_EQ(resolved, fs::canonical(d / "real/m/res").string());
  files::create_dir_safe(resolved, 0755, files::LinksOnTheWay::kRefuse);  // nothing swapped: the same folder

  ASSERT_EQ(::mkdir((d / "victim").c_str(), 0700), 0);
  ASSERT_EQ(::rename((d / "real/m").c_str(), (d / "real/m.old").c_str()), 0);
  ASSERT_EQ(::symlink((d / "victim").c_str(), (d / "real/m").c_str()), 0);
  try {
    files::create_dir_safe(resolved, 0755, files::LinksOnTheWay::kRefuse);
    FAIL() << "a symlink on the way was followed";
  } catch (const FileError& e) {
    EXPECT_EQ(e.code(), ELOOP);
    EXPECT_NE(std::string(e.what()).find(fs::canonical(d / "real").string() + "/m is a symbolic link"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_empty(d / "victim")) << "the walk created a folder through the link";
  // The same path followed (kFollow) would have gone through: what delivery used to do.
  files::create_dir_safe(resolved, 0755, files::LinksOnTheWay::kFollow);
  EXPECT_TRUE(fs::is_directory(d / "victim/res"));
}

TEST(CreateDirSafe, ResolvedPathOfARemovedFolderIsAnError) {
  Dir d;
  files::UniqueFd fd = files::create_dir_safe(d / "gone", 0755);
  ASSERT_EQ(::rmdir((d / "gone").c_str()), 0);
  EXPECT_THROW(files::resolved_dir_path(fd.get(), d / "gone"), FileError);
}

// ------------------------------------------------------------ FsCredentials ---

std::vector<gid_t> thread_groups() {
  std::vector<gid_t> g(size_t(::syscall(SYS_getgroups, 0, nullptr)));
  g.resize(size_t(::syscall(SYS_getgroups, g.size(), g.data())));
  std::sort(g.begin(), g.end());
  return g;
}

int open_error(const std::string& path) {
  try {
    files::open_regular_file(path);
  } catch (const FileError& e) {
    return e.code();
  }
  return 0;
}

int write_error(const std::string& dir, const std::string& name) {
  try {
    files::write_file_safe(dir, name, "written");
  } catch (const FileError& e) {
    return e.code();
  }
  return 0;
}

// Under a scope for nobody, this thread cannot read a root-only file nor write
// into a root-owned 0755 folder, while another thread at the same moment can;
// after the scope, this thread can again.
TEST(FsCredentialsTest, OnlyTheCallingThreadActsAsTheUser) {
  if (!is_root()) GTEST_SKIP() << "FsCredentials changes nothing when not root";
  Dir d;
  const std::string secret = d / "secret", root_dir = d / "root-folder";
  put(secret, "root only", 0600);
  ASSERT_EQ(::mkdir(root_dir.c_str(), 0755), 0);
  const std::vector<gid_t> root_groups = thread_groups();

  // The other thread starts BEFORE the scope: a thread created inside it would
  // inherit its credentials (clone(2) copies the creating thread's).
  std::promise<void> scope_entered;
  auto other = std::async(std::launch::async, [&, entered = scope_entered.get_future()]() mutable {
    entered.wait();
    std::string text;
    files::UniqueFd fd = files::open_regular_file(secret);
    char buf[16] = {};
    if (::read(fd.get(), buf, sizeof buf) > 0) text = buf;
    files::write_file_safe(root_dir, "by-other-thread", "root's");
    return std::make_pair(text, thread_groups());
  });
  {
    FsCredentials as_nobody(kNobody, kNogroup);
    EXPECT_TRUE(as_nobody.active());  // no ASSERT before set_value: the other thread must be released
    EXPECT_EQ(thread_groups(), FsCredentials::supplementary_groups(kNobody, kNogroup));
    EXPECT_EQ(open_error(secret), EACCES);
    EXPECT_EQ(write_error(root_dir, "by-nobody"), EACCES);

    scope_entered.set_value();  // the other thread works while this scope is in force
    const auto [text, groups] = other.get();
    EXPECT_EQ(text, "root only");
    EXPECT_EQ(groups, root_groups);
    EXPECT_EQ(read_file(root_dir + "/by-other-thread"), "root's");
    EXPECT_EQ(lstat_of(root_dir + "/by-other-thread").st_uid, 0u);

    EXPECT_EQ(open_error(secret), EACCES);  // still nobody here
    EXPECT_EQ(write_error(root_dir, "by-nobody"), EACCES);
  }
  EXPECT_EQ(thread_groups(), root_groups);
  EXPECT_EQ(open_error(secret), 0);
  EXPECT_EQ(write_error(root_dir, "after-scope"), 0);
  EXPECT_EQ(entries(root_dir), (std::vector<std::string>{"after-scope", "by-other-thread"}));
}

// The writer under a non-root user: a read-only folder is EACCES and leaves
// nothing; its own folder works, the file is the user's; a write-only
// ("drop box", 0333) folder works through O_PATH and syncfs.
TEST(FsCredentialsTest, WritesAsTheUser) {
  if (!is_root()) GTEST_SKIP() << "FsCredentials changes nothing when not root";
  Dir d;
  const std::string ro = d / "read-only", own = d / "own", dropbox = d / "dropbox";
  for (const auto& p : {ro, own, dropbox}) ASSERT_EQ(::mkdir(p.c_str(), 0755), 0);
  ASSERT_EQ(::chown(own.c_str(), kNobody, kNogroup), 0);
  ASSERT_EQ(::chown(dropbox.c_str(), kNobody, kNogroup), 0);
  ASSERT_EQ(::chmod(dropbox.c_str(), 0333), 0);
  {
    FsCredentials as_nobody(kNobody, kNogroup);
    for (TempMethod m : {TempMethod::kAuto, TempMethod::kNamed}) {
      try {
        files::write_file_safe(ro, "0.proof.json", "{}", 0644, m);
        ADD_FAILURE() << "nobody wrote into root's 0755 folder";
      } catch (const FileError& e) {
        EXPECT_EQ(e.code(), EACCES);
        EXPECT_TRUE(contains(e.what(), ro + "/0.proof.json")) << e.what();
        EXPECT_TRUE(contains(e.what(), "Permission denied")) << e.what();
      }
      files::write_file_safe(own, "0.proof.json", "mine", 0644, m);
      files::write_file_safe(dropbox, "0.proof.json", "dropped", 0644, m);
    }
    files::UniqueFd sub = files::create_dir_safe(own + "/proofs/job1");
    files::write_file_safe(sub.get(), own + "/proofs/job1", "0.public.json", "[]");
  }
  EXPECT_TRUE(entries(ro).empty());
  EXPECT_EQ(read_file(own + "/0.proof.json"), "mine");
  EXPECT_EQ(read_file(dropbox + "/0.proof.json"), "dropped");
  EXPECT_EQ(entries(dropbox), std::vector<std::string>{"0.proof.json"});
  for (const std::string& p : {own + "/0.proof.json", dropbox + "/0.proof.json", own + "/proofs/job1",
                              own + "/proofs/job1/0.public.json"}) {
    struct stat st = lstat_of(p);
    EXPECT_EQ(st.st_uid, kNobody) << p;
    EXPECT_EQ(st.st_gid, kNogroup) << p;
  }
}

// The gid and the supplementary groups are both in force.
TEST(FsCredentialsTest, GroupsGrantAccess) {
  if (!is_root()) GTEST_SKIP() << "FsCredentials changes nothing when not root";
  Dir d;
  constexpr gid_t kTeam = 4242;  // no member needed: the scope names it
  const std::string team = d / "team", primary = d / "primary";
  for (const auto& p : {team, primary}) {
    ASSERT_EQ(::mkdir(p.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(p.c_str(), 0770), 0);  // mkdir's mode loses the umask's bits
  }
  ASSERT_EQ(::chown(team.c_str(), 0, kTeam), 0);
  ASSERT_EQ(::chown(primary.c_str(), 0, kNogroup), 0);
  {
    FsCredentials plain(kNobody, kNogroup, {kNogroup});
    EXPECT_EQ(write_error(team, "a"), EACCES);
    EXPECT_EQ(write_error(primary, "a"), 0);
  }
  {
    FsCredentials with_team(kNobody, kNogroup, {kNogroup, kTeam});
    EXPECT_EQ(thread_groups(), (std::vector<gid_t>{kTeam, kNogroup}));
    EXPECT_EQ(write_error(team, "b"), 0);
  }
  {
    FsCredentials gid_only(kNobody, kTeam, {});
    EXPECT_TRUE(thread_groups().empty());
    EXPECT_EQ(write_error(team, "c"), 0);
    EXPECT_EQ(write_error(primary, "c"), EACCES);
  }
  EXPECT_EQ(entries(team), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(lstat_of(team + "/c").st_gid, kTeam);
}

TEST(FsCredentialsTest, SupplementaryGroupsFromThePasswdEntry) {
  uid_t unknown = 43210;
  while (::getpwuid(unknown) != nullptr) ++unknown;
  EXPECT_EQ(FsCredentials::supplementary_groups(unknown, 777), std::vector<gid_t>{777});
  const struct passwd* nobody = ::getpwuid(kNobody);
  if (nobody == nullptr) GTEST_SKIP() << "no passwd entry for uid 65534 here";
  // Independently: getgrouplist for the same name.
  std::vector<gid_t> want(64);
  int n = int(want.size());
  ASSERT_GE(::getgrouplist(nobody->pw_name, nobody->pw_gid, want.data(), &n), 0);
  want.resize(size_t(n));
  EXPECT_EQ(FsCredentials::supplementary_groups(kNobody, nobody->pw_gid), want);
  EXPECT_NE(std::find(want.begin(), want.end(), nobody->pw_gid), want.end());
}

// Not root: nothing to switch to, and the scope says so.
TEST(FsCredentialsTest, NoOpWhenNotRoot) {
  if (!is_root()) {
    FsCredentials c(kNobody, kNogroup);
    EXPECT_FALSE(c.active());
    return;
  }
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(kNogroup) != 0 || ::setuid(kNobody) != 0) ::_exit(3);
    bool active;
    {
      FsCredentials c(0, 0, {0});
      active = c.active();
    }
    ::_exit(active ? 1 : ::setfsuid(uid_t(-1)) == int(kNobody) ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: active when not root; 2: fsuid changed; 3: setuid failed";
}

}  // namespace
}  // namespace zkfarm
