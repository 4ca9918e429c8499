// How long a kernel takes on one GPU: a roofline with shape-dependent efficiencies,
//   time = max(matmul_flops / (peak(dtype) * efficiency(kernel, shape)),
//              bytes_moved / (HBM bandwidth * memory_efficiency)) + launch overhead,
// overridden, for the (kernel, dims, dtype) it lists, by a calibration table measured on real
// hardware. The efficiencies are curves fit on published measurements (sim/kernel_curves.h; the
// data, the fit and its residuals: traces/reference/kernel_*.tsv, docs/accuracy.md):
//  - GEMM: the measured maximum * tile/wave quantisation * k / (k + k_half(GPU)).
//  - flash attention: cuDNN's measured throughput by (seq, head_dim), forward and backward, with
//    the causal saving (Hopper); Ampere keeps two constants (no measured curve in the data).
//  - attention without flash: the kernels it runs, one after another: the batched score GEMM
//    (s x s x head_dim per head), the scale+mask+softmax pass, the dropout of the probabilities
//    (with its mask), the batched context GEMM; backward: two GEMMs, the dropout and softmax
//    backward passes, two more GEMMs.
//  - vector kernels (norms, activations, dropout, adds, loss, Adam): bytes / (HBM * memory_efficiency).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "shared/schedule.h"
#include "sim/host_adam_cost.h"
#include "sim/host_collective_model.h"
#include "sim/host_compute_model.h"
#include "sim/host_memory_model.h"
#include "sim/kernel_curves.h"
#include "sim/prediction_interval_calibrated.h"
#include "traces/calibration/machine_state_probe.h"
#include "traces/calibration/machine_states.h"

