#pragma once
// Host-side error checks of the CUDA kernels: a failed CUDA or cuBLAS call becomes a
// std::runtime_error naming the kernel and the failure, so the caller can report it.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace tandem::kernels::cuda::detail {

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
  }
}

// After a kernel launch: reports a bad launch configuration (not errors of the running kernel).
inline void check_launch(const char* what) { check_cuda(cudaGetLastError(), what); }

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusName(status) + ": " +
                             cublasGetStatusString(status));
  }
}

// cuBLAS and launch dimensions take int; larger sizes are rejected rather than truncated.
inline int to_int(std::int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<int>::max()) {
    throw std::invalid_argument(std::string(what) + ": size " + std::to_string(value) +
                                " is outside the int range");
  }
  return static_cast<int>(value);
}

}  // namespace tandem::kernels::cuda::detail
