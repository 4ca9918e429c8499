#include "shared/param_layout.h"

#include <algorithm>
#include <limits>

#include "shared/chunk_layout.h"
#include "shared/tp2d_groups.h"
#include "shared/tp3d_groups.h"

namespace tandem {
namespace {

GlobalSlice full(int64_t rows, int64_t cols) { return {rows, cols, 0, 0, rows, cols}; }
GlobalSlice row_shard(int64_t rows, int64_t cols, int parts, int index) {
  int64_t r = rows / parts;
  return {rows, cols, r * index, 0, r, cols};
}
GlobalSlice col_shard(int64_t rows, int64_t cols, int parts, int index) {
  int64_t c = cols / parts;
  return {rows, cols, 0, c * index, rows, c};
}

void add(ParamUnit& u, std::string name, GlobalSlice s) {
  ParamTensor t{std::move(name), s.rows, s.cols, s};
  u.elements += t.elements();
  u.tensors.push_back(std::move(t));
}

// How one rank's share of each tensor is cut: 1D (Megatron) splits column-parallel weights by
// output rows and row-parallel ones by input columns over tp ranks, the vocabulary by rows, and
// replicates the norms; 2D (shared/tp2d_groups.h) gives rank (i, j) of the q x q grid out block j
// and in block i of every weight, the feature block j of the norms, and vocabulary block i,
// feature block j of the embedding and head tables.
//
// 3D (shared/tp3d_groups.h) gives rank (a, b, c) of the q x q x q cube, of a weight whose input
// features are on axis C (qkv, fc1: input feature block c, output block a once gathered over B)
// the rows [out/q^2] of block a*q + b and in block c; of one whose input is on axis A (o, fc2)
// rows block c*q + b and in block a; the norms' feature block c; the table's vocabulary block
// a*q + b (of q^2) and feature block c.
struct Split {
  int tp = 1, ti = 0;  // 1D
  Tp2dCoord g;         // 2D when g.q > 1
  Tp3dCoord t;         // 3D when t.q > 1
  bool two_d() const { return g.q > 1; }
  bool three_d() const { return t.q > 1; }
  GlobalSlice weight(int64_t out, int64_t in) const {
    return {out, in, out / g.q * g.j, in / g.q * g.i, out / g.q, in / g.q};
  }
  // 3D: output rows block `out_block` of q^2, input block `in_block` of q.
  GlobalSlice cube(int64_t out, int64_t in, int out_block, int in_block) const {
    const int64_t r = out / (int64_t(t.q) * t.q);
    return {out, in, r * out_block, in / t.q * in_block, r, in / t.q};
  }
  GlobalSlice column_parallel(int64_t out, int64_t in) const {
    if (three_d()) return cube(out, in, t.a * t.q + t.b, t.c);
    return two_d() ? weight(out, in) : row_shard(out, in, tp, ti);
  }
  GlobalSlice row_parallel(int64_t out, int64_t in) const {
    if (three_d()) return cube(out, in, t.c * t.q + t.b, t.a);
    return two_d() ? weight(out, in) : col_shard(out, in, tp, ti);
  }
  GlobalSlice norm(int64_t h) const {
    if (three_d()) return col_shard(1, h, t.q, t.c);
    return two_d() ? col_shard(1, h, g.q, g.j) : full(1, h);
  }
  GlobalSlice table(int64_t vocab, int64_t h) const {
    if (three_d()) return cube(vocab, h, t.a * t.q + t.b, t.c);
    if (!two_d()) return row_shard(vocab, h, tp, ti);
    return {vocab, h, vocab / g.q * g.i, h / g.q * g.j, vocab / g.q, h / g.q};
  }
};

void add_norm(ParamUnit& u, const ModelSpec& m, const std::string& prefix, const Split& sp) {
  add(u, prefix + ".weight", sp.norm(m.hidden));
  if (m.norm == Norm::kLayerNorm) add(u, prefix + ".bias", sp.norm(m.hidden));
  u.norm_elements = u.elements;
}

ParamUnit layer_unit(const ModelSpec& m, int layer, int chunk, const Split& sp) {
  ParamUnit u;
  u.kind = ParamUnit::Kind::kLayer;
  u.layer = layer;
  u.chunk = chunk;
  const std::string p = "layer" + std::to_string(layer);
  const int64_t h = m.hidden, d = m.head_dim();
  add_norm(u, m, p + ".ln1", sp);
  add(u, p + ".ln2.weight", sp.norm(h));
  if (m.norm == Norm::kLayerNorm) add(u, p + ".ln2.bias", sp.norm(h));
  u.norm_elements = u.elements;
  add(u, p + ".attn.q.weight", sp.column_parallel(m.heads * d, h));
  add(u, p + ".attn.k.weight", sp.column_parallel(m.kv_heads * d, h));
  add(u, p + ".attn.v.weight", sp.column_parallel(m.kv_heads * d, h));
  add(u, p + ".attn.o.weight", sp.row_parallel(h, m.heads * d));
  if (m.activation == Activation::kSwiglu) {
    add(u, p + ".mlp.gate.weight", sp.column_parallel(m.ffn_hidden, h));
    add(u, p + ".mlp.up.weight", sp.column_parallel(m.ffn_hidden, h));
  } else {
    add(u, p + ".mlp.fc1.weight", sp.column_parallel(m.ffn_hidden, h));
  }
  add(u, p + ".mlp.fc2.weight", sp.row_parallel(h, m.ffn_hidden));
  return u;
}

}  // namespace

int64_t ParamLayout::elements() const {
  int64_t n = 0;
  for (const ParamUnit& u : units) n += u.elements;
  return n;
}

ParamLayout make_param_layout(const Scenario& sc, int stage, int ti, const ChunkPlacement* chunks) {
  const ModelSpec& m = sc.model;
  const StrategySpec& st = sc.strategy;
  const int p = st.pp, v = st.virtual_stages;
  Split sp;
  sp.tp = st.tp;
  sp.ti = ti;
  sp.g = tp2d_coord(sc, ti);
  sp.t = tp3d_coord(sc, ti);
  const int per_chunk = m.layers / (p * v);
  ParamLayout lay;
  for (int c = 0; c < v; ++c) {
    const int vs = c * p + stage;
    if (vs == 0) {
      ParamUnit u;
      u.kind = ParamUnit::Kind::kEmbedding;
      u.chunk = c;
      add(u, "embedding.weight", sp.table(m.vocab, m.hidden));
      u.tied_copy = m.tied_embeddings && p > 1;
      lay.units.push_back(std::move(u));
    }
    for (int l = vs * per_chunk; l < (vs + 1) * per_chunk; ++l) lay.units.push_back(layer_unit(m, l, c, sp));
    if (vs == p * v - 1) {
      ParamUnit u;
      u.kind = ParamUnit::Kind::kHead;
      u.chunk = c;
      add_norm(u, m, "final_norm", sp);
      if (!m.tied_embeddings) add(u, "lm_head.weight", sp.table(m.vocab, m.hidden));
      else if (p > 1) add(u, "embedding.weight", sp.table(m.vocab, m.hidden)), u.tied_copy = true;
      else u.shares_embedding = true;
      lay.units.push_back(std::move(u));
    }
  }
  if (uses_chunks(st)) {
    pack_units_into_chunks(sc, lay, chunks);
    return lay;
  }
  // Buckets in backward order, closing at the bucket size or a chunk boundary.
  const int64_t bucket_elements =
      std::max<int64_t>(1, static_cast<int64_t>(st.bucket_mb * 1048576.0) / dtype_bytes(st.dtype));
  // software.bucket_every_stage false: only the first stage's first model chunk is split into
  // buckets; every other stage and chunk is one bucket (Megatron-Core r0.8's DDP: bucket_size None
  // on a pipeline rank above 0, megatron/core/distributed/distributed_data_parallel.py:66-74 at
  // baf94af3, and disable_bucketing for model chunks after the first, megatron/training/
  // training.py:451-458). Megatron-Core's DDP and distributed optimizer are ZeRO stages 0 and 1;
  // stages 2 and 3 (reduce every micro-batch, gather before use) keep their buckets.
  const bool every = sc.software.bucket_every_stage || st.zero_stage >= 2;
  auto limit = [&](int chunk) {
    return every || (stage == 0 && chunk == 0) ? bucket_elements : std::numeric_limits<int64_t>::max();
  };
  lay.bucket_of_unit.assign(lay.units.size(), -1);
  lay.offset_of_unit.assign(lay.units.size(), 0);
  GradBucket open;
  auto close = [&] {
    if (open.units.empty()) return;
    const int64_t dp = int64_t(st.dp) * st.sp;  // sharded over the data and sequence ranks together
    open.elements = (open.elements + dp - 1) / dp * dp;
    open.shard_elements = open.elements / dp;
    lay.buckets.push_back(std::move(open));
    open = GradBucket{};
  };
  for (int i = static_cast<int>(lay.units.size()) - 1; i >= 0; --i) {
    const ParamUnit& u = lay.units[i];
    if (!open.units.empty() && (open.chunk != u.chunk || u.tied_copy)) close();
    if (open.units.empty()) open.chunk = u.chunk;
    open.deferred = open.deferred || u.tied_copy;
    lay.bucket_of_unit[i] = static_cast<int>(lay.buckets.size());
    lay.offset_of_unit[i] = open.elements;
    open.units.push_back(i);
    open.unit_offsets.push_back(open.elements);
    open.elements += u.elements;
    if (open.elements >= limit(u.chunk) || u.tied_copy) close();
  }
  close();
  return lay;
}

}  // namespace tandem
