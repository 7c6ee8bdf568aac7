// witgen/source_index.hpp (issue 32): a generator's source hash through the
// cache's index of stats. Unchanged sources are found without being read; a
// change of content and mtime at the same size is hashed again; an index that
// is damaged, forged for other stats, or a link is only a re-hash; sources
// changed too recently to trust their timestamps are not recorded.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "witgen/source_index.hpp"

namespace zkfarm::witgen {
namespace {

namespace fs = std::filesystem;

class SourceIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/zkfarm-source-index-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "src");
    src_.kind = GeneratorKind::kNative;
    src_.dir = (root_ / "src").string();
    src_.files = {"a.cpp", "b.dat"};
    write("a.cpp", "int a = 1;\n");
    write("b.dat", "data");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(root_ / "src" / name, std::ios::binary | std::ios::trunc) << text;
  }
  // Sets a file's mtime (a new one, as an edit in another second would give it).
  void set_mtime(const std::string& name, time_t sec) {
    struct timespec times[2] = {{sec, 0}, {sec, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, (root_ / "src" / name).c_str(), times, 0), 0);
  }
  // settle 0: these files were written just now (the default waits 2 s).
  IndexedHash look() { return indexed_source_hash(src_, index(), std::chrono::nanoseconds(0)); }
  std::string index() const { return (root_ / "index").string(); }
  fs::path only_index_file() const {
    fs::path found;
    for (const auto& e : fs::directory_iterator(index())) found = e.path();
    return found;
  }

  fs::path root_;
  GeneratorSources src_;
};

TEST_F(SourceIndexTest, UnchangedSourcesAreFoundWithoutReadingThem) {
  const IndexedHash first = look();
  EXPECT_FALSE(first.from_index);
  EXPECT_EQ(first.hash, source_hash(src_));
  const IndexedHash second = look();
  EXPECT_TRUE(second.from_index) << "the second look read the sources again";
  EXPECT_EQ(second.hash, first.hash);
  struct stat st {};
  ASSERT_EQ(::stat(index().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(SourceIndexTest, AChangeOfTheSameSizeIsHashedAgain) {
  set_mtime("a.cpp", 1700000000);
  const IndexedHash first = look();
  ASSERT_TRUE(look().from_index);
  write("a.cpp", "int a = 2;\n");  // same size, new content
  set_mtime("a.cpp", 1700000001);
  const IndexedHash after = look();
  EXPECT_FALSE(after.from_index);
  EXPECT_NE(after.hash, first.hash);
  EXPECT_EQ(after.hash, source_hash(src_));
  EXPECT_TRUE(look().from_index);
  // The mtime put back as it was: the ctime (which no user sets) still
  // differs, once the kernel's coarse clock it is read from has ticked (the
  // case settle covers outside this test).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  write("a.cpp", "int a = 3;\n");
  set_mtime("a.cpp", 1700000001);
  const IndexedHash back = look();
  EXPECT_FALSE(back.from_index);
  EXPECT_EQ(back.hash, source_hash(src_));
}

TEST_F(SourceIndexTest, ADamagedForgedOrLinkedIndexIsOnlyAReHash) {
  const std::string right = look().hash;
  const fs::path file = only_index_file();
  ASSERT_FALSE(file.empty());
  std::string text;
  {
    std::ifstream in(file, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto put = [&](const std::string& t) { std::ofstream(file, std::ios::binary | std::ios::trunc) << t; };
  // Cut short, garbage, and the right stats under another (well-formed) hash
  // but for a file whose size differs: none is believed.
  for (const std::string& bad : {text.substr(0, text.size() / 2), std::string("garbage\n"),
                                 text.substr(0, text.find('\n') + 1) + std::string(64, 'a') + "\n" + "1:x 1 1 1 1 1\n"}) {
    put(bad);
    const IndexedHash h = look();
    EXPECT_FALSE(h.from_index) << bad;
    EXPECT_EQ(h.hash, right);
  }
  // A link where the index file was is neither followed nor written through.
  const fs::path target = root_ / "elsewhere";
  std::ofstream(target) << text;
  fs::remove(file);
  fs::create_symlink(target, file);
  const IndexedHash h = look();
  EXPECT_FALSE(h.from_index);
  EXPECT_EQ(h.hash, right);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(file))) << "replaced by rename, not written through the link";
  std::ifstream still(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(still), {}), text);
}

TEST_F(SourceIndexTest, SourcesChangedWithinTheSettleTimeAreNotRecorded) {
  const IndexedHash first = indexed_source_hash(src_, index(), std::chrono::hours(1));
  EXPECT_FALSE(first.from_index);
  EXPECT_EQ(first.hash, source_hash(src_));
  EXPECT_FALSE(indexed_source_hash(src_, index(), std::chrono::hours(1)).from_index);
}

}  // namespace
}  // namespace zkfarm::witgen
