#include "sim/compute_cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "shared/error.h"
#include "shared/input_file.h"
#include "shared/parse_whole.h"
#include "sim/host_adam_cost.h"
#include "traces/calibration/calibration_profile.h"

namespace tandem::sim {

namespace {

bool kernel_from_name(const std::string& s, Kernel* k) {
  for (int i = 0; i < kKernelCount; ++i)
    if (s == to_string(static_cast<Kernel>(i))) return *k = static_cast<Kernel>(i), true;
  return false;
}

bool dtype_from_name(const std::string& s, DType* t) {
  for (DType d : {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32, DType::kUint8, DType::kFp8E4M3,
                  DType::kFp8E5M2})
    if (s == to_string(d)) return *t = d, true;
  return false;
}

}  // namespace

CalibrationTable CalibrationTable::load(const std::string& path) {
  // A profile written by `tandem calibrate` (protobuf), or a hand-written text table; which one is
  // told from the bytes, and anything else is refused (traces/calibration/calibration_profile.h).
  const std::string bytes = read_input_file(path, "calibration file", kMaxProfileBytes);
  if (calibration_file_kind(bytes, path) == CalibrationFileKind::kProfile) return from_profile(parse_calibration(bytes, path));
  return load_table(bytes, path);
}

CalibrationTable CalibrationTable::load(const std::string& path, const MachineStateProbe& now) {
  const std::string bytes = read_input_file(path, "calibration file", kMaxProfileBytes);
  if (calibration_file_kind(bytes, path) != CalibrationFileKind::kProfile)
    throw Error(path + ": --state-probe needs a profile from tandem calibrate, not a text table", ErrorKind::kBadInput);
  const proto::CalibrationProfile all = parse_calibration(bytes, path);
  if (all.backend() != "host")
    throw Error(path + ": --state-probe needs a host profile (this one is of backend '" + all.backend() + "')",
                ErrorKind::kBadInput);
  if (!profile_state_probe(all).valid())
    throw Error(path + ": --state-probe: the profile holds no machine state probe (its runs were measured by a "
                "tandem run that took none; calibrate again)", ErrorKind::kBadInput);
  if (!now.valid()) throw Error(path + ": --state-probe: a probe without positive times", ErrorKind::kBadInput);
  // The calibrated state `now` falls in, else the nearest, scaled (traces/calibration/machine_states.h).
  const StateChoice choice = choose_state(all, now);
  proto::CalibrationProfile profile = profile_in_state(all, choice.state);
  const MachineStateProbe then = profile_state_probe(profile);
  if (!then.valid())
    throw Error(path + ": --state-probe: the profile's state " + std::to_string(choice.state) +
                " holds no complete machine state probe", ErrorKind::kBadInput);
  StateRatios r;
  if (!choice.matched) scale_to_state(profile, r = tandem::state_ratios(now, then));
  CalibrationTable t = from_profile(profile);
  t.has_state_ = !choice.matched;
  t.state_ = r;
  t.state_choice_ = choice;
  return t;
}

CalibrationTable CalibrationTable::from_profile(const proto::CalibrationProfile& profile) {
  CalibrationTable t;
  {
    // Means (a step's total is made of them; medians hide the heavy tail) where the profile has
    // them, each the kernel's own time as measured. The runtime's time between kernels is a cost
    // of its own (gap_s), not part of any kernel (docs/exec.md, "Where the time goes").
    const bool host = profile.backend() == "host";
    if (host) t.overhead_s_ = profile.task_overhead_s(), t.host_memory_ = HostMemoryModel(profile);
    if (host) t.blas_threads_per_rank_ = int(profile.blas_threads_per_rank()), t.cores_ = int(profile.cores());
    if (host) t.rank_speed_spread_ = profile.rank_speed_spread();
    t.host_profile_ = host;
    for (const proto::CalibrationRun& r : profile.runs())
      t.runs_.push_back({int(r.steps()), r.iteration_s(), r.relative_iqr()});
    std::vector<MeasuredKernel> measured;
    double typical_sum = 0, mean_sum = 0;  // pooled_typical_: samples x median over samples x mean
    for (const proto::KernelTime& k : profile.kernels()) {
      std::array<int64_t, 6> dims{};
      for (int i = 0; i < 6; ++i) dims[i] = k.dims(i);
      const double time = k.mean_s() > 0 ? k.mean_s() : k.median_s();
      const Kernel kernel = static_cast<Kernel>(k.kernel());
      const DType dtype = static_cast<DType>(k.dtype());
      t.add(kernel, dtype, dims, time);
      if (host) measured.push_back({Compute{kernel, dtype, Phase::kForward, 0, -1, -1, dims, {}, {}}, time, double(k.samples())});
      if (host && k.mean_s() > 0 && k.median_s() > 0) {
        t.typical_[{static_cast<int>(kernel), static_cast<int>(dtype), dims}] = std::min(1.0, k.median_s() / k.mean_s());
        const double w = std::max(1u, k.samples());
        typical_sum += w * std::min(k.median_s(), k.mean_s()), mean_sum += w * k.mean_s();
      }
    }
    if (mean_sum > 0) t.pooled_typical_ = typical_sum / mean_sum;
    std::vector<GemmGridPoint> probe;  // this CPU's GEMM rate (traces/calibration/gemm_probe.h)
    for (const proto::GemmProbe& g : profile.gemm_probe())
      probe.push_back({double(g.m()), double(g.n()), double(g.k()), g.time_s()});
    if (host) t.host_ = HostComputeModel(measured, GemmGrid(probe));
    std::map<int, std::vector<std::array<double, 3>>> by_op;
    for (const proto::CollectiveTime& c : profile.collectives()) {
      const double time = c.mean_s() > 0 ? c.mean_s() : c.median_s();
      t.add_collective(static_cast<CollectiveOp>(c.op()), static_cast<GroupKind>(c.group_kind()),
                       int(c.group_size()), c.bytes(), time + (host ? c.mean_wait_s() : 0));  // host_collective_model.h
      const std::array<double, 3> point{double(c.bytes()), time, double(std::max(1u, c.samples()))};
      by_op[int(c.op())].push_back(point);
    }
    if (host) t.host_collectives_ = HostCollectiveModel(by_op, probed_collectives(profile), mean_collective_wait_s(profile));
    if (host && profile.shared_collective_probe_size() > 0)
      t.shared_collectives_ = HostCollectiveModel({}, probed_collectives(profile, true), mean_collective_wait_s(profile));
    return t;
  }
}

CalibrationTable CalibrationTable::load_table(const std::string& bytes, const std::string& path) {
  CalibrationTable t;
  std::istringstream in(bytes);
  std::string line;
  int no = 0;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a table saved with CRLF line ends
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string kname, dname, dims_s, time_s;
    auto bad = [&](const std::string& what) {
      return Error(path + ":" + std::to_string(no) + ": " + what +
                   " (expected kernel<TAB>dtype<TAB>d0,d1,...<TAB>time_us)");
    };
    if (!std::getline(ls, kname, '\t') || !std::getline(ls, dname, '\t') || !std::getline(ls, dims_s, '\t') ||
        !std::getline(ls, time_s))
      throw bad("missing field");
    Kernel k;
    DType d;
    if (!kernel_from_name(kname, &k)) throw bad("unknown kernel '" + kname + "'");
    if (!dtype_from_name(dname, &d)) throw bad("unknown dtype '" + dname + "'");
    std::array<int64_t, 6> dims{};
    std::istringstream ds(dims_s);
    std::string v;
    for (int i = 0; std::getline(ds, v, ','); ++i) {
      if (i == 6) throw bad("more than 6 dimensions");
      if (!parse_whole(v, &dims[size_t(i)]) || dims[size_t(i)] < 0) throw bad("bad dimension '" + v + "'");
    }
    double us;
    if (!parse_whole(time_s, &us)) throw bad("bad time '" + time_s + "'");
    if (!std::isfinite(us) || us < 0) throw bad("time " + time_s + " is not a finite time >= 0");
    t.add(k, d, Compute{k, d, Phase::kForward, 0, -1, -1, dims, {}, {}}.shape_dims(), us * 1e-6);
  }
  if (t.size() == 0)
    throw Error(path + ": a calibration table with no entry (only comments or blank lines); expected "
                "kernel<TAB>dtype<TAB>d0,d1,...<TAB>time_us lines");
  return t;
}

