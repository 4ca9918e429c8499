// Fuzz target: the trace reader (traces/trace_io.h read_trace) on a file holding the input, then
// what `tandem compare` does with a trace it accepted, since reports trust what read_trace checked:
// the Chrome/Perfetto JSON, and the comparison of the trace with itself (text, JSON, HTML page).
// tandem::Error is the expected answer to bad input (fuzz_refusal.h); anything else is a finding.
#include <cstdint>
#include <string>

#include "fuzz_input_file.h"
#include "fuzz_refusal.h"
#include "traces/chrome_json.h"
#include "traces/report/compare.h"
#include "traces/report/compare_report_html.h"
#include "traces/trace_io.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::quiet_protobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tandem::fuzz::fuzz_input_file(data, size, "input.trace");
  try {
    const tandem::proto::Trace trace = tandem::read_trace(path);
    (void)tandem::chrome_json(trace);
    const tandem::Comparison c = tandem::compare_traces(trace, trace);
    (void)tandem::comparison_text(c);
    (void)tandem::comparison_json(c);
    (void)tandem::comparison_html(c, trace, trace);
  } catch (const tandem::Error& e) {
    tandem::fuzz::expect_refusal(e);
  }
  return 0;
}
