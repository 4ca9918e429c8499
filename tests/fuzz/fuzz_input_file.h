// The readers under test take a path, not bytes: fuzz_input_file writes one input to a file of
// this process's own temporary folder (tandem-fuzz-XXXXXX in $TMPDIR, else /dev/shm when there is
// one, else /tmp; removed at exit)
// and returns its path. `name` gives the file name, whose extension some readers look at
// (CalibrationTable::load reads a ".pb" profile, anything else as a TSV table).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <google/protobuf/stubs/logging.h>

namespace tandem::fuzz {

// Never destroyed, so that the exit handler that removes the folder can still read its name.
inline const std::string& fuzz_temp_dir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    auto* d = new std::string(base + "/tandem-fuzz-XXXXXX");
    if (!mkdtemp(d->data())) std::abort();  // the harness cannot run without it
    std::atexit([] { std::error_code ec; std::filesystem::remove_all(fuzz_temp_dir(), ec); });
    return d;
  }();
  return *dir;
}

// Protobuf logs every string field with invalid UTF-8 that it parses: silence it, the readers
// report what they refuse themselves. Called once, from LLVMFuzzerInitialize.
inline void quiet_protobuf() { google::protobuf::SetLogHandler(nullptr); }

inline std::string fuzz_input_file(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = fuzz_temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();
  return path;
}

}  // namespace tandem::fuzz
