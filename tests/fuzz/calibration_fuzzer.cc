// Fuzz target: the calibration readers. The first byte of the input chooses the format, the rest
// is the file: even, a profile written by `tandem calibrate` (traces/calibration read_calibration,
// then sim's CalibrationTable::load of the same ".pb" file, which converts it to the simulator's
// table); odd, a hand-written TSV table ("kernel<TAB>dtype<TAB>d0,...,d5<TAB>time_us" lines) read
// by CalibrationTable::load. tandem::Error is the expected answer to bad input (fuzz_refusal.h);
// anything else is a finding.
#include <cstdint>
#include <string>

#include "fuzz_input_file.h"
#include "fuzz_refusal.h"
#include "sim/compute_cost_model.h"
#include "traces/calibration/calibration_profile.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool profile = (data[0] & 1) == 0;
  const std::string path = tandem::fuzz::fuzz_input_file(data + 1, size - 1, profile ? "profile.pb" : "table.tsv");
  try {
    if (profile) (void)tandem::read_calibration(path);
    (void)tandem::sim::CalibrationTable::load(path);
  } catch (const tandem::Error& e) {
    tandem::fuzz::expect_refusal(e);
  }
  return 0;
}
