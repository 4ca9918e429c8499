// cuda::gelu and cuda::swiglu, forward and backward, against the CPU kernels on the same inputs.

#include <gtest/gtest.h>

#include "kernels/cpu/gelu.h"
#include "kernels/cpu/swiglu.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/swiglu.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

template <typename T>
class CudaActivation : public CudaTypedTest<T> {};
TYPED_TEST_SUITE(CudaActivation, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaActivation, GeluMatchesCpu) {
  using T = TypeParam;
  const std::int64_t n = 1000;
  const auto x = round_to<T>(random_floats(n, 1, -5.0f, 5.0f));
  const auto dy = round_to<T>(random_floats(n, 2));
  std::vector<float> y(n), dx(n);
  cpu::gelu_forward(x.data(), y.data(), n);
  cpu::gelu_backward(x.data(), dy.data(), dx.data(), n);
  DeviceArray<T> d_x(x), d_dy(dy), d_y(n), d_dx(n);
  cuda::gelu_forward(d_x.data(), d_y.data(), n, this->stream_);
  cuda::gelu_backward(d_x.data(), d_dy.data(), d_dx.data(), n, this->stream_);
  EXPECT_TRUE(all_near(d_y.to_host(), y, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
  EXPECT_TRUE(all_near(d_dx.to_host(), dx, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
}

TYPED_TEST(CudaActivation, SwigluMatchesCpu) {
  using T = TypeParam;
  const std::int64_t rows = 7, f = 129;
  const auto x = round_to<T>(random_floats(rows * 2 * f, 3, -4.0f, 4.0f));
  const auto dy = round_to<T>(random_floats(rows * f, 4));
  std::vector<float> y(rows * f), dx(rows * 2 * f);
  cpu::swiglu_forward(x.data(), rows, f, y.data());
  cpu::swiglu_backward(x.data(), dy.data(), rows, f, dx.data());
  DeviceArray<T> d_x(x), d_dy(dy), d_y(rows * f), d_dx(rows * 2 * f);
  cuda::swiglu_forward(d_x.data(), rows, f, d_y.data(), this->stream_);
  cuda::swiglu_backward(d_x.data(), d_dy.data(), rows, f, d_dx.data(), this->stream_);
  EXPECT_TRUE(all_near(d_y.to_host(), y, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
  EXPECT_TRUE(all_near(d_dx.to_host(), dx, Tolerance<T>::kRtol, Tolerance<T>::kAtol));
}

}  // namespace
}  // namespace tandem::kernels