void CalibrationTable::add(Kernel k, DType t, const std::array<int64_t, 6>& dims, double time_s) {
  table_[{static_cast<int>(k), static_cast<int>(t), dims}] = time_s;
}

void CalibrationTable::add_collective(CollectiveOp op, GroupKind kind, int group_size, int64_t bytes,
                                      double time_s) {
  collectives_[{int(op), int(kind), group_size, bytes}] = time_s;
}

double CalibrationTable::find_collective(CollectiveOp op, GroupKind kind, int group_size, int64_t bytes,
                                         double gap_s, bool shared_cores) const {
  if (shared_cores && shared_collectives_.probed(op, group_size))
    return shared_collectives_.time_s(op, group_size, bytes, gap_s);
  auto it = collectives_.find({int(op), int(kind), group_size, bytes});
  if (it != collectives_.end()) return it->second;
  return host_collectives_.time_s(op, group_size, bytes, gap_s);  // a host profile (sim/host_collective_model.h)
}

double CalibrationTable::host_time(const Compute& c) const { return host_.empty() ? -1.0 : host_.time_s(c); }

bool CalibrationTable::shares_cores(int ranks) const {
  return blas_threads_per_rank_ > 0 && cores_ > 0 && int64_t(ranks) * blas_threads_per_rank_ > cores_;
}

