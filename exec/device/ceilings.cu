// tandem-ceilings: the two ceilings of one GPU that docs/validation.md compares tandem's runs
// against (measured on the device, not taken from the datasheet), plus the
// host link that optimizer offload uses. One line per measurement:
//   ceiling h2d_pinned_GBps X      cudaMemcpyAsync host->device from cudaHostAlloc memory
//   ceiling d2h_pinned_GBps X      device->host into cudaHostAlloc memory
//   ceiling d2d_GBps X             device->device, counting bytes read plus bytes written
//   ceiling bf16_gemm_TFLOPs X     cublasGemmEx bf16 in/out, fp32 accumulate, N^3 (2 N^3 flop)
// Each is the median of REPS timed repetitions (CUDA events) after warm-ups, on random data.
// Usage: tandem-ceilings [--bytes B] [--gemm N] [--reps R]   (defaults 2 GiB, 8192, 10)
// Exit codes: 0 ok, 2 no CUDA device, 5 a CUDA/cuBLAS call failed (named on stderr).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace {

#define CHECK_CUDA(call)                                                                \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "tandem-ceilings: %s: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(5);                                                                     \
    }                                                                                   \
  } while (0)
#define CHECK_CUBLAS(call)                                                             \
  do {                                                                                 \
    cublasStatus_t s_ = (call);                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "tandem-ceilings: %s: cuBLAS status %d\n", #call, int(s_)); \
      std::exit(5);                                                                    \
    }                                                                                  \
  } while (0)

__global__ void fill_random_bf16(__nv_bfloat16* p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    std::uint64_t x = seed ^ (std::uint64_t(i) * 0x9E3779B97F4A7C15ULL);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    p[i] = __float2bfloat16(float(x >> 40) * (1.0f / 16777216.0f) - 0.5f);  // U(-0.5, 0.5)
  }
}

// Median milliseconds of `reps` timed calls of f on stream s, after `warm` untimed ones.
float median_ms(cudaStream_t s, int warm, int reps, const std::function<void()>& f) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < warm; ++i) f();
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CHECK_CUDA(cudaEventRecord(a, s));
    f();
    CHECK_CUDA(cudaEventRecord(b, s));
    CHECK_CUDA(cudaEventSynchronize(b));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t bytes = std::int64_t(2) << 30;
  int n = 8192, reps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--bytes")) bytes = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--gemm")) n = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "tandem-ceilings: no CUDA device is visible\n");
    return 2;
  }
  cudaDeviceProp p{};
  CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
  std::printf("device %s sm_%d%d %d SMs %.1f GiB\n", p.name, p.major, p.minor, p.multiProcessorCount,
              double(p.totalGlobalMem) / (1 << 30));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Copies. The host buffer is written with bytes (not zeros) before the first copy.
  void *host = nullptr, *d0 = nullptr, *d1 = nullptr;
  CHECK_CUDA(cudaHostAlloc(&host, size_t(bytes), cudaHostAllocDefault));
  std::memset(host, 0x5a, size_t(bytes));
  CHECK_CUDA(cudaMalloc(&d0, size_t(bytes)));
  CHECK_CUDA(cudaMalloc(&d1, size_t(bytes)));
  const double gb = double(bytes) / 1e9;
  float ms = median_ms(s, 2, reps, [&] { CHECK_CUDA(cudaMemcpyAsync(d0, host, size_t(bytes), cudaMemcpyHostToDevice, s)); });
  std::printf("ceiling h2d_pinned_GBps %.1f\n", gb / (ms * 1e-3));
  ms = median_ms(s, 2, reps, [&] { CHECK_CUDA(cudaMemcpyAsync(host, d0, size_t(bytes), cudaMemcpyDeviceToHost, s)); });
  std::printf("ceiling d2h_pinned_GBps %.1f\n", gb / (ms * 1e-3));
  ms = median_ms(s, 3, reps, [&] { CHECK_CUDA(cudaMemcpyAsync(d1, d0, size_t(bytes), cudaMemcpyDeviceToDevice, s)); });
  std::printf("ceiling d2d_GBps %.1f   (read + write)\n", 2 * gb / (ms * 1e-3));
  CHECK_CUDA(cudaFree(d0));
  CHECK_CUDA(cudaFree(d1));
  CHECK_CUDA(cudaFreeHost(host));

  // bf16 GEMM, fp32 accumulation, as the CUDA driver's GEMMs (kernels/cuda/gemm.cu) ask cuBLAS.
  const std::int64_t e = std::int64_t(n) * n;
  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, size_t(e) * 2));
  CHECK_CUDA(cudaMalloc(&b, size_t(e) * 2));
  CHECK_CUDA(cudaMalloc(&c, size_t(e) * 2));
  fill_random_bf16<<<1024, 256, 0, s>>>(a, e, 1);
  fill_random_bf16<<<1024, 256, 0, s>>>(b, e, 2);
  CHECK_CUDA(cudaGetLastError());
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  CHECK_CUBLAS(cublasSetStream(h, s));
  const float one = 1, zero = 0;
  ms = median_ms(s, 3, reps, [&] {
    CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &zero, c,
                    CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  std::printf("ceiling bf16_gemm_TFLOPs %.1f   (%d^3, median of %d)\n", 2.0 * double(e) * n / (ms * 1e-3) / 1e12, n,
              reps);
  CHECK_CUBLAS(cublasDestroy(h));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  CHECK_CUDA(cudaStreamDestroy(s));
  return 0;
}
