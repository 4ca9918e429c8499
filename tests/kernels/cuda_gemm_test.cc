// cuda::gemm against cpu::gemm on the same inputs, for every transposition, with padded leading
// dimensions and beta accumulation; float and bf16 storage, and bf16 inputs into a float C.

#include <cublas_v2.h>
#include <gtest/gtest.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cuda/gemm.h"
#include "tests/kernels/cuda_test_util.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

template <typename T>
class CudaGemm : public CudaTypedTest<T> {
 protected:
  void SetUp() override {
    CudaTypedTest<T>::SetUp();
    if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
    ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (handle_ != nullptr) cublasDestroy(handle_);
    CudaTypedTest<T>::TearDown();
  }
  cublasHandle_t handle_ = nullptr;
};
TYPED_TEST_SUITE(CudaGemm, StorageTypes, StorageTypeNames);

TYPED_TEST(CudaGemm, MatchesCpuForEveryTransposition) {
  using T = TypeParam;
  const std::int64_t m = 37, n = 45, k = 29, pad = 3;
  for (const bool trans_a : {false, true}) {
    for (const bool trans_b : {false, true}) {
      const std::int64_t lda = (trans_a ? m : k) + pad, ldb = (trans_b ? k : n) + pad,
                         ldc = n + pad;
      const auto a = round_to<T>(random_floats((trans_a ? k : m) * lda, 1));
      const auto b = round_to<T>(random_floats((trans_b ? n : k) * ldb, 2));
      const auto c0 = round_to<T>(random_floats(m * ldc, 3));
      DeviceArray<T> da(a), db(b), dc(c0);
      cuda::gemm(this->handle_, trans_a, trans_b, m, n, k, 0.5f, da.data(), lda, db.data(), ldb,
                 1.0f, dc.data(), ldc, this->stream_);
      auto expected = c0;
      cpu::gemm(trans_a, trans_b, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 1.0f,
                expected.data(), ldc);
      EXPECT_TRUE(all_near(dc.to_host(), expected, Tolerance<T>::kRtol, Tolerance<T>::kAtol))
          << "trans_a " << trans_a << " trans_b " << trans_b;
    }
  }
}

// Weight gradients kept in fp32 while activations are bf16.
TEST_F(CudaTest, GemmBf16InputsAccumulateIntoFloat) {
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const std::int64_t m = 33, n = 17, k = 65;
  const auto a = round_to<__nv_bfloat16>(random_floats(k * m, 4));  // stored [k, m]
  const auto b = round_to<__nv_bfloat16>(random_floats(k * n, 5));  // stored [k, n]
  const auto c0 = random_floats(m * n, 6);
  DeviceArray<__nv_bfloat16> da(a), db(b);
  DeviceArray<float> dc(c0);
  cuda::gemm(handle, true, false, m, n, k, 1.0f, da.data(), m, db.data(), n, 1.0f, dc.data(), n,
             stream_);
  auto expected = c0;
  cpu::gemm(true, false, m, n, k, 1.0f, a.data(), m, b.data(), n, 1.0f, expected.data(), n);
  EXPECT_TRUE(all_near(dc.to_host(), expected, 1e-4, 1e-4));
  cublasDestroy(handle);
}

}  // namespace
}  // namespace tandem::kernels
