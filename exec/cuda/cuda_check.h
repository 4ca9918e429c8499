// Return-code checks of the CUDA driver: every failed CUDA runtime, cuBLAS or NCCL call becomes a
// tandem::Error (exit code 5, a runtime failure) naming the call and the library's message.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "shared/error.h"

namespace tandem::exec {


inline void check_cuda(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess)
    throw Error(std::string("exec: ") + call + " failed: " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc),
                ErrorKind::kFault);
}

inline void check_cublas(cublasStatus_t rc, const char* call) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("exec: ") + call + " failed: " + cublasGetStatusName(rc) + ": " +
                    cublasGetStatusString(rc),
                ErrorKind::kFault);
}

// comm may be null; when given, NCCL's last error (ncclGetLastError) is appended.
inline void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm = nullptr) {
  if (rc != ncclSuccess) {
    std::string msg = std::string("exec: ") + call + " failed: " + ncclGetErrorString(rc);
    const char* last = ncclGetLastError(comm);
    if (last && *last) msg += std::string(" (") + last + ")";
    throw Error(msg, ErrorKind::kFault);
  }
}

}  // namespace tandem::exec
