// What the real backend needs beyond the schedule: the optimizer's hyper-parameters, the number of
// steps and the stall timeout. One struct, so that every driver trains with the same numbers.
#pragma once

#include <cstdint>

namespace tandem::exec {

struct ExecOptions {
  // AdamW (kernels/cpu/adamw.h). lr 3e-3 makes the tiny GPT's loss fall by a clear margin within
  // five steps (docs/exec.md); betas and eps as in GPT-3 (Brown et al. 2020, appendix B) and
  // Megatron-LM; no weight decay, so that the first steps depend on the gradients alone.
  float lr = 3e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  // Layer and RMS norm epsilon (PyTorch's LayerNorm default).
  float norm_eps = 1e-5f;
  // Alloc and Free tasks run in program order among themselves, pipeline receives and sends
  // excepted (exec/runtime.cc): device memory then follows the planner's timeline
  // (shared/memory_timeline.h). Off, streams that run ahead allocate early and the peak can
  // exceed the plan.
  bool memory_in_program_order = true;
  int steps = 5;
  // A rank that makes no progress (no task finishes) for this long reports the task it waits on
  // and the run is aborted.
  double timeout_s = 60;
  // Whether the event loop and the step barrier call sched_yield while they wait (ranks that
  // share cores) or poll without yielding (each rank on cores of its own: exec/run_args.h).
  bool yield_when_idle = true;
  // Threads of the host Adam (Adam tasks on the host stream, offload's host chunks; the device's
  // Adam keeps one thread, as the calibration profile's kernels do): the rank's share of the cores
  // it may run on (exec/rank_worker.cc). Any count gives the same bits (kernels/cpu/adamw.h).
  int host_adam_threads = 1;
};

}  // namespace tandem::exec
