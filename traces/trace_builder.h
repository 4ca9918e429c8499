// Collects the times a backend gives tasks into a proto::Trace. A backend calls begin_rank with a
// rank's program, then task() for each task that ran and memory() at each change of memory in
// use, in any order; finish() returns the trace (traces/proto/trace.proto).
//
// begin_rank keeps only what the trace needs of each task (stream, bytes, flops, label: 24 bytes
// a task), so a rank's Program may be destroyed right after, and labels are interned once in one
// string table for the whole trace.
//
// Thread-compatible: one builder must not be called from two threads at once (give each thread
// its own builder, or lock around the calls). The Schedule must outlive the builder.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/schedule.h"
#include "trace.pb.h"

namespace tandem {

inline constexpr const char* kTraceFormat = "tandem-trace-2";

class TraceBuilder {
 public:
  // backend: "sim", "host" or "cuda" (Error otherwise); machine: free text (GPU model, driver...).
  TraceBuilder(const Schedule& schedule, std::string backend, std::string machine);
  ~TraceBuilder();
  TraceBuilder(TraceBuilder&&) noexcept;
  TraceBuilder& operator=(TraceBuilder&&) noexcept;

  // Once per rank, before its task() calls. Error if the rank is outside the world, already begun,
  // or its task ids are not the tasks' indices in the program.
  void begin_rank(const Program& program);
  // Error if the rank has not begun, the id is not one of its tasks, a time is not finite or
  // end_s < start_s. A task recorded twice is reported by finish().
  void task(int rank, TaskId id, double start_s, double end_s);
  // Memory in use on the rank after a change at time_s. Allowed before begin_rank.
  void memory(int rank, double time_s, int64_t device_bytes, int64_t host_bytes);
  // The trace: ranks in increasing order, events of each rank sorted by task id, memory samples
  // by time (stable), peaks from the samples, created_unix_s unset (set it if you want it).
  // Error if a task was recorded twice (the builder is left as it was) or finish was called before.
  proto::Trace finish();

 private:
  struct TaskInfo {
    int64_t bytes = 0;
    double flops = 0;
    uint32_t label = 0;
    uint8_t stream = 0;
  };
  struct Event {
    TaskId id;
    double start_s, end_s;
  };
  struct Sample {
    double time_s;
    int64_t device_bytes, host_bytes;
  };
  struct RankState {
    bool begun = false;
    std::vector<TaskInfo> tasks;  // indexed by task id
    std::vector<Event> events;
    std::vector<Sample> memory;
  };

  RankState& state(int rank, const char* what);
  uint32_t intern(std::string label);

  const Schedule* schedule_;
  std::string backend_, machine_;
  std::vector<std::unique_ptr<RankState>> ranks_;  // by rank; null until the rank is used
  std::unordered_map<std::string, uint32_t> label_ids_;
  std::vector<std::string> labels_;
  bool finished_ = false;
};

}  // namespace tandem
