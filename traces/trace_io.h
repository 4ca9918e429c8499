// Trace files: the binary protobuf encoding of one proto::Trace (traces/proto/trace.proto says
// how it is laid out and why). write_trace writes it atomically (traces/atomic_file.h); read_trace
// checks it whole before returning, so that reports can trust what they read.
#pragma once

#include <string>

#include "trace.pb.h"

namespace tandem {

// Error, naming the path, if the trace breaks a rule that read_trace checks (a trace written is
// always one that reads back) or the file cannot be written.
void write_trace(const proto::Trace& trace, const std::string& path);

// Error naming the path and what is wrong when the file is missing or unreadable, cut short, not a
// tandem trace (no "tandem-trace-1" marker at its start) or another version of the format, or
// inconsistent: columns of unequal length, a label or stream out of range, a time not finite,
// end_s < start_s, task ids not increasing, a rank twice, an event count that does not add up.
proto::Trace read_trace(const std::string& path);

// The checks of read_trace on a trace in memory; `what` starts the message ("trace x.pb").
void check_trace(const proto::Trace& trace, const std::string& what);

}  // namespace tandem