namespace tandem::sim {

struct KernelEfficiency {
  int sm_count = 0;                 // 0: from the GPU name (A100 108, H100/H200 132)
  double host_memory_gbps = 200;    // per node, CPU work (offloaded optimizer), shared by its GPUs
};

// Measured kernel times: "kernel<TAB>dtype<TAB>d0,d1,d2,d3,d4,d5<TAB>time_us" lines ('#' comments).
class CalibrationTable {
 public:
  // A profile from `tandem calibrate` or a text table, told apart by content. Error (bad input)
  // naming the path, and the line for a table, for anything that would not calibrate: not a
  // regular file or over kMaxProfileBytes (shared/input_file.h), empty, a table with no entry, a
  // bad line, a trace or other file given as a profile (traces/calibration/calibration_profile.h).
  static CalibrationTable load(const std::string& path);
  // A host profile predicted for the machine's state now (`tandem sim --state-probe`): when `now`
  // falls in one of the profile's calibrated machine states (traces/calibration/machine_states.h),
  // that state's runs' costs as measured; otherwise the nearest state's communication, Alloc/Free
  // and kernel costs each scaled by the probe's ratio of `now` to that state's probe for that kind
  // of cost (traces/calibration/machine_state_probe.h). Error (bad input) when the file is not a
  // host profile or holds no state probe (calibrated from runs that took none).
  static CalibrationTable load(const std::string& path, const MachineStateProbe& now);
  void add(Kernel k, DType t, const std::array<int64_t, 6>& dims, double time_s);
  // The measured time, or a negative value when the table does not cover the task.
  double find(const Compute& c) const;
  size_t size() const { return table_.size(); }
  // Measured collectives (from a `tandem calibrate` profile): a calibrated collective takes its
  // median time instead of moving flows, so it no longer contends with other traffic.
  void add_collective(CollectiveOp op, GroupKind kind, int group_size, int64_t bytes, double time_s);
  // shared_cores: the predicted run's ranks share the machine's cores (shares_cores): a host
  // profile's collective probed in such a placement (CalibrationProfile.shared_collective_probe)
  // takes that time, before the run's measured collectives (those had a core per rank).
  double find_collective(CollectiveOp op, GroupKind kind, int group_size, int64_t bytes, double gap_s = 0,
                         bool shared_cores = false) const;
  size_t collectives() const { return collectives_.size(); }
  // A profile of the host driver (backend "host") also costs the shapes it lacks, with a compute
  // model of the host fit on its kernels (sim/host_compute_model.h). Kernel times (find,
  // host_time) are the kernels' own; the runtime's measured time between kernels
  // (CalibrationProfile.task_overhead_s) is apart: task_overhead_s here, ComputeCostModel::gap_s.
  double host_time(const Compute& c) const;
  // A host profile's kernel time (find, else host_time) is the shape's mean: a step's total is made
  // of means. Its executions are not alike: most run near the median, and a few are stretched by
  // what interrupts the core (timer ticks, page-table flushes, another job): the mean exceeds the
  // median by 1-11 % on this VM (docs/exec.md "Session 18"). The fraction of the mean that is the
  // typical execution: median / mean of the measured shape (at most 1), or for a shape the host
  // model costs, the profile's over all its kernels (sum of samples x median over sum of samples x
  // mean); 1 for any other table or kernel. ComputeCostModel costs the kernel at the typical part
  // and runs the rest before it as time between tasks (gap_s), so every total stays the mean's.
  double typical_fraction(const Compute& c) const { return kernel_cost(c).typical; }
  // find (else host_time) and typical_fraction in one lookup of the shape: what the simulator
  // costs a kernel with (mean_s negative when the table does not cost it; typical 1 then).
  struct KernelCost {
    double mean_s = -1;
    double typical = 1;
  };
  KernelCost kernel_cost(const Compute& c) const;
  double task_overhead_s() const { return overhead_s_; }
  const HostMemoryModel& host_memory() const { return host_memory_; }  // sim/host_memory_model.h
  // A host profile's placement (CalibrationProfile.blas_threads_per_rank, cores; 0 when the
  // profile does not record it). shares_cores(ranks): `ranks` ranks of a host run on that machine
  // would share its cores (ranks x BLAS threads > cores), so the replay shares them
  // (sim/host_core_share.h); shared_cores_note says so to the user ("" when they fit).
  int cores() const { return cores_; }
  int blas_threads_per_rank() const { return blas_threads_per_rank_; }
  bool shares_cores(int ranks) const;
  std::string shared_cores_note(int ranks) const;
  // A profile of the host driver (backend "host"; false for a text table or another backend):
  // its prediction interval comes from its own evidence (sim/prediction_interval_calibrated.h).
  bool host_profile() const { return host_profile_; }
  // The measured runs it was made from (CalibrationProfile.runs; empty in older profiles).
  const std::vector<CalibrationRunSpread>& runs() const { return runs_; }
  // A host profile's ranks' unequal speed (CalibrationProfile.rank_speed_spread; 0 for any other
  // table) and the wait every collective it costs already holds (host_collective_model.h,
  // mean_collective_wait_s): what sim/rank_speed_lag.h adds at a collective beyond it.
  double rank_speed_spread() const { return rank_speed_spread_; }
  double collective_wait_s() const { return host_collectives_.wait_s(); }
  // The ratios a --state-probe prediction scaled by (its probe fell in no calibrated state);
  // has_state() false otherwise.
  bool has_state() const { return has_state_; }
  const StateRatios& state_ratios() const { return state_; }
  // A --state-probe prediction: the calibrated state it took (traces/calibration/machine_states.h;
  // matched: the probe fell in it and its costs are that state's runs', unscaled). states 0 otherwise.
  const StateChoice& state_choice() const { return state_choice_; }

 private:
  bool host_profile_ = false;
  bool has_state_ = false;
  StateRatios state_;
  StateChoice state_choice_;
  static CalibrationTable from_profile(const proto::CalibrationProfile& profile);
  static CalibrationTable load_table(const std::string& bytes, const std::string& path);
  std::vector<CalibrationRunSpread> runs_;
  int blas_threads_per_rank_ = 0, cores_ = 0;
  HostMemoryModel host_memory_;
  HostComputeModel host_;
  double overhead_s_ = 0;
  double rank_speed_spread_ = 0;
  // Host profiles: the collectives a profile lacks (sim/host_collective_model.h).
  HostCollectiveModel host_collectives_;
  HostCollectiveModel shared_collectives_;  // from shared_collective_probe
  std::map<std::tuple<int, int, std::array<int64_t, 6>>, double> table_;
  std::map<std::tuple<int, int, std::array<int64_t, 6>>, double> typical_;  // median / mean, host profiles
  double pooled_typical_ = 1;
  std::map<std::tuple<int, int, int, int64_t>, double> collectives_;
};

class ComputeCostModel {
 public:
  ComputeCostModel(const ClusterSpec& cluster, const KernelEfficiency& eff, bool flash_attention,
                   const CalibrationTable* calibration = nullptr);
  // Seconds on the GPU (or on the host CPU when `on_host`).
  double time_s(const Compute& c, bool on_host = false) const;
  // A host-stream task whose memory traffic the replay runs as a flow on the node's host memory
  // (sim/platform_builder.h): its terms with the cluster's host figures when it is not calibrated,
  // else both 0. The replay's flow then shares the node's memory with its copies in time.
  HostAdamTime host_flow(const Compute& c) const;
  // A device-to-device copy: read and write through HBM.
  double d2d_copy_s(int64_t bytes) const;
  // Host time to issue the kernels of a compute task (software.host_dispatch_us per kernel; 0 with
  // CUDA graphs). The replay keeps a host clock per rank: a kernel starts no earlier than the host
  // has issued it, and the host issues the compute stream's kernels one after another
  // (docs/accuracy.md, "Host dispatch"). Attention without flash is the framework's four kernels
  // forward (baddbmm, softmax, dropout, bmm) and six backward; every other task is one kernel.
  double host_dispatch_s(const Compute& c) const;
  void set_host_dispatch_us(double us) { dispatch_s_ = us * 1e-6; }
  double dispatch_per_kernel_s() const { return dispatch_s_; }

