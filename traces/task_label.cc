#include "traces/task_label.h"

#include <cstdio>

namespace tandem {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// How many leading dims of a kernel give its size (schedule.h lists each kernel's dims); the
// rest place the task (offsets, step) and would split one kind of work into many labels.
int shape_dims(Kernel k) {
  switch (k) {
    case Kernel::kData: return 0;  // {sample_begin, samples, seq}: handled apart
    case Kernel::kEmbedding:
    case Kernel::kEmbeddingBwd: return 3;  // n_tok, hidden, rows (not row_offset)
    case Kernel::kLayerNorm:
    case Kernel::kLayerNormBwd:
    case Kernel::kRmsNorm:
    case Kernel::kRmsNormBwd:
    case Kernel::kSwiglu:
    case Kernel::kSwigluBwd: return 2;
    case Kernel::kGemm: return 3;
    case Kernel::kAttention:
    case Kernel::kAttentionBwd: return 0;  // handled apart
    case Kernel::kGelu:
    case Kernel::kGeluBwd:
    case Kernel::kDropout:
    case Kernel::kDropoutBwd:
    case Kernel::kAdd:
    case Kernel::kAccumulate: return 1;
    case Kernel::kCrossEntropyMax:
    case Kernel::kCrossEntropySumExp:
    case Kernel::kCrossEntropyTarget:
    case Kernel::kCrossEntropyLoss:
    case Kernel::kCrossEntropyBwd: return 2;  // n_tok, vocab_rows (not the offset)
    case Kernel::kAdam: return 1;             // n (not the step)
    case Kernel::kLayerNormPartialMean:
    case Kernel::kLayerNormPartialVar:
    case Kernel::kLayerNormBwdPartialSums: return 3;  // rows, cols, full_cols
    case Kernel::kLayerNormApply:
    case Kernel::kLayerNormBwdApply: return 2;
    case Kernel::kAllToAllPack:
    case Kernel::kAllToAllUnpack: return 5;
    case Kernel::kRingAttention:
    case Kernel::kRingAttentionBwd: return 6;  // with the mode: the steps' shapes differ
    case Kernel::kKvPack:
    case Kernel::kKvUnpack: return 3;
    case Kernel::kRingSelfPack:
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfSoftmax:
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradProbs:
    case Kernel::kRingSelfSoftmaxBwd:
    case Kernel::kRingSelfGradK:
    case Kernel::kRingSelfGradQ:
    case Kernel::kRingSelfUnpack: return 5;  // not the block: every step has the same shape
    case Kernel::kOpaque: return 0;  // its label is the imported node's name
  }
  return 0;
}

// Appends " <prefix><v>"; (std::string += keeps GCC 12's -Wrestrict false positive away.)
void add_dim(std::string& s, const char* prefix, int64_t v) {
  s += prefix;
  s += std::to_string(v);
}

std::string compute_label(const Compute& c) {
  std::string s = to_string(c.kernel);
  const auto& d = c.dims;
  if (c.kernel == Kernel::kAttention || c.kernel == Kernel::kAttentionBwd) {
    add_dim(s, " b", d[0]);
    add_dim(s, " s", d[1]);
    add_dim(s, " h", d[2]);
    if (d[3] != 0 && d[3] != d[2]) add_dim(s, " kv", d[3]);
    add_dim(s, " d", d[4]);
  } else if (c.kernel == Kernel::kData) {
    add_dim(s, " ", d[1]);
    add_dim(s, "x", d[2]);
  } else {
    int n = shape_dims(c.kernel);
    for (int i = 0; i < n; ++i) add_dim(s, i == 0 ? " " : "x", d[i]);
  }
  s += ' ';
  s += to_string(c.dtype);
  return s;
}

const char* copy_kind(CopyDirection d) {
  switch (d) {
    case CopyDirection::kH2D: return "h2d";
    case CopyDirection::kD2H: return "d2h";
    case CopyDirection::kD2D: return "d2d";
  }
  return "copy";
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024 && bytes > -1024) return std::to_string(bytes) + "B";
  double v = double(bytes);
  int unit = -1;
  while ((v >= 1024 || v <= -1024) && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%s", v, kUnits[unit]);
  return buf;
}

std::string task_kind(const Task& t) {
  return std::visit(Overloaded{
                        [](const Compute& c) -> std::string { return to_string(c.kernel); },
                        [](const Collective& c) -> std::string { return to_string(c.op); },
                        [](const SendRecv& r) -> std::string { return r.is_send ? "send" : "recv"; },
                        [](const Copy& c) -> std::string { return copy_kind(c.direction); },
                        [](const Alloc&) -> std::string { return "alloc"; },
                        [](const Free&) -> std::string { return "free"; },
                    },
                    t.op);
}

std::string task_label(const Schedule& s, const Program&, const Task& t) {
  return std::visit(
      Overloaded{
          [](const Compute& c) { return compute_label(c); },
          [&](const Collective& c) {
            std::string group = "?";  // a bad group id is the schedule checker's to report
            if (c.group < s.groups().size()) {
              const ProcessGroup& g = s.group(c.group);
              group = to_string(g.kind);
              if (g.axis != 0) group += std::to_string(g.axis);
            }
            return std::string(to_string(c.op)) + " " + group + " " + format_bytes(c.bytes);
          },
          [](const SendRecv& r) { return std::string(r.is_send ? "send " : "recv ") + format_bytes(r.bytes); },
          [](const Copy& c) { return std::string(copy_kind(c.direction)) + " " + format_bytes(c.bytes); },
          [](const Alloc&) { return std::string("alloc"); },
          [](const Free&) { return std::string("free"); },
      },
      t.op);
}

}  // namespace tandem
