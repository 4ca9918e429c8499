// Writes a trace file rank by rank, so that a trace larger than memory can be written: the header
// (format, scenario, backend, machine, world size, labels) first, then one Rank record per
// add_rank() as the caller produces it, then the trailer: event_count and the checksum. Memory
// stays bounded by one rank record plus a write buffer.
//
// The bytes are those protobuf gives one Trace serialized whole (field-number order), so any
// protobuf library reads the file as a Trace (traces/proto/trace.proto); they depend only on the
// trace's content, so the same trace always gives the same file. The checksum is the FNV-1a 64-bit
// hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of every byte of the file before the
// tag of field 16, stored as a fixed64 (little-endian) right after that tag.
//
// The file appears atomically at finish() (traces/atomic_file.h); a writer destroyed before
// finish() leaves the old file, if any, untouched.
//
//   TraceWriter w(path, header);            // header: a Trace without ranks (labels included)
//   for (...) w.add_rank(rank);             // increasing rank order
//   w.finish();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "traces/atomic_file.h"
#include "trace.pb.h"
#include "traces/fnv1a.h"

namespace tandem {

class TraceWriter {
 public:
  // Error if the header breaks a rule of read_trace (format, backend, world size) or holds ranks,
  // or the file cannot be created. The event count and the checksum are the writer's to set.
  TraceWriter(const std::string& path, const proto::Trace& header);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Error, naming the path, if the rank breaks a rule of read_trace (columns of unequal length,
  // labels or streams out of range, times, task order, rank order or range) or its record takes
  // more than 2 GiB (the limit of one protobuf message).
  void add_rank(const proto::Rank& rank);
  // Writes event_count and the checksum, and puts the file in place.
  void finish();

  uint64_t event_count() const { return events_; }

 private:
  void put(std::string_view bytes);
  void flush();

  AtomicFile file_;
  proto::Trace shell_;  // the header's fields, to check each rank against (check_trace)
  std::string after_ranks_;  // the fields written after the ranks (the prediction interval), encoded
  std::string buffer_;
  uint64_t hash_ = kFnvOffsetBasis;
  uint64_t events_ = 0;
  int last_rank_ = -1;
  bool finished_ = false;
};

// A whole trace in memory, written through TraceWriter (what write_trace does).
void write_trace_streamed(const proto::Trace& trace, const std::string& path);

}  // namespace tandem
