// The resolver's last rule: the sizes a model and strategy imply must fit in 64-bit arithmetic, so
// that the generators and the planner never wrap. Each is computed in checked arithmetic from the
// resolved figures and refused at the field that drives it, with its formula. Bytes are counted
// at 4 per element (fp32, the widest), so that every dtype's buffers fit.
#include <algorithm>

#include "shared/error.h"
#include "shared/scenario_resolver.h"

namespace tandem {

void Resolver::check_sizes(const ModelSpec& m, const StrategySpec& s) const {
  constexpr int64_t kElement = 4;
  const int64_t tp = s.tp;
  const int64_t ffn_in = int64_t(m.ffn_hidden) / tp * (m.activation == Activation::kSwiglu ? 2 : 1);
  const int64_t qkv = (int64_t(m.heads) + 2 * m.kv_heads) / tp * m.head_dim();
  const int64_t width = std::max({int64_t(m.hidden), ffn_in, qkv});
  product("strategy.micro_batch", "the widest activation of a micro-batch, micro_batch x seq_len x width x 4 bytes",
          {s.micro_batch, m.seq_len, width, kElement});
  product("model.vocab", "the logits of a micro-batch, micro_batch x seq_len x vocab/tp x 4 bytes",
          {s.micro_batch, m.seq_len, m.vocab / tp, kElement});
  if (!s.flash_attention)
    product("model.seq_len", "the attention scores of a micro-batch, micro_batch x heads/tp x seq_len x seq_len x 4 "
                             "bytes (flash attention keeps none)",
            {s.micro_batch, m.heads / tp, m.seq_len, m.seq_len, kElement});
  // With the limits of shared/scenario_limits.h the count itself fits (below 2^61); its state may not.
  product("model", "the model state, parameters x 20 bytes (fp32 weights, gradients, master copy, Adam moments)",
          {m.parameters(), 20});
}

}  // namespace tandem
