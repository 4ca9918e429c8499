#pragma once
// CUDA kernel tests: a fixture that skips every test when no CUDA device is usable, and device
// arrays that convert from and to float on the host, so one typed test body serves float and bf16
// storage. Inputs are rounded to the storage type first (round_to) so that the CPU kernel, the
// reference, sees exactly what the GPU sees.

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tandem::kernels::test {

// Empty when a device is usable, otherwise why not; asked once per process.
inline const std::string& cuda_unavailable_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess)
      return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status);
    if (count == 0) return std::string("cudaGetDeviceCount returned 0");
    return std::string();
  }();
  return reason;
}

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline float host_to_float(float x) { return x; }
inline float host_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
T host_from_float(float x) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    return __float2bfloat16(x);
  }
}

// The values of x after a round trip through storage type T.
template <typename T>
std::vector<float> round_to(std::vector<float> x) {
  for (float& v : x) v = host_to_float(host_from_float<T>(v));
  return x;
}

// Device memory for n elements of T (float, bf16 or int32), freed on destruction.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t n) : n_(n) {
    check(cudaMalloc(&ptr_, n * sizeof(T)), "cudaMalloc");
  }
  // Uploads host values, converting float to T.
  template <typename H>
  explicit DeviceArray(const std::vector<H>& host) : DeviceArray(host.size()) {
    std::vector<T> staged(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) {
      if constexpr (std::is_same_v<T, std::int32_t>) {
        staged[i] = host[i];
      } else {
        staged[i] = host_from_float<T>(host[i]);
      }
    }
    check(cudaMemcpy(ptr_, staged.data(), n_ * sizeof(T), cudaMemcpyHostToDevice),
          "cudaMemcpy H2D");
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr_); }

  T* data() { return ptr_; }
  // Waits for the device, then downloads as float.
  std::vector<float> to_host() const {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<T> staged(n_);
    check(cudaMemcpy(staged.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost),
          "cudaMemcpy D2H");
    std::vector<float> out(n_);
    for (std::size_t i = 0; i < n_; ++i) out[i] = host_to_float(staged[i]);
    return out;
  }

 private:
  std::size_t n_;
  T* ptr_ = nullptr;
};

// Tolerances of a CUDA result against the CPU kernel on the same (rounded) inputs: float differs
// only by summation order; bf16 rounds every stored intermediate to 8 significant bits.
template <typename T>
struct Tolerance {
  static constexpr double kRtol = 1e-4;
  static constexpr double kAtol = 1e-5;
};
template <>
struct Tolerance<__nv_bfloat16> {
  static constexpr double kRtol = 5e-2;
  static constexpr double kAtol = 5e-2;
};

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_unavailable_reason().empty())
      GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

// Typed over the storage types; names the instantiations "float" and "bf16".
template <typename T>
class CudaTypedTest : public CudaTest {};

using StorageTypes = ::testing::Types<float, __nv_bfloat16>;

struct StorageTypeNames {
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, float> ? "float" : "bf16";
  }
};

}  // namespace tandem::kernels::test
