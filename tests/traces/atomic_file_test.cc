#include "traces/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

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

// Sets the test hooks for one test and restores them.
struct Hooks {
  explicit Hooks(bool use_o_tmpfile, void (*after_write)(const char*) = nullptr) {
    atomic_file_test_hooks().use_o_tmpfile = use_o_tmpfile;
    atomic_file_test_hooks().after_write = after_write;
  }
  ~Hooks() { atomic_file_test_hooks() = AtomicFileTestHooks{}; }
};

TEST(TraceAtomicFile, NamedTemporaryFallbackReplacesToo) {
  Hooks hooks(false);
  testing::TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  EXPECT_EQ(slurp(path), "second");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

TEST(TraceAtomicFile, EmptyPathIsBadInput) {
  try {
    write_file_atomic("", "x");
    FAIL() << "wrote to an empty path";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("empty output path"), std::string::npos) << e.what();
  }
}

// A link is followed: the file it names gets the content, the link stays a link (relative
// targets against the link's directory, chains of links, a dangling link creating its target).
TEST(TraceAtomicFile, SymbolicLinkIsFollowed) {
  for (bool o_tmpfile : {true, false}) {
    Hooks hooks(o_tmpfile);
    testing::TempDir dir;
    const auto p = dir.path();
    write_file_atomic(dir.file("real.txt"), "old");
    std::filesystem::create_symlink("real.txt", p / "link");
    std::filesystem::create_symlink("link", p / "link2");
    write_file_atomic(dir.file("link2"), "new");
    EXPECT_TRUE(std::filesystem::is_symlink(p / "link"));
    EXPECT_TRUE(std::filesystem::is_symlink(p / "link2"));
    EXPECT_EQ(std::filesystem::read_symlink(p / "link"), "real.txt");
    EXPECT_EQ(slurp(dir.file("real.txt")), "new");

    std::filesystem::create_symlink("sub/made.txt", p / "dangling");
    write_file_atomic(dir.file("dangling"), "made");
    EXPECT_TRUE(std::filesystem::is_symlink(p / "dangling"));
    EXPECT_EQ(slurp(dir.file("sub/made.txt")), "made");
    EXPECT_EQ(dir.entries(), (std::vector<std::string>{"dangling", "link", "link2", "real.txt", "sub"}));
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(p / "sub"), std::filesystem::directory_iterator()), 1);
  }
}

TEST(TraceAtomicFile, LinkToADirectoryIsAnError) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "d");
  std::filesystem::create_symlink("d", dir.path() / "l");
  EXPECT_THROW(write_file_atomic(dir.file("l"), "x"), Error);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "d"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path() / "l"));
}

// A FIFO is written into, not replaced: its reader gets every byte, and it is still a FIFO.
TEST(TraceAtomicFile, FifoIsWrittenInPlace) {
  testing::TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  const std::string bytes(200000, 'f');  // more than a pipe's 64 KiB buffer
  write_file_atomic(fifo, bytes);
  reader.join();
  EXPECT_EQ(got, bytes);
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"pipe"});
}

// `tandem compare A B -o /dev/null` as root used to replace /dev/null with a regular file.
// On a device node of the test's own (the null device, 1:3), never the machine's /dev/null: a
// regression would replace only the test's node. Making a node needs root (CAP_MKNOD).
TEST(TraceAtomicFile, CharacterDeviceIsWrittenInPlace) {
  testing::TempDir dir;
  const std::string node = dir.file("null");
  if (::mknod(node.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0)
    GTEST_SKIP() << "cannot make a device node here (needs root): " << std::strerror(errno);
  std::filesystem::create_symlink(node, dir.path() / "null-link");
  write_file_atomic(node, "discarded");
  write_file_atomic(dir.file("null-link"), "discarded");
  struct stat st;
  ASSERT_EQ(::lstat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(std::filesystem::is_symlink(dir.path() / "null-link"));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"null", "null-link"}));
}

// /dev/stdout redirected to a regular file: written through the descriptor, after what the process
// already wrote there, and the file is not replaced (the shell's descriptor still points at it).
TEST(TraceAtomicFile, DevStdoutIsTheDescriptor) {
  testing::TempDir dir;
  const std::string out = dir.file("captured");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::dup2(fd, 1) < 0) ::_exit(10);
    if (::write(1, "before ", 7) != 7) ::_exit(11);
    try {
      write_file_atomic("/dev/stdout", "report");
    } catch (...) {
      ::_exit(12);
    }
    if (::write(1, " after", 6) != 6) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(out), "before report after");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"captured"});
}

// Runs write_file_atomic(path, "new") in a child process with `hook` called once the bytes are
// written; returns the child's wait status.
int write_in_child(const std::string& path, bool use_o_tmpfile, void (*hook)(const char*)) {
  const pid_t child = ::fork();
  if (child == 0) {
    atomic_file_test_hooks().use_o_tmpfile = use_o_tmpfile;
    atomic_file_test_hooks().after_write = hook;
    try {
      write_file_atomic(path, "new");
    } catch (...) {
      ::_exit(12);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

// SIGTERM or SIGINT while a named temporary file exists: the handler removes it, and the process
// still dies of the signal; the old file is intact.
TEST(TraceAtomicFile, SignalWhileTemporaryFileIsNamedLeavesNoTemporary) {
  for (bool o_tmpfile : {false, true}) {
    for (int sig : {SIGTERM, SIGINT}) {
      testing::TempDir dir;
      const std::string path = dir.file("out.bin");
      write_file_atomic(path, "old");
      static int signal_to_raise;
      signal_to_raise = sig;
      const int status = write_in_child(path, o_tmpfile, [](const char* temp) {
        if (temp && ::access(temp, F_OK) == 0) ::raise(signal_to_raise);
      });
      ASSERT_TRUE(WIFSIGNALED(status)) << "o_tmpfile " << o_tmpfile << " signal " << sig << " status " << status;
      EXPECT_EQ(WTERMSIG(status), sig);
      EXPECT_EQ(slurp(path), "old");
      EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
    }
  }
}

// SIGKILL cannot be handled: with O_TMPFILE the new bytes have no name until they are complete,
// so a writer killed while writing leaves nothing behind.
TEST(TraceAtomicFile, KilledWriterLeavesNothing) {
  testing::TempDir dir;
  const int probe = ::open(dir.path().c_str(), O_TMPFILE | O_WRONLY, 0600);
  if (probe < 0) GTEST_SKIP() << "no O_TMPFILE on this file system: " << std::strerror(errno);
  ::close(probe);
  auto kill_while_unnamed = [](const char* temp) {
    if (!temp) ::raise(SIGKILL);
  };
  int status = write_in_child(dir.file("fresh.bin"), true, kill_while_unnamed);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(dir.entries().empty());

  write_file_atomic(dir.file("out.bin"), "old");
  status = write_in_child(dir.file("out.bin"), true, kill_while_unnamed);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(slurp(dir.file("out.bin")), "old");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.bin"});
}

}  // namespace
}  // namespace tandem
