#include "traces/calibration/collective_probe_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "shared/error.h"
#include "shared/parse_whole.h"

namespace tandem {
namespace {

bool op_from_name(const std::string& s, CollectiveOp* op) {
  for (CollectiveOp o : kProbedCollectives)
    if (s == to_string(o)) return *op = o, true;
  return false;
}

}  // namespace

std::vector<int> probe_group_sizes(int world) {
  std::vector<int> out;
  for (int g = 2; g < world; g *= 2) out.push_back(g);
  if (world >= 2) out.push_back(world);
  return out;
}

std::vector<int64_t> probe_bytes(int group_size) {
  std::vector<int64_t> out;
  const int64_t unit = 4 * int64_t(std::max(1, group_size));
  for (int64_t b = 8; b <= (int64_t(4) << 20); b *= 2) {
    const int64_t r = b / unit * unit;
    if (r > 0 && (out.empty() || out.back() != r)) out.push_back(r);
  }
  return out;
}

int probe_reps(int64_t bytes) { return bytes <= (int64_t(64) << 10) ? 31 : bytes <= (int64_t(1) << 20) ? 15 : 7; }

int probe_reps(int64_t bytes, double gap_s) {
  if (gap_s <= 0) return probe_reps(bytes);
  if (gap_s < 1e-3) return std::min(probe_reps(bytes), 15);
  // Up to 64 KiB 9 at every longer gap: after 4-8 ms single calls of the small sizes scatter by 2-4x
  // (interrupts in the gap), and 42 of the 60 points cost ~1.6 s more so (a call costs the gap).
  return bytes <= (int64_t(64) << 10) || gap_s < 3e-3 ? 9 : gap_s < 6e-3 ? 7 : 5;
}

std::string format_probe(const std::vector<CollectiveProbePoint>& points) {
  std::string out;
  char line[160];
  for (const CollectiveProbePoint& p : points) {
    std::snprintf(line, sizeof line, "%s\t%d\t%lld\t%.9e\t%d\t%.9e\n", to_string(p.op), p.group_size,
                  (long long)p.bytes, p.time_s, p.reps, p.gap_s);
    out += line;
  }
  return out;
}

std::vector<CollectiveProbePoint> parse_probe(const std::string& text, const std::string& path) {
  std::vector<CollectiveProbePoint> out;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty()) continue;
    auto bad = [&](const std::string& what) {
      return Error(path + ":" + std::to_string(no) + ": " + what +
                   " (expected op<TAB>group_size<TAB>bytes<TAB>time_s<TAB>reps[<TAB>gap_s])");
    };
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string v; std::getline(ls, v, '\t');) f.push_back(v);
    if (f.size() < 5) throw bad("missing field");
    if (f.size() > 6) throw bad("more than 6 fields");
    CollectiveProbePoint p;
    if (!op_from_name(f[0], &p.op)) throw bad("unknown collective '" + f[0] + "'");
    if (!parse_whole(f[1], &p.group_size) || p.group_size < 2) throw bad("bad group size '" + f[1] + "'");
    if (!parse_whole(f[2], &p.bytes) || p.bytes < 1) throw bad("bad bytes '" + f[2] + "'");
    if (!parse_whole(f[3], &p.time_s) || !std::isfinite(p.time_s) || p.time_s <= 0) throw bad("bad time '" + f[3] + "'");
    if (!parse_whole(f[4], &p.reps) || p.reps < 1) throw bad("bad repetitions '" + f[4] + "'");
    if (f.size() == 6 && (!parse_whole(f[5], &p.gap_s) || !std::isfinite(p.gap_s) || p.gap_s < 0))
      throw bad("bad gap '" + f[5] + "'");
    out.push_back(p);
  }
  if (out.empty()) throw Error(path + ": a collective probe with no point");
  return out;
}

namespace {
void add_points(google::protobuf::RepeatedPtrField<proto::CollectiveProbe>& probe,
                const std::vector<CollectiveProbePoint>& points) {
  for (const CollectiveProbePoint& p : points) {
    proto::CollectiveProbe* e = probe.Add();
    e->set_op(uint32_t(p.op));
    e->set_group_size(uint32_t(p.group_size));
    e->set_bytes(p.bytes);
    e->set_time_s(p.time_s);
    e->set_reps(uint32_t(p.reps));
    e->set_gap_s(p.gap_s);
  }
}
}  // namespace

void add_collective_probe(proto::CalibrationProfile& profile, const std::vector<CollectiveProbePoint>& points) {
  add_points(*profile.mutable_collective_probe(), points);
}

void add_shared_collective_probe(proto::CalibrationProfile& profile, int ranks,
                                 const std::vector<CollectiveProbePoint>& points) {
  profile.set_shared_probe_ranks(uint32_t(ranks));
  add_points(*profile.mutable_shared_collective_probe(), points);
}

}  // namespace tandem
