// The bytes the ranks of an MPI search exchange (search/search_run.cc): trivially copyable values
// copied as they are (the ranks run the same binary on the same kind of machine, so a double
// travels bit for bit) and strings with their length.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "shared/error.h"

namespace tandem::search {

class WireWriter {
 public:
  template <class T>
  WireWriter& put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  WireWriter& put_string(const std::string& s) {
    put(uint64_t(s.size()));
    bytes_ += s;
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    need(sizeof v);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    need(n);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void need(uint64_t n) const {
    if (n > bytes_.size() - at_)
      throw Error("search: internal: a rank's message ends early (" + std::to_string(bytes_.size()) + " bytes)",
                  ErrorKind::kInternal);
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace tandem::search
