// cuda::add, cuda::scale and cuda::accumulate against the CPU kernels on the same inputs.

#include <gtest/gtest.h>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

template <typename T>
class CudaElementwise : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaElementwise, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaElementwise, AddScaleAccumulateMatchCpu) {
  using T = TypeParam;
  const std::int64_t n = 100003;  // more than one grid-stride pass of a small grid would cover
  const auto a = round_to<T>(random_floats(n, 1));
  const auto b = round_to<T>(random_floats(n, 2));
  std::vector<float> sum(n), scaled = a, acc = b;
  cpu::add(a.data(), b.data(), sum.data(), n);
  cpu::scale(scaled.data(), -0.5f, n);
  cpu::accumulate(a.data(), acc.data(), n);

  DeviceArray<T> d_a(a), d_b(b), d_sum(n), d_scaled(a), d_acc(b);
  cuda::add(d_a.data(), d_b.data(), d_sum.data(), n, this->stream_);
  cuda::scale(d_scaled.data(), -0.5f, n, this->stream_);
  cuda::accumulate(d_a.data(), d_acc.data(), n, this->stream_);
  EXPECT_TRUE(all_near(d_sum.to_host(), sum, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
  EXPECT_TRUE(all_near(d_scaled.to_host(), scaled, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
  EXPECT_TRUE(all_near(d_acc.to_host(), acc, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
}

}  // namespace
}  // namespace tandem::kernels
