// A protobuf input stream that hashes (FNV-1a 64, traces/fnv1a.h) the bytes its reader consumes,
// as they pass: the trace reader checks a file's checksum without reading the file twice.
#pragma once

#include <cstdint>

#include <google/protobuf/io/zero_copy_stream.h>

#include "traces/fnv1a.h"

namespace tandem {

class HashingInputStream : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit HashingInputStream(google::protobuf::io::ZeroCopyInputStream* in) : in_(in) {}

  // The hash of every byte consumed so far. Exact only when no CodedInputStream reads from this
  // stream (a CodedInputStream hands back what it has not consumed when it is destroyed).
  uint64_t digest();

  bool Next(const void** data, int* size) override;
  void BackUp(int count) override;
  bool Skip(int count) override;
  int64_t ByteCount() const override { return in_->ByteCount(); }

 private:
  void settle();  // hashes the last buffer handed out, now consumed whole

  google::protobuf::io::ZeroCopyInputStream* in_;
  uint64_t hash_ = kFnvOffsetBasis;
  const void* pending_ = nullptr;  // the last buffer Next handed out, not hashed yet
  int pending_size_ = 0;
};

}  // namespace tandem
