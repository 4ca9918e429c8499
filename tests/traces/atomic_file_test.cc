#include "traces/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "shared/error.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TraceAtomicFile, WritesCreatesParentsAndReplaces) {
  testing::TempDir dir;
  const std::string path = dir.file("x/y/out.bin");
  write_file_atomic(path, std::string("first\0bytes", 11));
  EXPECT_EQ(slurp(path), std::string("first\0bytes", 11));
  write_file_atomic(path, "second");
  EXPECT_EQ(slurp(path), "second");
  write_file_atomic(path, "");
  EXPECT_EQ(slurp(path), "");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x"});
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() / "x" / "y"),
                          std::filesystem::directory_iterator()),
            1);  // no temporary file left beside it
}

TEST(TraceAtomicFile, RelativePathInCurrentDirectory) {
  testing::TempDir dir;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  write_file_atomic("plain.txt", "ok");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(slurp(dir.file("plain.txt")), "ok");
}

// A write that fails half way (the file-size limit, which binds root too) leaves the old file as
// it was and no temporary file, and says which path and why.
TEST(TraceAtomicFile, FailedWriteKeepsOldFile) {
  testing::TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomic(path, "old content");

  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  struct rlimit small = old_limit;
  small.rlim_cur = 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    write_file_atomic(path, std::string(100000, 'x'));
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, old_handler);

  EXPECT_NE(message.find("cannot write " + path), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(slurp(path), "old content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

TEST(TraceAtomicFile, UnwritableDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only directories";
  testing::TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomic(path, "old content");
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  try {
    write_file_atomic(path, "new");
    FAIL() << "wrote into a read-only directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Permission denied"), std::string::npos) << e.what();
  }
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
  EXPECT_EQ(slurp(path), "old content");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

TEST(TraceAtomicFile, TargetIsADirectory) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "taken" / "inside");
  try {
    write_file_atomic(dir.file("taken"), "x");
    FAIL() << "replaced a directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("taken")), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "taken" / "inside"));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"taken"});
}

TEST(TraceAtomicFile, ParentIsAFile) {
  testing::TempDir dir;
  write_file_atomic(dir.file("file"), "x");
  try {
    write_file_atomic(dir.file("file/out.bin"), "x");
    FAIL() << "wrote below a regular file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
