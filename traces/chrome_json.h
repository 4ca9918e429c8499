// A trace as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing open: one process
// per rank (pid = rank + 1, named "rank N"), one thread per stream the rank used (tid = the
// stream's value + 1, named by to_string(Stream)); ids start at 1 because Perfetto takes pid and
// tid 0 for the kernel's idle task; one complete event ("ph":"X") per task, named by its label,
// category its kind, ts and dur in microseconds, args {task_id, bytes, flops}; and per rank a
// counter track ("ph":"C") "device memory" in bytes (and "host memory" when the rank used any).
// The trace's scenario, digest, backend and machine go in "otherData". Written atomically.
#pragma once

#include <string>

#include "trace.pb.h"

namespace tandem {

void write_chrome_json(const proto::Trace& trace, const std::string& path);

// The JSON text itself.
std::string chrome_json(const proto::Trace& trace);

}  // namespace tandem