std::string CalibrationTable::shared_cores_note(int ranks) const {
  if (!shares_cores(ranks)) return "";
  return std::to_string(ranks) + " ranks x " + std::to_string(blas_threads_per_rank_) + " BLAS thread" +
         (blas_threads_per_rank_ == 1 ? "" : "s") + " share the calibration machine's " + std::to_string(cores_) +
         " cores: the simulation shares them too (the ranks computing at a moment each run at cores / their "
         "threads of a core, at most one; a rank waiting on a collective takes none: sim/host_core_share.h)";
}

CalibrationTable::KernelCost CalibrationTable::kernel_cost(const Compute& c) const {
  const auto key = std::make_tuple(static_cast<int>(c.kernel), static_cast<int>(c.dtype), c.shape_dims());
  if (auto it = table_.find(key); it != table_.end()) {
    if (!host_profile_) return {it->second, 1};
    auto t = typical_.find(key);
    return {it->second, t == typical_.end() ? 1 : t->second};
  }
  const double host = host_time(c);
  return {host, host >= 0 && host_profile_ ? pooled_typical_ : 1};
}

double CalibrationTable::find(const Compute& c) const {
  auto it = table_.find({static_cast<int>(c.kernel), static_cast<int>(c.dtype), c.shape_dims()});
  return it == table_.end() ? -1.0 : it->second;
}

ComputeCostModel::ComputeCostModel(const ClusterSpec& cluster, const KernelEfficiency& eff, bool flash_attention,
                                   const CalibrationTable* calibration)
    : cluster_(cluster),
      eff_(eff),
      flash_(flash_attention),
      family_(gpu_family(cluster.gpu_name)),
      memory_eff_(memory_efficiency(family_)),
      calibration_(calibration) {}

double ComputeCostModel::stream_s(double bytes) const {
  return bytes / (cluster_.hbm_bandwidth_gbps * 1e9 * memory_eff_) + cluster_.kernel_launch_us * 1e-6;
}

// `batch` products of m x n x k, as one (batched) GEMM kernel: the roofline of the GEMM curve;
// `bytes` < 0: A, B and C once each.
double ComputeCostModel::gemm_s(DType t, double batch, double m, double n, double k, double bytes) const {
  const double peak = cluster_.peak_tflops(t) * 1e12;
  const double hbm = cluster_.hbm_bandwidth_gbps * 1e9;
  if (bytes < 0) bytes = dtype_bytes(t) * batch * (m * k + k * n + m * n);
  double time = bytes / (hbm * memory_eff_);
  const bool fp8 = t == DType::kFp8E4M3 || t == DType::kFp8E5M2;
  const double eff = gemm_efficiency(gemm_curve(family_, peak, hbm, eff_.sm_count, fp8), batch, m, n, k);
  if (peak > 0 && eff > 0) time = std::max(time, 2.0 * batch * m * n * k / (peak * eff));
  return time + cluster_.kernel_launch_us * 1e-6;
}

// Attention without flash, as Megatron-LM's CoreAttention runs it (docs/accuracy.md cites the
// lines): baddbmm for the scores, the fused scale+mask+softmax, dropout of the probabilities,
// bmm for the context; backward through the same kernels. All over the full s x s square.
double ComputeCostModel::attention_unfused_s(const Compute& c) const {
  const auto& d = c.dims;
  const double bh = double(d[0]) * double(d[2]), s = double(d[1]), hd = double(d[4]);
  const double e = dtype_bytes(c.dtype), square = bh * s * s;
  const bool fwd = c.kernel == Kernel::kAttention;
  // The schedule lists the dropout mask as an output of the forward (5 outputs) and an input of
  // the backward (7 inputs) when the model has dropout (shared/layer_emitter.cc attention_fwd).
  const bool dropout = fwd ? c.outputs.size() >= 5 : c.inputs.size() >= 7;
  const double drop = dropout ? stream_s((2.0 * e + 1.0) * square) : 0.0;
  if (fwd)
    return gemm_s(c.dtype, bh, s, s, hd) + stream_s(2.0 * e * square) + drop + gemm_s(c.dtype, bh, s, hd, s);
  return gemm_s(c.dtype, bh, s, s, hd) + gemm_s(c.dtype, bh, s, hd, s) + drop + stream_s(3.0 * e * square) +
         2.0 * gemm_s(c.dtype, bh, s, hd, s);
}

