// Calibration profiles: the median measured time of each kernel shape and each collective shape
// of a measured trace. The trace says when each task ran; the schedule it was measured on says
// what each task was (kernel, dtype, dims; collective op, group, bytes), so both are needed.
#pragma once

#include <string>

#include "calibration.pb.h"
#include "shared/schedule.h"
#include "trace.pb.h"

namespace tandem {

inline constexpr const char* kCalibrationFormat = "tandem-calibration-1";

// Throws Error when the trace was not measured on this schedule (digest, world size, task ids).
proto::CalibrationProfile make_calibration(const Schedule& schedule, const proto::Trace& trace);

// Binary protobuf, written atomically; the reader rejects a foreign or truncated file.
void write_calibration(const proto::CalibrationProfile& profile, const std::string& path);
proto::CalibrationProfile read_calibration(const std::string& path);

}  // namespace tandem
