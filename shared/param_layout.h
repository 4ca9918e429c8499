// Which parameters one rank holds and how they are laid out in memory.
//
// A rank holds, for each of its model chunks (virtual stages c*p + stage), the layers of that
// chunk, plus the word embedding on the first virtual stage and the final norm and output head on
// the last one. Tensors are stored [out_features, in_features]; 1D tensor parallelism (Megatron)
// splits Q, K, V, fc1 (gate and up for SwiGLU) and the vocabulary by rows, o and fc2 by columns,
// and replicates the norms; 2D tensor parallelism gives rank (i, j) of its q x q grid one q x q
// block of every weight and table and its feature block of the norms (shared/tp2d_groups.h).
// With tied embeddings the head reuses the embedding table; across
// pipeline stages the last stage keeps a copy of it, kept equal by an all-reduce of the gradients.
// No linear layer has a bias (as in PaLM and Llama).
//
// Parameters are grouped into gradient buckets (Megatron's contiguous grad buffer): units are
// taken in backward order and a bucket closes once it reaches the bucket size or at a chunk
// boundary. Each bucket is padded to a multiple of the data-parallel degree so ZeRO can shard it
// evenly; shard r holds elements [r*shard, (r+1)*shard). A unit holding a tied table of a
// pipelined model gets a bucket of its own.
#pragma once

#include <string>
#include <vector>

#include "shared/scenario.h"
#include "shared/schedule.h"

namespace tandem {

struct ParamTensor {
  std::string name;  // global tensor name
  int64_t rows = 0, cols = 0;  // local shape
  GlobalSlice slice;
  int64_t elements() const { return rows * cols; }
};

struct ParamUnit {
  enum class Kind { kEmbedding, kLayer, kHead } kind = Kind::kLayer;
  int layer = -1;
  int chunk = 0;
  std::vector<ParamTensor> tensors;  // norms first
  int64_t norm_elements = 0;         // leading elements replicated across tensor-parallel ranks
  int64_t elements = 0;
  bool shares_embedding = false;     // head of a pp == 1 tied model: uses the embedding unit's table
  bool tied_copy = false;            // holds one of the two tied tables of a pipelined model
};

struct GradBucket {
  std::vector<int> units;             // indices into ParamLayout::units, backward order
  std::vector<int64_t> unit_offsets;  // element offset of each unit in the bucket
  int64_t elements = 0;               // padded to a multiple of dp
  int64_t shard_elements = 0;
  int chunk = 0;
  // Holds a tied table of a pipelined model: its gradients wait for the end of the pipeline,
  // where the first and last stage all-reduce them (an earlier all-reduce would wait on a stage
  // that is still waiting on this one).
  bool deferred = false;
  bool on_host = false;  // a Gemini chunk whose parameters and optimizer states live on the host
  // offload auto: the chunk's optimizer states (fp32 master, Adam m and v) live on the host and
  // Adam runs there, while its parameters may stay on the device (shared/chunk_layout.h).
  bool host_optimizer = false;
};

struct ParamLayout {
  std::vector<ParamUnit> units;  // forward order
  std::vector<GradBucket> buckets;  // backward order
  std::vector<int> bucket_of_unit;
  std::vector<int64_t> offset_of_unit;  // element offset within its bucket
  // Gemini chunks (shared/chunk_layout.h): the searched chunk size and the padding of all chunks.
  int64_t chunk_elements = 0, chunk_wasted_elements = 0;
  int64_t elements() const;             // unpadded, this rank
};

// offload auto's placement of the Gemini chunks, each vector in execution order (chunks past its
// end: false; shared/auto_placement.h).
struct ChunkPlacement {
  std::vector<bool> host;  // starts the iteration on the host (GradBucket::on_host)
  // strategy.gpu_margin_mem_ratio: the optimizer states live on the device and Adam runs there
  // (GradBucket::host_optimizer false), as GeminiOptimizer._maybe_move_fp32_params moves them.
  std::vector<bool> device_optimizer;
};

// chunks (offload auto): where the chunks are.
ParamLayout make_param_layout(const Scenario& scenario, int stage, int tp_index,
                              const ChunkPlacement* chunks = nullptr);

}  // namespace tandem
