// Builds one rank's Program and derives the data dependencies itself: every task that reads a
// buffer waits for the buffer's last writer on each other stream, and every task that writes it
// (Alloc and Free included) also waits for its last readers there. An access to a whole buffer
// meets every access to it and to its views; an access to a view meets the accesses to the whole
// buffer and to the views whose bytes overlap it, so disjoint parts of one buffer (the row blocks
// of a ring exchange) are written and read on different streams at once. Tasks of one stream are
// ordered by the stream, so only cross-stream edges are stored.
// Generators therefore say what a task touches and on which stream, never how to order it.
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include "shared/schedule.h"

namespace tandem {

// A backstop against runaway generation: a program past these sizes is refused (Error, bad input)
// instead of growing until the allocator fails. Commands estimate the size before generating
// (shared/program_size.h) and refuse far earlier, within their memory budget.
inline constexpr size_t kMaxProgramTasks = size_t(1) << 26;    // about 20 GiB of tasks
inline constexpr size_t kMaxProgramBuffers = size_t(1) << 25;

class ProgramBuilder {
 public:
  // max_tasks (and max_buffers): the hard limit; tests give smaller ones.
  explicit ProgramBuilder(int rank, size_t max_tasks = kMaxProgramTasks, size_t max_buffers = kMaxProgramBuffers);
  // Capacity hints, to avoid regrowing large programs (capped at the limits above).
  void reserve(size_t tasks, size_t buffers);

  BufferId buffer(std::string name, int64_t bytes, DType dtype, BufferRole role,
                  Placement placement = Placement::kDevice);
  BufferId view(BufferId of, int64_t offset_bytes, int64_t bytes, DType dtype, std::string name);
  void set_slice(BufferId id, const GlobalSlice& slice);
  void set_shard(BufferId id, BufferId shard_of, int64_t offset_bytes);
  const Buffer& buffer_at(BufferId id) const { return program_.buffers[id]; }

  TaskId alloc(BufferId b, Stream s, std::initializer_list<TaskId> extra = {});
  TaskId free(BufferId b, Stream s, std::initializer_list<TaskId> extra = {});
  TaskId compute(Compute c, std::initializer_list<TaskId> extra = {}, Stream s = Stream::kCompute);
  TaskId collective(Collective c, Stream s, std::initializer_list<TaskId> extra = {});
  TaskId send(int peer, BufferId b, int tag, int microbatch, Stream s, std::initializer_list<TaskId> extra = {});
  TaskId recv(int peer, BufferId b, int tag, int microbatch, Stream s, std::initializer_list<TaskId> extra = {});
  TaskId copy(CopyDirection dir, BufferId src, BufferId dst, Stream s, std::initializer_list<TaskId> extra = {});

  // The last task issued on a stream (kNoId if none).
  TaskId last_on(Stream s) const { return last_on_stream_[static_cast<int>(s)]; }
  TaskId size() const { return static_cast<TaskId>(program_.tasks.size()); }

  Program finish() &&;

 private:
  struct Access {
    std::array<TaskId, kStreamCount> last_write;
    std::array<TaskId, kStreamCount> last_read;
  };
  BufferId root(BufferId b) const { return roots_[b]; }
  // The buffers a task reads or writes: a view of ids that live in the task's own op (or on the
  // caller's stack), so that no list is copied per task.
  struct Ids {
    const BufferId* data = nullptr;
    size_t size = 0;
    const BufferId* begin() const { return data; }
    const BufferId* end() const { return data + size; }
  };
  TaskId add(Stream s, TaskOp&& op, Ids reads, Ids writes, std::initializer_list<TaskId> extra);
  // Calls f(access record) for every record an access to b must respect.
  template <typename F>
  void for_each_conflict(BufferId b, F&& f) const;
  void record(BufferId b, int stream, TaskId id, bool write);

  Program program_;
  size_t max_tasks_, max_buffers_;
  std::vector<Access> all_;      // by root: accesses to the buffer or any of its views
  std::vector<Access> own_;      // by buffer or view: accesses through that id itself
  std::vector<BufferId> roots_;  // the buffer a view (or a buffer itself) allocates in
  std::vector<int64_t> root_offset_;               // a view's first byte in its root
  std::vector<std::vector<BufferId>> views_of_;    // by root: its views (of views too)
  std::array<TaskId, kStreamCount> last_on_stream_;
};

}  // namespace tandem
