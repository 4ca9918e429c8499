#pragma once
// The layout changes around a sequence-parallel all-to-all on a CUDA stream: the copy plan of
// kernels/cpu/all_to_all_layout.h run as cudaMemcpy2DAsync device-to-device copies (any element
// type: the plan is in bytes).

#include <cuda_runtime.h>

#include "kernels/cpu/all_to_all_layout.h"

namespace tandem::kernels::cuda {

// Throws std::runtime_error when a copy fails to launch.
void run_copies(const std::vector<cpu::Copy2D>& plan, const void* src, void* dst, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
