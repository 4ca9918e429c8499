#include "shared/optimizer_bytes.h"

namespace tandem {

int64_t optimizer_bytes_per_element(const Scenario& sc) {
  const SoftwareSpec& sw = sc.software;
  const int64_t p = dtype_bytes(sc.param_dtype()), g = dtype_bytes(sc.grad_dtype());
  const int64_t s = dtype_bytes(sc.optimizer_state_dtype());
  const bool mixed = sc.strategy.dtype != DType::kFp32;
  int64_t bytes = 4 * s;  // m and v read and written
  switch (mixed ? sc.master_params() : MasterParams::kFp32) {
    case MasterParams::kFp32:
      bytes += 8;  // the fp32 master read and written
      if (sw.separate_master_copy && mixed) {
        if (g != 4) bytes += g + 4;  // cast to fp32 main grads
        bytes += 4;                  // Adam reads the fp32 main grads
        bytes += 4 + p;              // master -> model copy
      } else {
        bytes += g + p;  // Adam reads the gradient and writes the parameter itself
      }
      break;
    case MasterParams::kRemainder:
      bytes += 2 * p + 4 + g;  // parameter and remainder read and written, the gradient read
      break;
    case MasterParams::kNone:
      bytes += 2 * p + g;  // the parameter read and written, the gradient read
      break;
  }
  if (sw.loss_scale_check && sc.strategy.dtype == DType::kFp16) bytes += 8;
  if (sw.clip_grad > 0) bytes += 4;
  return bytes;
}

}  // namespace tandem