  // Transformer Engine's FP8 bookkeeping around one FP8 GEMM of the schedule (strategy.dtype
  // fp8: kGemm tasks of dtype fp8_e4m3 forward, fp8_e5m2 backward), as TE v1.8 runs it under
  // Megatron-Core (NVIDIA/TransformerEngine@3ec998e96c82bc30247560ced6170c4221ca2b5a,
  // transformer_engine/pytorch/module/{linear,layernorm_linear,base}.py; docs/accuracy.md section 8):
  //  - forward: the bf16 input is cast to FP8 with its transpose for the wgrad GEMM
  //    (fp8_cast_transpose_fused: read 2, write 1 + 1 bytes an element), unless the input comes
  //    from a norm (`input_from_norm`): TE's LayerNormLinear writes the norm's output in FP8
  //    itself (layernorm_fwd_fp8) and transposes it in the backward (fp8_transpose before the
  //    wgrad GEMM: read 1, write 1 bytes an element), charged to that wgrad GEMM;
  //  - on the weight's first forward GEMM of the iteration (`first_use_of_weight`: the first
  //    micro-batch), the weight is cast to FP8 with its transpose into TE's cached workspace
  //    (get_fp8_workspace(with_transpose=True)): 4 bytes a weight element;
  //  - backward: the bf16 output gradient is cast to FP8 with its transpose once (base.py
  //    grad_output_preprocess, fp8_cast_transpose_fused), charged to the dgrad GEMM: 4 bytes an
  //    element.
  // Every cast computes its amax in the same kernel (delayed scaling), so no extra pass. Each
  // cast is one kernel: `kernels` launches at the streaming bandwidth. Zero for any other task.
  struct Fp8Casts {
    double seconds = 0;
    int kernels = 0;
  };
  Fp8Casts fp8_casts(const Compute& c, bool input_from_norm, bool first_use_of_weight) const;

  // The runtime's time before a kernel the calibration costs (a host profile's task_overhead_s:
  // the host driver's dispatch between kernels, and the part of the kernel's mean time beyond its
  // typical execution, CalibrationTable::typical_fraction), a cost of its own beside time_s(c),
  // which is the kernel's typical execution alone; 0 for any other kernel. The program analysis
  // adds it to the kernel's timer and the replay records it as time between tasks, the kernel
  // after it (ProgramInfo::gap_s).
  double gap_s(const Compute& c) const;

  // The host run's Alloc/Free costs from its calibration profile (sim/host_memory_model.h), or null.
  const HostMemoryModel* host_memory() const { return calibration_ ? &calibration_->host_memory() : nullptr; }

 private:
  double gemm_s(DType t, double batch, double m, double n, double k, double bytes = -1) const;
  // A calibrated kernel's mean time (the table's, else its host model's; negative when neither)
  // and its typical fraction (CalibrationTable::kernel_cost); none without a calibration.
  CalibrationTable::KernelCost calibrated(const Compute& c) const;
  double stream_s(double bytes) const;
  double attention_unfused_s(const Compute& c) const;
  double opaque_s(const Compute& c, bool on_host) const;
  // One FlashAttention kernel: `flops` at the measured efficiency for (bwd, causal, seq, head
  // dim), or the fallback curve, bounded below by `bytes` at the achievable HBM bandwidth.
  double flash_attention_s(DType t, bool bwd, bool causal, double seq, double head_dim, double flops,
                           double bytes) const;

  ClusterSpec cluster_;
  KernelEfficiency eff_;
  bool flash_;
  GpuFamily family_;
  double memory_eff_;
  const CalibrationTable* calibration_;
  double dispatch_s_ = 0;
};

}  // namespace tandem::sim
