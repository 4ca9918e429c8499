// Pipeline bubbles of the generated schedules, run on the reference executor with uniform stage
// times (every layer kernel costs 1 forward and 2 backward; embedding, head, communication and the
// optimizer cost nothing). Narayanan et al. (SC21, section 2.2): GPipe and 1F1B idle for a fraction
// (p-1)/(m+p-1) of the iteration; interleaving v chunks per stage cuts it to (p-1)/(v*m+p-1).
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "shared/reference_executor.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

double layer_cost(int, const Program&, const Task& t) {
  const Compute* c = std::get_if<Compute>(&t.op);
  if (!c || c->layer < 0) return 0;
  return c->phase == Phase::kForward ? 1.0 : 2.0;
}

// Fraction of the iteration a stage is idle: 1 - busy / makespan, busy = m * (t_f + t_b).
double bubble_fraction(const std::vector<std::string>& sets) {
  Schedule s(testing::tiny(sets));
  ReferenceRun run = run_reference(s, layer_cost);
  double busy = 0;
  Program p = s.program(0);
  for (const Task& t : p.tasks) busy += layer_cost(0, p, t);
  return 1 - busy / run.makespan_s;
}

TEST(PipelineBubble, GpipeAnd1f1b) {
  for (const char* schedule : {"gpipe", "1f1b"})
    for (int p : {2, 4})
      for (int m : {4, 8}) {
        const double expected = double(p - 1) / (m + p - 1);
        EXPECT_NEAR(bubble_fraction({"model.layers=8", "cluster.gpus=" + std::to_string(p),
                                     "strategy.pp=" + std::to_string(p), std::string("strategy.pp_schedule=") + schedule,
                                     "strategy.micro_batch=1", "strategy.global_batch=" + std::to_string(m)}),
                    expected, 0.01 * expected)
            << schedule << " p " << p << " m " << m;
      }
}

TEST(PipelineBubble, Interleaved) {
  for (int p : {2, 4})
    for (int m : {4, 8}) {
      const int v = 2;
      const double expected = double(p - 1) / (v * m + p - 1);
      EXPECT_NEAR(bubble_fraction({"model.layers=8", "cluster.gpus=" + std::to_string(p),
                                   "strategy.pp=" + std::to_string(p), "strategy.pp_schedule=interleaved",
                                   "strategy.virtual_stages=2", "strategy.micro_batch=1",
                                   "strategy.global_batch=" + std::to_string(m)}),
                  expected, 0.01 * expected)
          << "p " << p << " m " << m;
    }
}

}  // namespace
}  // namespace tandem
