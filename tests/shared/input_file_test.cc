// read_input_file: regular files only, bounded size, every refusal names the path.
#include "shared/input_file.h"

#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "shared/error.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir_path() {
  return fs::temp_directory_path() / ("tandem_input_file_test." + std::to_string(::getpid()));
}

fs::path temp_dir() {
  fs::path d = temp_dir_path();
  fs::create_directories(d);
  return d;
}

// ctest runs each test in its own process: the process's directory goes when it exits, so that
// no run leaves its files (a fifo, a 1 KiB file) in /tmp.
struct RemoveTempDirAtExit {
  ~RemoveTempDirAtExit() {
    std::error_code ignored;
    fs::remove_all(temp_dir_path(), ignored);
  }
} remove_temp_dir_at_exit;

std::string message_of(const std::string& path, int64_t max_bytes) {
  try {
    read_input_file(path, "scenario", max_bytes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "";
}

TEST(InputFile, ReadsARegularFileWhole) {
  const fs::path p = temp_dir() / "ok.textproto";
  std::ofstream(p) << "model { layers: 2 }\n";
  EXPECT_EQ(read_input_file(p.string(), "scenario", 1024), "model { layers: 2 }\n");
}

TEST(InputFile, RefusesADevice) {
  const std::string m = message_of("/dev/zero", 1024);
  EXPECT_NE(m.find("/dev/zero: cannot read scenario: not a regular file"), std::string::npos) << m;
}

TEST(InputFile, RefusesADirectory) {
  const std::string m = message_of(temp_dir().string(), 1024);
  EXPECT_NE(m.find("it is a directory"), std::string::npos) << m;
}

TEST(InputFile, RefusesAFifoWithoutHanging) {
  const fs::path p = temp_dir() / "fifo";
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  const std::string m = message_of(p.string(), 1024);
  EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
}

TEST(InputFile, RefusesAFileOverTheLimit) {
  const fs::path p = temp_dir() / "big";
  std::ofstream(p) << std::string(1025, 'x');
  const std::string m = message_of(p.string(), 1024);
  EXPECT_NE(m.find("holds 1025 bytes"), std::string::npos) << m;
  EXPECT_EQ(read_input_file(p.string(), "scenario", 1025).size(), 1025u);
}

TEST(InputFile, RefusesAMissingFileAndAnEmptyPath) {
  EXPECT_NE(message_of((temp_dir() / "missing").string(), 1024).find("No such file"), std::string::npos);
  EXPECT_NE(message_of("", 1024).find("the path is empty"), std::string::npos);
}

}  // namespace
}  // namespace tandem
