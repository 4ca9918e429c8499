// The bytes of the optimizer step as a framework runs it, per element of the optimizer's shard:
// Adam itself and the passes around it that the software does (docs/software.md), for the Adam
// task's cost (Compute::dims[2] of Kernel::kAdam; Compute::bytes_moved).
#pragma once

#include <cstdint>

#include "shared/scenario.h"

namespace tandem {

// With p = bytes of the training dtype, g = bytes of the gradient buffer (scenario.grad_dtype()):
//   Adam over fp32 master, m, v (apex/TE FusedAdam: read and write 3 x 4)        24
//   its gradient read: g, or 4 from the fp32 main grads of a separate cast       g | 4
//   the parameter written by Adam itself (no separate copy)                      p
//   separate_master_copy, mixed precision:
//     grads cast to fp32 main grads when g != 4 (main_grad.float(): read g, write 4)   g + 4
//     master copied back to the training dtype (read 4, write p)                        4 + p
//   loss_scale_check and fp16: unscale + inf/nan check (read and write 4)        8
//   clip_grad > 0: the L2-norm pass over the fp32 gradients (read 4)             4
// The bare schedule (SoftwareSpec{}) gives 2p + 24 (read a p-byte gradient, write p), the cost
// Kernel::kAdam has without dims[2].
int64_t optimizer_bytes_per_element(const Scenario& scenario);

}  // namespace tandem
