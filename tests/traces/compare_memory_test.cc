// The memory of the HTML report does not grow with label length x events: the timeline keeps no
// text per event (issue 11: a 10 MB label made tandem compare use 2.4 GB). This program replaces
// the global operator new to measure the peak of live heap bytes while the report is made.
#include <malloc.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "traces/report/compare.h"
#include "traces/report/compare_report_html.h"
#include "traces/trace_builder.h"
#include "traces/trace_io.h"

namespace {

std::atomic<int64_t> g_live{0}, g_peak{0};

void* counted_alloc(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  const int64_t live = g_live += int64_t(malloc_usable_size(p));
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return p;
}

void counted_free(void* p) {
  if (!p) return;
  g_live -= int64_t(malloc_usable_size(p));
  std::free(p);
}

}  // namespace

void* operator new(size_t n) { return counted_alloc(n); }
void* operator new[](size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, size_t) noexcept { counted_free(p); }
void operator delete[](void* p, size_t) noexcept { counted_free(p); }

namespace tandem {
namespace {

// One rank of `events` back-to-back 1 us GEMMs on the compute stream, all with one label of
// kMaxTraceTextBytes bytes (the longest a trace may hold).
proto::Trace long_label_trace(const std::string& backend, int events) {
  proto::Trace t;
  t.set_format(kTraceFormat);
  t.set_backend(backend);
  t.set_scenario_digest("0123456789abcdef");
  t.set_world_size(1);
  std::string label = "gemm ";
  label.resize(kMaxTraceTextBytes, 'x');
  t.add_labels(label);
  proto::Events* e = t.add_ranks()->mutable_events();
  for (int i = 0; i < events; ++i) {
    e->add_task_id(uint32_t(i));
    e->add_stream(0);
    e->add_start_s(1e-6 * i);
    e->add_end_s(1e-6 * (i + 1));
    e->add_bytes(0);
    e->add_flops(0);
    e->add_label(0);
  }
  t.set_event_count(uint64_t(events));
  return t;
}

// 20,000 events a trace with a 4 KiB label: a copy of the label per event and lane would be
// 2 x 20,000 x 4 KiB = 160 MiB. Without text per event, the timeline holds 2 x 20,000 spans of 32
// bytes (1.3 MB, 2.6 MB with vector growth) and the page about 100 kB: the bound, 16 MiB, leaves
// room and is ten times below the copies.
TEST(CompareMemory, ReportHoldsNoTextPerEvent) {
  const int events = 20000;
  const proto::Trace a = long_label_trace("sim", events), b = long_label_trace("host", events);
  const Comparison c = compare_traces(a, b);
  ASSERT_EQ(c.matched, events);
  const int64_t before = g_live.load();
  g_peak = before;
  const std::string html = comparison_html(c, a, b);
  const int64_t growth = g_peak.load() - before;
  EXPECT_LT(growth, int64_t(16) << 20) << "peak heap growth " << growth << " bytes for a " << html.size()
                                       << "-byte page";
  EXPECT_NE(html.find("id=\"iteration-a\""), std::string::npos);
  std::printf("peak heap growth while making the page: %lld bytes\n", static_cast<long long>(growth));
}

}  // namespace
}  // namespace tandem
