#include "kernels/cpu/all_to_all_layout.h"

#include <cstring>
#include <stdexcept>

namespace tandem::kernels::cpu {

std::vector<Copy2D> all_to_all_plan(const AllToAllShape& s, bool pack, bool to_heads) {
  const std::int64_t P = s.ranks, B = s.batch, T = s.s_local, e = s.element_bytes;
  if (P < 1 || s.q_cols % P != 0 || s.kv_cols % P != 0)
    throw std::invalid_argument("all_to_all_plan: the Q and KV columns must divide by the ranks");
  const std::int64_t C = s.q_cols + 2 * s.kv_cols, c = C / P;
  std::vector<Copy2D> plan;
  if (pack == to_heads) {
    // Column segments <-> blocks: x [B*T, C] column part (segment g, part j) <-> block j [B*T, c].
    const std::int64_t seg[3] = {s.q_cols, s.kv_cols, s.kv_cols};
    for (std::int64_t j = 0; j < P; ++j) {
      std::int64_t x_off = 0, b_off = 0;
      for (std::int64_t g : seg) {
        const std::int64_t w = g / P;
        if (w > 0) {
          Copy2D cp;
          const std::int64_t wide = (x_off + j * w) * e, block = (j * B * T * c + b_off) * e;
          cp.src = pack ? wide : block;
          cp.src_pitch = pack ? C * e : c * e;
          cp.dst = pack ? block : wide;
          cp.dst_pitch = pack ? c * e : C * e;
          cp.width = w * e;
          cp.rows = B * T;
          plan.push_back(cp);
        }
        x_off += g;
        b_off += w;
      }
    }
  } else {
    // Sequence chunks <-> blocks: y [B, P*T, c] rows [j*T, (j+1)*T) of each sample <-> block j.
    for (std::int64_t j = 0; j < P; ++j) {
      Copy2D cp;
      const std::int64_t block = j * B * T * c * e, seq = j * T * c * e;
      cp.src = pack ? seq : block;
      cp.src_pitch = pack ? P * T * c * e : T * c * e;
      cp.dst = pack ? block : seq;
      cp.dst_pitch = pack ? T * c * e : P * T * c * e;
      cp.width = T * c * e;
      cp.rows = B;
      plan.push_back(cp);
    }
  }
  return plan;
}

void run_copies(const std::vector<Copy2D>& plan, const void* src, void* dst) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (const Copy2D& cp : plan)
    for (std::int64_t r = 0; r < cp.rows; ++r)
      std::memcpy(d + cp.dst + r * cp.dst_pitch, s + cp.src + r * cp.src_pitch, std::size_t(cp.width));
}

}  // namespace tandem::kernels::cpu
