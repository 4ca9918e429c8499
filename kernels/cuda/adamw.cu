#include <cmath>
#include <string>

#include "kernels/cuda/adamw.h"
#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"

namespace tandem::kernels::cuda {
namespace {

using detail::to_float;

// Per-step constants, computed once on the host (in double: beta2^step sits close to 1).
struct Update {
  float beta1;
  float beta2;
  float eps;
  float decay;           // 1 - lr * weight_decay
  float step_size;       // lr / (1 - beta1^step)
  float inv_sqrt_bias2;  // 1 / sqrt(1 - beta2^step)
};

template <typename G>
__global__ void step_kernel(float* param, const G* grad, float* m, float* v, std::int64_t n,
                            Update u, __nv_bfloat16* param_bf16) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_float(grad[i]);
    const float mi = u.beta1 * m[i] + (1.0f - u.beta1) * g;
    const float vi = u.beta2 * v[i] + (1.0f - u.beta2) * g * g;
    const float p = param[i] * u.decay - u.step_size * mi / (sqrtf(vi) * u.inv_sqrt_bias2 + u.eps);
    m[i] = mi;
    v[i] = vi;
    param[i] = p;
    if (param_bf16 != nullptr) param_bf16[i] = __float2bfloat16(p);
  }
}

// Parameters and both moments in bf16, no fp32 master (Apex DistributedFusedAdam with an optimizer
// dtype equal to the model's: store_params False, exp_avg and exp_avg_sq in bf16): the update is
// computed in float from the stored values and each of the three is rounded once when written.
__global__ void bf16_state_kernel(__nv_bfloat16* param, const __nv_bfloat16* grad, __nv_bfloat16* m,
                                  __nv_bfloat16* v, std::int64_t n, Update u) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_float(grad[i]);
    const float mi = u.beta1 * to_float(m[i]) + (1.0f - u.beta1) * g;
    const float vi = u.beta2 * to_float(v[i]) + (1.0f - u.beta2) * g * g;
    const float p = to_float(param[i]) * u.decay - u.step_size * mi / (sqrtf(vi) * u.inv_sqrt_bias2 + u.eps);
    m[i] = __float2bfloat16(mi);
    v[i] = __float2bfloat16(vi);
    param[i] = __float2bfloat16(p);
  }
}

Update make_update(float lr, float beta1, float beta2, float eps, float weight_decay,
                   std::int64_t step) {
  if (step < 1)
    throw std::invalid_argument("adamw_step: step must be >= 1, got " + std::to_string(step));
  const double s = static_cast<double>(step);
  const double bias1 = 1.0 - std::pow(static_cast<double>(beta1), s);
  const double bias2 = 1.0 - std::pow(static_cast<double>(beta2), s);
  return Update{beta1,
                beta2,
                eps,
                1.0f - lr * weight_decay,
                static_cast<float>(lr / bias1),
                static_cast<float>(1.0 / std::sqrt(bias2))};
}

template <typename G>
void launch(float* param, const G* grad, float* m, float* v, std::int64_t n, const Update& u,
            __nv_bfloat16* param_bf16, cudaStream_t stream) {
  if (n == 0) return;
  step_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(param, grad, m, v, n, u,
                                                                            param_bf16);
  detail::check_launch("adamw_step");
}

}  // namespace

void adamw_step(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                float beta1, float beta2, float eps, float weight_decay, std::int64_t step,
                cudaStream_t stream) {
  launch(param, grad, m, v, n, make_update(lr, beta1, beta2, eps, weight_decay, step), nullptr,
         stream);
}

void adamw_step(float* param, const __nv_bfloat16* grad, float* m, float* v, std::int64_t n,
                float lr, float beta1, float beta2, float eps, float weight_decay,
                std::int64_t step, __nv_bfloat16* param_bf16, cudaStream_t stream) {
  launch(param, grad, m, v, n, make_update(lr, beta1, beta2, eps, weight_decay, step), param_bf16,
         stream);
}

void adamw_step(__nv_bfloat16* param, const __nv_bfloat16* grad, __nv_bfloat16* m, __nv_bfloat16* v,
                std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                std::int64_t step, cudaStream_t stream) {
  const Update u = make_update(lr, beta1, beta2, eps, weight_decay, step);
  if (n == 0) return;
  bf16_state_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(param, grad, m, v, n, u);
  detail::check_launch("adamw_step (bf16 state)");
}

}  // namespace tandem::kernels::cuda