double ComputeCostModel::flash_attention_s(DType t, bool bwd, bool causal, double seq, double head_dim, double flops,
                                           double bytes) const {
  const double peak_tflops = cluster_.peak_tflops(t);
  double eff = flash_attention_efficiency(family_, bwd, causal, seq, head_dim, peak_tflops);
  if (eff < 0) eff = (bwd ? kFlashFallbackBackward : kFlashFallbackForward) * head_dim / (head_dim + kFlashFallbackKHalf);
  double time = bytes / (cluster_.hbm_bandwidth_gbps * 1e9 * memory_eff_);
  if (peak_tflops > 0 && eff > 0) time = std::max(time, flops / (peak_tflops * 1e12 * eff));
  return time + cluster_.kernel_launch_us * 1e-6;
}

double ComputeCostModel::d2d_copy_s(int64_t bytes) const { return stream_s(2.0 * double(bytes)); }

double ComputeCostModel::opaque_s(const Compute& c, bool on_host) const {
  if (c.dims[0] > 0) return double(c.dims[0]) * 1e-12;  // its own time, in picoseconds
  // Priced as ASTRA-sim's roofline does an imported node: its ops at the dtype's peak or its bytes
  // at the memory bandwidth, whichever is longer; on the host, its bytes at the host's share.
  const double bytes = double(c.dims[2]);
  if (on_host) return bytes / (eff_.host_memory_gbps * 1e9 / std::max(1, cluster_.gpus_per_node));
  const double peak = cluster_.peak_tflops(c.dtype) * 1e12;
  const double ops_s = peak > 0 ? double(c.dims[1]) / peak : 0.0;
  return std::max(ops_s + cluster_.kernel_launch_us * 1e-6, stream_s(bytes));
}

double ComputeCostModel::host_dispatch_s(const Compute& c) const {
  // Without flash: baddbmm, softmax, (dropout,) bmm forward; two GEMMs, (dropout bwd,) softmax
  // bwd, two GEMMs backward. The schedule lists the dropout mask when there is one (as in
  // attention_unfused_s).
  if (!flash_ && c.kernel == Kernel::kAttention) return (c.outputs.size() >= 5 ? 4.0 : 3.0) * dispatch_s_;
  if (!flash_ && c.kernel == Kernel::kAttentionBwd) return (c.inputs.size() >= 7 ? 6.0 : 5.0) * dispatch_s_;
  if (c.flags & kFusedIntoNext) return 0.0;  // one launch for the fused pair, counted on the next
  return dispatch_s_;
}

ComputeCostModel::Fp8Casts ComputeCostModel::fp8_casts(const Compute& c, bool input_from_norm,
                                                        bool first_use_of_weight) const {
  Fp8Casts out;
  if (c.kernel != Kernel::kGemm || (c.dtype != DType::kFp8E4M3 && c.dtype != DType::kFp8E5M2)) return out;
  const auto& d = c.dims;
  auto cast = [&](double elements, double bytes_per_element) {
    out.seconds += stream_s(elements * bytes_per_element);
    ++out.kernels;
  };
  if (c.dtype == DType::kFp8E4M3) {  // forward: dims {rows, out, in}, x [rows, in], W [out, in]
    if (!input_from_norm) cast(double(d[0]) * double(d[2]), 4.0);
    if (first_use_of_weight) cast(double(d[1]) * double(d[2]), 4.0);
  } else if (c.flags & kTransA) {  // wgrad: dims {out, in, rows}, x^T of the forward input
    if (input_from_norm) cast(double(d[1]) * double(d[2]), 2.0);
  } else {  // dgrad: dims {rows, in, out}, the output gradient [rows, out]
    cast(double(d[0]) * double(d[2]), 4.0);
  }
  return out;
}

CalibrationTable::KernelCost ComputeCostModel::calibrated(const Compute& c) const {
  return calibration_ ? calibration_->kernel_cost(c) : CalibrationTable::KernelCost{};  // host: sim/host_compute_model.h
}

