// Writes test traces for the tests that run the programs (render_report_test.sh): DIR/a.trace and
// DIR/b.trace, the tiny GPT at tensor 2 x pipeline 2 under the prediction and the measurement
// costs of reference_trace.h, DIR/other.trace, another scenario (tensor 2 on 2 GPUs), and
// DIR/empty.trace, b.trace without its rank records.
#include <iostream>

#include "reference_trace.h"
#include "shared/error.h"
#include "shared/scenario.h"
#include "traces/trace_io.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tandem-test-make-traces DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::string scenario = TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto";
  try {
    tandem::Schedule s(tandem::load_scenario(scenario, {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"}));
    tandem::write_trace(tandem::testing::reference_trace(s, tandem::testing::prediction_cost, "sim", "reference executor, cost A"),
                        dir + "/a.trace");
    tandem::proto::Trace b = tandem::testing::reference_trace(s, tandem::testing::measurement_cost, "host", "reference executor, cost B");
    tandem::write_trace(b, dir + "/b.trace");
    b.clear_ranks();
    tandem::write_trace(b, dir + "/empty.trace");
    tandem::Schedule other(tandem::load_scenario(scenario, {"cluster.gpus=2", "strategy.tp=2"}));
    tandem::write_trace(tandem::testing::reference_trace(other, tandem::testing::measurement_cost, "host", "cost B"),
                        dir + "/other.trace");
    return 0;
  } catch (const tandem::Error& e) {
    std::cerr << e.what() << "\n";
    return e.exit_code();
  }
}
