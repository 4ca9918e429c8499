#include "traces/calibration/gemm_probe.h"

#include <algorithm>
#include <chrono>

#include "kernels/cpu/gemm.h"

// OpenBLAS's own call (kernels/cpu links OpenBLAS): the probe runs with the threads a rank of the
// measured run had.
extern "C" void openblas_set_num_threads(int);

namespace tandem {

void probe_gemm(proto::CalibrationProfile& profile, const GemmProbeOptions& o) {
  using Clock = std::chrono::steady_clock;
  openblas_set_num_threads(std::max(1, o.threads));
  profile.set_probe_blas_threads(uint32_t(std::max(1, o.threads)));
  const int64_t top = o.sizes.empty() ? 0 : *std::max_element(o.sizes.begin(), o.sizes.end());
  // Operands as large as the largest shape needs, filled with values that are no denormals.
  std::vector<float> a(size_t(top * top), 0.5f), b(size_t(top * top), 0.25f), c(size_t(top * top), 0.f);
  for (int64_t m : o.sizes)
    for (int64_t n : o.sizes)
      for (int64_t k : o.sizes) {
        if (2.0 * double(m) * double(n) * double(k) > o.max_flops) continue;
        kernels::cpu::gemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);  // warm
        std::vector<double> t;
        const Clock::time_point begin = Clock::now();
        while (int(t.size()) < o.min_reps ||
               std::chrono::duration<double>(Clock::now() - begin).count() < o.min_time_per_shape_s) {
          const Clock::time_point t0 = Clock::now();
          kernels::cpu::gemm(false, false, m, n, k, 1.f, a.data(), k, b.data(), n, 0.f, c.data(), n);
          t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        }
        std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
        proto::GemmProbe* g = profile.add_gemm_probe();
        g->set_m(m);
        g->set_n(n);
        g->set_k(k);
        g->set_time_s(t[t.size() / 2]);
        g->set_reps(uint32_t(t.size()));
      }
}

}  // namespace tandem
