// The pieces of a trace that every writer builds the same way (TraceBuilder for exec, the
// simulation's streamed trace for sim): what a trace keeps of each task of a program, the label
// string table, the header, and one rank's record from its events and memory samples.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/schedule.h"
#include "trace.pb.h"

namespace tandem {

// Labels interned in first-seen order: the trace's string table.
class TraceLabels {
 public:
  uint32_t intern(std::string label);
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> labels_;
};

// What the trace keeps of a task: 24 bytes.
struct TraceTaskInfo {
  int64_t bytes = 0;  // collective/send/recv/copy: its bytes; compute: bytes_moved() rounded
  double flops = 0;   // compute: matmul_flops()
  uint32_t label = 0;
  uint8_t stream = 0;
};

// By task id. Error if a task id is not its index in the program.
std::vector<TraceTaskInfo> trace_task_infos(const Schedule& schedule, const Program& program, TraceLabels& labels);

struct TraceEvent {
  TaskId id;
  double start_s, end_s;
};
struct TraceSample {
  double time_s;
  int64_t device_bytes, host_bytes;
};

// Every field but the ranks and the trailer; created_unix_s unset.
proto::Trace trace_header(const Schedule& schedule, const std::string& backend, const std::string& machine,
                          const TraceLabels& labels);

// One rank's record: `events` sorted by task id, `samples` in time order, peaks from the samples.
void fill_trace_rank(int rank, std::span<const TraceEvent> events, const std::vector<TraceTaskInfo>& infos,
                     std::span<const TraceSample> samples, proto::Rank& out);

}  // namespace tandem
