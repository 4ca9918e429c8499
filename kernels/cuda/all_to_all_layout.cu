#include "kernels/cuda/all_to_all_layout.h"

#include <stdexcept>
#include <string>

namespace tandem::kernels::cuda {

void run_copies(const std::vector<cpu::Copy2D>& plan, const void* src, void* dst, cudaStream_t stream) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (const cpu::Copy2D& cp : plan) {
    const cudaError_t e = cudaMemcpy2DAsync(d + cp.dst, size_t(cp.dst_pitch), s + cp.src, size_t(cp.src_pitch),
                                            size_t(cp.width), size_t(cp.rows), cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMemcpy2DAsync: ") + cudaGetErrorString(e));
  }
}

}  // namespace tandem::kernels::cuda
