// Labels that group a schedule's tasks by kind in reports: tasks with one label did the same work
// (the same kernel on the same shape and dtype, the same collective on the same kind of group and
// size), so their times can be pooled and compared across backends.
//
//   compute     kernel, shape, dtype     "gemm 2048x4608x12288 fp16", "layernorm 2048x12288 fp16",
//                                        "attention b1 s2048 h12 d128 fp16" ("h32 kv8" for GQA)
//   collective  op, group kind, bytes    "all-reduce tp 48.0MiB" (sub-axis 1 of 2D TP: "tp1")
//   send/recv   direction, bytes         "send 24.0MiB", "recv 24.0MiB"
//   copy        direction, bytes         "h2d 12.0MiB", "d2h 12.0MiB", "d2d 12.0MiB"
//   alloc/free                           "alloc", "free"
//
// The first word of a label is always task_kind() of the task. Shapes leave out the dims that
// place a task rather than size it (a data sample offset, a vocabulary shard offset, Adam's step),
// so that every rank and micro-batch doing the same work gets the same label.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shared/schedule.h"

namespace tandem {

std::string task_label(const Schedule& s, const Program& p, const Task& t);

// The coarse kind: the kernel name for compute ("gemm", "attention-bwd"), the collective op
// ("all-reduce"), "send", "recv", "h2d", "d2h", "d2d", "alloc", "free".
std::string task_kind(const Task& t);

// The kind of a label: its first word.
inline std::string_view label_kind(std::string_view label) { return label.substr(0, label.find(' ')); }

// Bytes in binary units, one decimal: "512B", "1.5KiB", "48.0MiB", "2.0GiB".
std::string format_bytes(int64_t bytes);

}  // namespace tandem
