// The bytes of the optimizer step as a framework runs it, per element of the optimizer's shard:
// Adam itself and the passes around it that the software does (docs/software.md), for the Adam
// task's cost (Compute::dims[2] of Kernel::kAdam; Compute::bytes_moved).
#pragma once

#include <cstdint>

#include "shared/scenario.h"

namespace tandem {

// With p = bytes of the parameters' dtype, g = bytes of the gradient buffer (scenario.grad_dtype()),
// s = bytes of Adam's moments (scenario.optimizer_state_dtype()):
//   m and v read and written                                                     4s
//   fp32 runs (the parameters are the fp32 values): the master read and written  8
//     and, as before, the gradient read and the parameter written                 g + p
//   mixed precision, by software.master_params:
//     fp32 master read and written                                               8
//       separate_master_copy:
//         grads cast to fp32 main grads when g != 4 (main_grad.float(): read g, write 4)   g + 4
//         Adam reads the fp32 main grads                                                   4
//         master copied back to the training dtype (read 4, write p)                      4 + p
//       else Adam reads the gradient and writes the parameter itself             g + p
//     remainder (Apex multi_tensor_fused_adam_with_param_remainders: reads the bf16 parameter
//       and its int16 remainder, writes both back)                               2p + 4 + g
//     none (Apex multi_tensor_fused_adam on the parameter itself, store_params False)  2p + g
//   loss_scale_check and fp16: unscale + inf/nan check (read and write 4)        8
//   clip_grad > 0: the L2-norm pass over the fp32 gradients (read 4)             4
// fp32 master and moments without a separate copy give 2p + 24 for a p-byte gradient (read the
// gradient, write p), the cost Kernel::kAdam has without dims[2].
int64_t optimizer_bytes_per_element(const Scenario& scenario);

}  // namespace tandem
