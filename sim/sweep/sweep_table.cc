#include "sim/sweep/sweep_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "shared/json_writer.h"

namespace tandem::sweep {

const char* to_string(PointStatus s) {
  switch (s) {
    case PointStatus::kOk: return "ok";
    case PointStatus::kInvalid: return "invalid";
    case PointStatus::kOom: return "oom";
    case PointStatus::kError: return "error";
  }
  return "?";
}

namespace {

bool valid(const SweepPoint& p) { return p.result.status == PointStatus::kOk && p.result.tokens_per_s > 0; }

int parse_int(const std::string& s) {
  int v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() ? v : 0;
}

}  // namespace

SweepTable make_table(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid,
                      std::vector<PointResult> results) {
  SweepTable t;
  t.scenario_path = scenario_path;
  t.sets = sets;
  t.axes = grid.axes();
  const int g = grid.gpus_axis();
  // The size of points whose scenario did not load, when the size is not varied: the one of any
  // point that loaded (they all share it).
  int common_gpus = 0;
  for (const PointResult& r : results)
    if (r.gpus > 0) {
      common_gpus = r.gpus;
      t.scenario_name = r.scenario_name;
      break;
    }
  // Strategy labels name a key by its field alone ("tp=2 pp=4") unless two axes share the field name.
  std::vector<std::string> label(t.axes.size());
  for (size_t k = 0; k < t.axes.size(); ++k) {
    const std::string& key = t.axes[k].key;
    label[k] = key.substr(key.rfind('.') + 1);
  }
  for (size_t k = 0; k < t.axes.size(); ++k)
    if (std::count(label.begin(), label.end(), label[k]) > 1) label[k] = t.axes[k].key;
  for (size_t i = 0; i < grid.size(); ++i) {
    SweepPoint p;
    p.values = grid.values(i);
    for (size_t k = 0; k < p.values.size(); ++k) {
      if (int(k) == g) continue;
      if (!p.strategy.empty()) p.strategy += ' ';
      p.strategy += label[k] + "=" + p.values[k];
    }
    if (p.strategy.empty()) p.strategy = "scenario";
    p.result = i < results.size() ? std::move(results[i]) : PointResult{};
    p.gpus = p.result.gpus > 0 ? p.result.gpus : g >= 0 ? parse_int(p.values[size_t(g)]) : common_gpus;
    t.points.push_back(std::move(p));
  }
  // Scaling efficiency: per strategy, tokens/s per GPU over that of its smallest valid size.
  std::map<std::string, const SweepPoint*> base;
  for (const SweepPoint& p : t.points) {
    if (!valid(p) || p.gpus <= 0) continue;
    auto [it, fresh] = base.emplace(p.strategy, &p);
    if (!fresh && p.gpus < it->second->gpus) it->second = &p;
  }
  for (SweepPoint& p : t.points) {
    if (!valid(p) || p.gpus <= 0) continue;
    const SweepPoint* b = base.at(p.strategy);
    p.scaling_efficiency = (p.result.tokens_per_s / p.gpus) / (b->result.tokens_per_s / b->gpus);
  }
  return t;
}

std::vector<std::string> strategies(const SweepTable& t) {
  std::vector<std::string> s;
  for (const SweepPoint& p : t.points)
    if (std::find(s.begin(), s.end(), p.strategy) == s.end()) s.push_back(p.strategy);
  return s;
}

std::vector<BestAtSize> best_per_size(const SweepTable& t) {
  std::map<int, int> best;  // gpus -> point
  for (size_t i = 0; i < t.points.size(); ++i) {
    const SweepPoint& p = t.points[i];
    auto [it, fresh] = best.emplace(p.gpus, -1);
    if (!valid(p)) continue;
    if (it->second < 0 || p.result.tokens_per_s > t.points[size_t(it->second)].result.tokens_per_s) it->second = int(i);
  }
  std::vector<BestAtSize> out;
  for (const auto& [gpus, point] : best) out.push_back({gpus, point});
  return out;
}

std::string sweep_json(const SweepTable& t) {
  JsonWriter w;
  w.begin_object();
  w.key("format").string("tandem-sweep-1");
  w.key("scenario").string(t.scenario_path);
  w.key("scenario_name").string(t.scenario_name);
  w.key("sets").begin_array();
  for (const std::string& s : t.sets) w.string(s);
  w.end_array();
  w.key("vary").begin_array();
  for (const VaryAxis& a : t.axes) {
    w.begin_object().key("key").string(a.key).key("values").begin_array();
    for (const std::string& v : a.values) w.string(v);
    w.end_array().end_object();
  }
  w.end_array();
  w.key("points").begin_array();
  for (size_t i = 0; i < t.points.size(); ++i) {
    const SweepPoint& p = t.points[i];
    const PointResult& r = p.result;
    w.begin_object();
    w.key("index").integer(i);
    w.key("values").begin_object();
    for (size_t k = 0; k < t.axes.size(); ++k) w.key(t.axes[k].key).string(p.values[k]);
    w.end_object();
    w.key("strategy").string(p.strategy);
    w.key("gpus").integer(p.gpus);
    w.key("dp").integer(r.dp).key("tp").integer(r.tp).key("pp").integer(r.pp).key("sp").integer(r.sp);
    w.key("status").string(to_string(r.status));
    w.key("reason").string(r.reason);
    w.key("iteration_time_s").number(r.iteration_time_s);
    w.key("iteration_time_interval_s");
    if (r.status == PointStatus::kOk) w.begin_array().number(r.iteration_time_low_s).number(r.iteration_time_high_s).end_array();
    else w.null();
    w.key("tokens_per_s").number(r.tokens_per_s);
    w.key("model_tflops_per_gpu").number(r.model_tflops_per_gpu);
    w.key("hardware_tflops_per_gpu").number(r.hardware_tflops_per_gpu);
    w.key("mfu").number(r.mfu);
    w.key("peak_memory_bytes");
    if (r.peak_memory_bytes >= 0) w.integer(r.peak_memory_bytes);
    else w.null();
    w.key("scaling_efficiency").number(p.scaling_efficiency);
    // Only on an approximate point (tandem sweep --approximate): an exact table is unchanged.
    if (!r.approximate.empty()) w.key("approximate").string(r.approximate);
    w.end_object();
  }
  w.end_array();
  w.key("best").begin_array();
  for (const BestAtSize& b : best_per_size(t)) {
    w.begin_object().key("gpus").integer(b.gpus);
    if (b.point >= 0) {
      const SweepPoint& p = t.points[size_t(b.point)];
      w.key("point").integer(b.point).key("strategy").string(p.strategy).key("tokens_per_s").number(p.result.tokens_per_s);
    } else {
      w.key("point").null().key("strategy").null();
      w.key("tokens_per_s").null();
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace tandem::sweep
