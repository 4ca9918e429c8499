// tandem sim --calibration FILE (sim/compute_cost_model.h CalibrationTable::load): a profile or a
// text table, told apart by content; anything that would leave the simulator uncalibrated is
// refused with the path (and line) instead.
#include <gtest/gtest.h>

#include <cmath>

#include "shared/error.h"
#include "sim/compute_cost_model.h"
#include "traces/calibration/calibration_profile.h"
#include "trace_file_util.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

using sim::CalibrationTable;
using testing::spit;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

std::string load_error(const std::string& path) {
  try {
    CalibrationTable::load(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

Compute gemm_64() { return testing::compute(Kernel::kGemm, DType::kFp32, {64, 64, 64}); }

TEST(CalibrationTable, ReadsATextTable) {
  testing::TempDir dir;
  spit(dir.file("t.tsv"), "# kernel dtype dims time_us\ngemm\tfp32\t64,64,64\t12.5\r\n\n");
  const CalibrationTable t = CalibrationTable::load(dir.file("t.tsv"));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(t.find(gemm_64()), 12.5e-6);  // 12.5 us
}

// A profile is read by its content, whatever its name.
TEST(CalibrationTable, ReadsAProfileByContent) {
  testing::TempDir dir;
  proto::CalibrationProfile p;
  p.set_format(kCalibrationFormat);
  proto::KernelTime* k = p.add_kernels();
  k->set_kernel(uint32_t(Kernel::kGemm));
  k->set_dtype(uint32_t(DType::kFp32));
  for (int64_t d : gemm_64().shape_dims()) k->add_dims(d);
  k->set_median_s(7e-6);
  write_calibration(p, dir.file("profile.bin"));
  EXPECT_EQ(CalibrationTable::load(dir.file("profile.bin")).find(gemm_64()), 7e-6);
}

TEST(CalibrationTable, RefusesWhatWouldNotCalibrate) {
  testing::TempDir dir;
  EXPECT_CONTAINS(load_error(dir.path().string()), "it is a directory");
  EXPECT_CONTAINS(load_error("/dev/zero"), "not a regular file");
  spit(dir.file("empty.tsv"), "");
  EXPECT_CONTAINS(load_error(dir.file("empty.tsv")), "empty file");
  spit(dir.file("comments.tsv"), "# kernel\tdtype\tdims\ttime_us\n\n#\n");
  EXPECT_CONTAINS(load_error(dir.file("comments.tsv")), "comments.tsv: a calibration table with no entry");
  spit(dir.file("scenario.tsv"), "# a scenario\nmodel { layers: 2 }\n");
  EXPECT_CONTAINS(load_error(dir.file("scenario.tsv")), "scenario.tsv:2: missing field");
  spit(dir.file("dims.tsv"), "gemm\tfp32\t64,64x,64\t12.5\n");
  EXPECT_CONTAINS(load_error(dir.file("dims.tsv")), "dims.tsv:1: bad dimension '64x'");
  spit(dir.file("seven.tsv"), "gemm\tfp32\t1,2,3,4,5,6,7\t12.5\n");
  EXPECT_CONTAINS(load_error(dir.file("seven.tsv")), "more than 6 dimensions");
  spit(dir.file("inf.tsv"), "gemm\tfp32\t64,64,64\tinf\n");
  EXPECT_CONTAINS(load_error(dir.file("inf.tsv")), "inf.tsv:1: time inf is not a finite time >= 0");
  spit(dir.file("time.tsv"), "gemm\tfp32\t64,64,64\t12us\n");
  EXPECT_CONTAINS(load_error(dir.file("time.tsv")), "bad time '12us'");
  spit(dir.file("binary.pb"), std::string("\x08\x01\x10\x02", 4));
  EXPECT_CONTAINS(load_error(dir.file("binary.pb")), "not a tandem calibration profile");
}

}  // namespace
}  // namespace tandem
