#include "shared/program_builder.h"

#include <algorithm>

#include "shared/error.h"

namespace tandem {

ProgramBuilder::ProgramBuilder(int rank, size_t max_tasks, size_t max_buffers)
    : max_tasks_(max_tasks), max_buffers_(max_buffers) {
  program_.rank = rank;
  last_on_stream_.fill(kNoId);
}

namespace {

[[noreturn]] void refuse(int rank, size_t count, const char* what) {
  throw Error("rank " + std::to_string(rank) + ": the program passes " + std::to_string(count) + " " + what +
              ", the generator's hard limit; the scenario asks for too large a program per rank (fewer "
              "micro-batches per iteration, global_batch / (dp x micro_batch), or fewer layers per stage)");
}

}  // namespace

void ProgramBuilder::reserve(size_t tasks, size_t buffers) {
  tasks = std::min(tasks, max_tasks_);
  buffers = std::min(buffers, max_buffers_);
  program_.tasks.reserve(tasks);
  program_.buffers.reserve(buffers);
  all_.reserve(buffers);
  own_.reserve(buffers);
  roots_.reserve(buffers);
  root_offset_.reserve(buffers);
  views_of_.reserve(buffers);
}

BufferId ProgramBuilder::buffer(std::string name, int64_t bytes, DType dtype, BufferRole role,
                                Placement placement) {
  if (program_.buffers.size() >= max_buffers_) refuse(program_.rank, max_buffers_, "buffers");
  Buffer b;
  b.id = static_cast<BufferId>(program_.buffers.size());
  b.name = std::move(name);
  b.bytes = bytes;
  b.dtype = dtype;
  b.role = role;
  b.placement = placement;
  program_.buffers.push_back(std::move(b));
  Access a;
  a.last_write.fill(kNoId);
  a.last_read.fill(kNoId);
  all_.push_back(a);
  own_.push_back(a);
  roots_.push_back(program_.buffers.back().id);
  root_offset_.push_back(0);
  views_of_.emplace_back();
  return program_.buffers.back().id;
}

BufferId ProgramBuilder::view(BufferId of, int64_t offset_bytes, int64_t bytes, DType dtype,
                              std::string name) {
  const Buffer& base = program_.buffers.at(of);
  if (offset_bytes < 0 || offset_bytes + bytes > base.bytes)
    throw Error("program builder: view " + name + " [" + std::to_string(offset_bytes) + ", +" +
                std::to_string(bytes) + ") outside " + base.name + " of " + std::to_string(base.bytes) + " bytes");
  BufferId id = buffer(std::move(name), bytes, dtype, base.role, base.placement);
  program_.buffers[id].view_of = of;
  program_.buffers[id].view_offset_bytes = offset_bytes;
  roots_[id] = roots_[of];
  root_offset_[id] = root_offset_[of] + offset_bytes;
  views_of_[roots_[id]].push_back(id);
  return id;
}

void ProgramBuilder::set_slice(BufferId id, const GlobalSlice& slice) {
  program_.buffers.at(id).has_slice = true;
  program_.buffers.at(id).slice = slice;
}

void ProgramBuilder::set_shard(BufferId id, BufferId shard_of, int64_t offset_bytes) {
  program_.buffers.at(id).shard_of = shard_of;
  program_.buffers.at(id).shard_offset_bytes = offset_bytes;
}

TaskId ProgramBuilder::add(Stream s, TaskOp&& op, Ids reads, Ids writes, std::initializer_list<TaskId> extra) {
  if (program_.tasks.size() >= max_tasks_) refuse(program_.rank, max_tasks_, "tasks");
  const TaskId id = static_cast<TaskId>(program_.tasks.size());
  const int si = static_cast<int>(s);
  Task t;
  t.id = id;
  t.stream = s;
  // The latest task needed on each other stream: it implies the earlier ones of its stream.
  std::array<TaskId, kStreamCount> need;
  need.fill(kNoId);
  auto want = [&](TaskId dep) {
    if (dep == kNoId) return;
    const int ds = static_cast<int>(program_.tasks[dep].stream);
    if (ds == si) return;  // the stream orders it
    if (need[ds] == kNoId || dep > need[ds]) need[ds] = dep;
  };
  for (TaskId e : extra) want(e);
  for (BufferId b : reads)
    for_each_conflict(b, [&](const Access& a) {
      for (int k = 0; k < kStreamCount; ++k) want(a.last_write[k]);
    });
  for (BufferId b : writes)
    for_each_conflict(b, [&](const Access& a) {
      for (int k = 0; k < kStreamCount; ++k) {
        want(a.last_write[k]);
        want(a.last_read[k]);
      }
    });
  // One allocation of the exact size (a task has a few dependencies; growing the vector one by
  // one allocated up to three times).
  std::array<TaskId, kStreamCount> deps;
  size_t k = 0;
  for (TaskId dep : need)
    if (dep != kNoId) deps[k++] = dep;
  std::sort(deps.begin(), deps.begin() + k);
  t.deps.assign(deps.begin(), deps.begin() + k);
  // `reads` and `writes` may point into `op`'s own lists (kept inside the op when short,
  // shared/inline_vector.h): record them before the op moves.
  for (BufferId b : reads) record(b, si, id, false);
  for (BufferId b : writes) record(b, si, id, true);
  t.op = std::move(op);
  last_on_stream_[si] = id;
  program_.tasks.push_back(std::move(t));
  return id;
}

template <typename F>
void ProgramBuilder::for_each_conflict(BufferId b, F&& f) const {
  const BufferId r = root(b);
  if (r == b || views_of_[r].empty()) return f(all_[r]);
  f(own_[r]);
  const int64_t lo = root_offset_[b], hi = lo + program_.buffers[b].bytes;
  for (BufferId v : views_of_[r]) {
    const int64_t vlo = root_offset_[v], vhi = vlo + program_.buffers[v].bytes;
    if (vlo < hi && lo < vhi) f(own_[v]);
  }
}

void ProgramBuilder::record(BufferId b, int stream, TaskId id, bool write) {
  for (Access* a : {&all_[root(b)], &own_[b]}) (write ? a->last_write : a->last_read)[stream] = id;
}

TaskId ProgramBuilder::alloc(BufferId b, Stream s, std::initializer_list<TaskId> extra) {
  return add(s, Alloc{b}, {}, {&b, 1}, extra);
}

TaskId ProgramBuilder::free(BufferId b, Stream s, std::initializer_list<TaskId> extra) {
  return add(s, Free{b}, {}, {&b, 1}, extra);
}

TaskId ProgramBuilder::compute(Compute c, std::initializer_list<TaskId> extra, Stream s) {
  TaskOp op(std::move(c));  // the lists are read where they now live
  const Compute& in = std::get<Compute>(op);
  const Ids reads{in.inputs.data(), in.inputs.size()}, writes{in.outputs.data(), in.outputs.size()};
  return add(s, std::move(op), reads, writes, extra);
}

TaskId ProgramBuilder::collective(Collective c, Stream s, std::initializer_list<TaskId> extra) {
  TaskOp op(std::move(c));
  // Reads the first buffer, writes the second (the first again for an in-place collective).
  const BufferIds& buffers = std::get<Collective>(op).buffers;
  const BufferId* b = buffers.data();
  const size_t n = buffers.size();
  const Ids reads{b, n > 0 ? 1u : 0u}, writes{n > 1 ? b + 1 : b, n > 0 ? 1u : 0u};
  return add(s, std::move(op), reads, writes, extra);
}

TaskId ProgramBuilder::send(int peer, BufferId b, int tag, int microbatch, Stream s,
                            std::initializer_list<TaskId> extra) {
  SendRecv m{true, peer, program_.buffers.at(b).bytes, b, tag, microbatch};
  return add(s, m, {&b, 1}, {}, extra);
}

TaskId ProgramBuilder::recv(int peer, BufferId b, int tag, int microbatch, Stream s,
                            std::initializer_list<TaskId> extra) {
  SendRecv m{false, peer, program_.buffers.at(b).bytes, b, tag, microbatch};
  return add(s, m, {}, {&b, 1}, extra);
}

TaskId ProgramBuilder::copy(CopyDirection dir, BufferId src, BufferId dst, Stream s,
                            std::initializer_list<TaskId> extra) {
  Copy c{dir, program_.buffers.at(src).bytes, src, dst};
  return add(s, c, {&src, 1}, {&dst, 1}, extra);
}

Program ProgramBuilder::finish() && { return std::move(program_); }

}  // namespace tandem