double ComputeCostModel::gap_s(const Compute& c) const {
  if (c.kernel == Kernel::kOpaque || !calibration_) return 0;
  // A kernel whose time_s comes from the calibration (a measured shape or the host model): the
  // time between kernels and its mean's part beyond the typical execution.
  const CalibrationTable::KernelCost k = calibrated(c);
  if (k.mean_s < 0) return 0;
  return calibration_->task_overhead_s() + k.mean_s * (1 - k.typical);
}

HostAdamTime ComputeCostModel::host_flow(const Compute& c) const {
  if (cluster_.host_memory_bandwidth_gbps <= 0 || c.kernel == Kernel::kOpaque) return {};
  if (calibrated(c).mean_s >= 0) return {};
  return host_adam_time(cluster_, ranks_on_node(cluster_), c.kernel == Kernel::kAdam ? double(c.dims[0]) : 0.0,
                        c.bytes_moved());
}

double ComputeCostModel::time_s(const Compute& c, bool on_host) const {
  if (c.kernel == Kernel::kOpaque) return opaque_s(c, on_host);
  if (const CalibrationTable::KernelCost k = calibrated(c); k.mean_s >= 0)  // its typical execution; the rest in gap_s
    return k.mean_s * k.typical;
  const double bytes = c.bytes_moved();
  if (on_host && cluster_.host_memory_bandwidth_gbps > 0)  // the cluster's host figures (sim/host_adam_cost.h)
    return host_adam_time(cluster_, ranks_on_node(cluster_), c.kernel == Kernel::kAdam ? double(c.dims[0]) : 0.0, bytes)
        .time_s();
  if (on_host) {
    const double share = eff_.host_memory_gbps * 1e9 / std::max(1, cluster_.gpus_per_node);
    return bytes / share;
  }
  const auto& d = c.dims;
  switch (c.kernel) {
    case Kernel::kGemm: {
      // dims[3] > 1: one chunk of a GEMM that the framework issues round-robin on that many compute
      // streams (Transformer Engine's userbuffers overlap, shared/tp_overlap.cc). The chunks in
      // flight share the SMs, their tiles filling the waves together: the chunk is charged its
      // share of the batch of `streams` chunks (tile/wave quantisation over all their tiles; the
      // launch latency shared as well).
      const double streams = std::max<int64_t>(1, d[3]);
      return gemm_s(c.dtype, streams, double(d[0]), double(d[1]), double(d[2]), bytes * streams) / streams;
    }
    case Kernel::kAttention:
    case Kernel::kAttentionBwd:
      if (!flash_) return attention_unfused_s(c);
      return flash_attention_s(c.dtype, c.kernel == Kernel::kAttentionBwd, (c.flags & kCausal) != 0, double(d[1]),
                               double(d[4]), c.matmul_flops(), bytes);
    case Kernel::kRingAttention:
    case Kernel::kRingAttentionBwd: {
      // A ring step is FlashAttention over 2*chunk queries (shared/ring_attention.h): the local
      // block causal (costed as kAttention is, on the square's flops), the others unmasked over
      // half the square (2c x c).
      const bool causal = d[5] == 0;
      return flash_attention_s(c.dtype, c.kernel == Kernel::kRingAttentionBwd, causal, 2.0 * double(d[1]),
                               double(d[4]), c.matmul_flops() * (causal ? 1.0 : 0.5), bytes);
    }
    // Colossal-AI's ring self-attention (shared/ring_self_attention.h): its steps are batched
    // GEMMs (torch.matmul over b*heads) of the block or of the whole row, dims {b, c, heads,
    // head_dim, sp, block}; the softmax and packing kernels stream their bytes (the default).
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfGradProbs:  // [c, hd] x [hd, c]
      return gemm_s(c.dtype, double(d[0]) * double(d[2]), double(d[1]), double(d[1]), double(d[3]), bytes);
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradQ:  // [c, c] x [c, hd]
      return gemm_s(c.dtype, double(d[0]) * double(d[2]), double(d[1]), double(d[3]), double(d[1]), bytes);
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradK:  // [s, c] x [c, hd]
      return gemm_s(c.dtype, double(d[0]) * double(d[2]), double(d[1]) * double(d[4]), double(d[3]), double(d[1]), bytes);
    default:
      // A kernel fused into the next one (shared/schedule.h kFusedIntoNext) is launched with it.
      return stream_s(bytes) - ((c.flags & kFusedIntoNext) ? cluster_.kernel_launch_us * 1e-6 : 0.0);
  }
}

}  // namespace tandem::sim
