#pragma once
// Layer normalization of rows whose columns are split over several ranks (2D tensor parallelism,
// Optimus: each rank holds cols of a row's full_cols hidden features). The row statistics are
// sums over every part, so the work is split into partial kernels whose outputs a sum all-reduce
// over the ranks holding the other columns completes (two passes as in layer_norm.h: the mean,
// then the squared deviations, which avoids the cancellation of E[x^2] - E[x]^2):
//
//   forward:  mean  = allreduce(partial_mean(x))         partial_mean[r] = sum_c x[r,c] / full_cols
//             var   = allreduce(partial_var(x, mean))    partial_var[r]  = sum_c (x[r,c]-mean[r])^2 / full_cols
//             apply: rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * gamma + beta
//   backward: sums  = allreduce(partial_sums(dy, x, ...)) sums[r] = {sum_c g / full_cols, sum_c g xhat / full_cols},
//                                                        g = dy * gamma, xhat = (x - mean) * rstd
//             apply: dx = rstd * (g - sums[r][0] - xhat * sums[r][1]); dgamma += dy xhat, dbeta += dy
//
// With one part (cols == full_cols) and no all-reduce these give layer_norm.h's results.
// dgamma and dbeta ACCUMULATE (+=).

#include <cstdint>

namespace tandem::kernels::cpu {

void layer_norm_partial_mean(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t full_cols,
                             float* mean);
void layer_norm_partial_var(const float* x, const float* mean, std::int64_t rows, std::int64_t cols,
                            std::int64_t full_cols, float* var);
void layer_norm_apply(const float* x, const float* gamma, const float* beta, const float* mean, const float* var,
                      std::int64_t rows, std::int64_t cols, float eps, float* y, float* rstd);
void layer_norm_bwd_partial_sums(const float* dy, const float* x, const float* gamma, const float* mean,
                                 const float* rstd, std::int64_t rows, std::int64_t cols, std::int64_t full_cols,
                                 float* sums);
void layer_norm_bwd_apply(const float* dy, const float* x, const float* gamma, const float* mean, const float* rstd,
                          const float* sums, std::int64_t rows, std::int64_t cols, float* dx, float* dgamma,
                          float* dbeta);

}  // namespace tandem::kernels::cpu
