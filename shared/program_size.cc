#include "shared/program_size.h"

#include "shared/error.h"

namespace tandem {

int64_t estimate_program_tasks(const Scenario& sc) {
  const StrategySpec& s = sc.strategy;
  constexpr const char* what = "the estimate of a rank program's tasks";
  const int64_t layers = sc.model.layers / s.pp;  // on one rank, every chunk of its stage
  const bool sharded_grads = s.dp > 1 && s.zero_stage >= 2;
  const bool overlap = sc.software.tp_comm_overlap && s.sp_mode == SpMode::kMegatron && s.tp > 1;
  int64_t per_layer = 100 + (sharded_grads ? 16 : 0) + (overlap ? checked_mul(32, s.tp, what) : 0);
  // Sequence parallelism over the sp axis: Ulysses' four exchanges (about 36 tasks), ring
  // attention's sp steps forward and backward (about 14 tasks a step, measured on tiny-gpt).
  if (s.sp > 1 && s.sp_mode == SpMode::kUlysses) per_layer += 40;
  if (s.sp > 1 && s.sp_mode == SpMode::kRingAttention) per_layer = checked_add(per_layer, checked_mul(16, s.sp, what), what);
  // Ring self-attention: four ring passes of about 6 tasks a step, two all-reduces.
  if (s.sp > 1 && s.sp_mode == SpMode::kRing) per_layer = checked_add(per_layer, checked_mul(24, s.sp, what), what);
  if (s.recompute == Recompute::kFull) per_layer *= 2;
  else if (s.recompute == Recompute::kSelective) per_layer += 20;
  const int64_t per_micro_batch = checked_add(checked_mul(layers, per_layer, what), 80, what);
  const int64_t passes = checked_mul(s.micro_batches(), per_micro_batch, what);
  return checked_add(passes, checked_add(checked_mul(layers + 2, 40, what), 1024, what), what);
}

int64_t plan_bytes_per_task(const Scenario& sc) {
  const int64_t pp = sc.strategy.pp;
  return kProgramBytesPerTask + (pp > 1 ? pp * kReplayBytesPerTask : 0);
}

void check_program_memory(const Scenario& sc, int64_t bytes_per_task, const std::string& what,
                          const ResourceLimit& limit) {
  const int64_t tasks = estimate_program_tasks(sc);
  const int64_t bytes = checked_mul(tasks, bytes_per_task, "the estimate of the programs' memory");
  check_memory_estimate(bytes, what,
                        "about " + std::to_string(tasks) + " tasks per rank program (" +
                            std::to_string(sc.strategy.micro_batches()) + " micro-batches x " +
                            std::to_string(sc.model.layers / sc.strategy.pp) + " layers per rank) x " +
                            std::to_string(bytes_per_task) + " bytes",
                        limit);
}

}  // namespace tandem
