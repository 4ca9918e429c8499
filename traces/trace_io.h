// Trace files: the binary protobuf encoding of one proto::Trace (traces/proto/trace.proto says
// how it is laid out and why), ended by a checksum: field 16, fixed64, the FNV-1a 64 hash
// (traces/fnv1a.h) of every byte of the file before that field's tag. write_trace writes it
// atomically (traces/atomic_file.h); read_trace checks it whole before returning, so that reports
// can trust what they read.
#pragma once

#include <cstddef>
#include <string>

#include "trace.pb.h"

namespace tandem {

// The longest text a trace may hold: a label, the scenario name or digest, the machine. Labels
// name tasks in a few dozen bytes (traces/task_label.h); the bound keeps a hostile trace from
// making a report allocate label length x events.
inline constexpr size_t kMaxTraceTextBytes = 4096;

// Error, naming the path, if the trace breaks a rule that read_trace checks (a trace written is
// always one that reads back) or the file cannot be written.
void write_trace(const proto::Trace& trace, const std::string& path);

// Error (bad input) naming the path and what is wrong when the file is missing or unreadable, not
// a regular file (a directory, a device such as /dev/zero, a FIFO) or larger than kMaxTraceBytes
// (shared/input_file.h), cut short, not a tandem trace (no kTraceFormat marker at its start) or
// another version of the format ("tandem-trace-1": written before traces carried a checksum),
// without its checksum or with one its bytes do not match ("checksum mismatch": the file was
// damaged after it was written), holding a text longer than kMaxTraceTextBytes, or inconsistent:
// columns of unequal length, a label or stream out of range, a time not finite, end_s < start_s,
// task ids not increasing, a rank twice, an event count that does not add up. The file is read
// once, rank record by rank record, and hashed as it is read.
proto::Trace read_trace(const std::string& path);

// The checks of read_trace on a trace in memory; `what` starts the message ("trace x.pb").
void check_trace(const proto::Trace& trace, const std::string& what);

// A trace's kind, from its backend: "sim" predicted, "host" and "cuda" measured.
enum class TraceKind { kPredicted, kMeasured };
TraceKind trace_kind(const proto::Trace& trace);
// "predicted (backend sim)", "measured (backend host)": for messages.
std::string describe_kind(const proto::Trace& trace);

// The events of all ranks of a trace.
uint64_t event_total(const proto::Trace& trace);

}  // namespace tandem
