// Picks the grid ops of a rank's tensor-parallel mode (shared/tp3d.h).
#include "shared/tp3d.h"

namespace tandem {

GridLayerOps grid_layer_ops(const StepState& st) { return tp3d(st) ? tp3d_layer_ops(st) : tp2d_layer_ops(st); }

GridEndOps grid_end_ops(const StepState& st) { return tp3d(st) ? tp3d_end_ops(st) : tp2d_end_ops(st); }

}  // namespace tandem
