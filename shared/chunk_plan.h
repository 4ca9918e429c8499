// Gemini's chunks (Colossal-AI, colossalai/zero/gemini/chunk/, commit 4f9953be335e): parameters
// taken in execution order are packed into chunks of one size, the size searched to waste the
// fewest elements; each chunk is sharded over the data-parallel group (ZeRO-3) and is the unit that
// moves between the device and the host (shared/offload_plan.h).
//
// As in search_utils.py (search_chunk_configuration, _get_unused_byte, _filter_exlarge_params) and
// manager.py (register_tensor): sizes over mean + 3 sigma are left out of the search; the search
// starts at the largest remaining size (at least the minimum chunk) rounded up to the interval and
// tries every interval step over the range; the chosen size is rounded up to a multiple of the
// data-parallel degree. Packing is next-fit: a size that does not fit what is left of the open
// chunk closes it; a size above the chunk size gets a chunk of its own, its size rounded up to dp.
// A total under the minimum chunk is one chunk kept gathered (Gemini's keep_gathered).
//
// tandem packs whole parameter units (a transformer layer, the embedding, the head: shared/
// param_layout.h) rather than single tensors: its kernels read a unit's tensors as views of one
// buffer. The search and the waste are Gemini's, over those sizes.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem {

// _get_unused_byte: elements left empty when `sizes` are packed next-fit into chunks of
// `chunk_elements` (the open chunk's unused tail counts too).
int64_t chunk_unused_elements(const std::vector<int64_t>& sizes, int64_t chunk_elements);

// _filter_exlarge_params: sizes <= mean + 3 * population standard deviation, order kept.
std::vector<int64_t> without_extra_large(const std::vector<int64_t>& sizes);

struct ChunkSearchOptions {
  int64_t search_range = int64_t{32} << 20;  // elements (GeminiPlugin search_range_m = 32)
  int64_t interval = 1024;                   // elements (the hidden size when known)
  int64_t min_chunk = int64_t{32} << 20;     // elements (GeminiPlugin min_chunk_size_m = 32)
  bool filter_extra_large = true;
  int dp = 1;  // chunk sizes are rounded up to a multiple of it
};

struct ChunkSearch {
  int64_t chunk_elements = 0;
  int64_t wasted_elements = 0;  // of the filtered sizes at the chosen size (before rounding to dp)
  bool keep_gathered = false;   // the whole model is under the minimum chunk: one chunk
};

ChunkSearch search_chunk_size(const std::vector<int64_t>& sizes, const ChunkSearchOptions& options);

struct PackedChunk {
  std::vector<int> members;  // indices into the sizes, in order
  int64_t capacity = 0;      // elements, a multiple of dp
  int64_t used = 0;
};

// Next-fit packing of every size (none filtered) into chunks of `chunk_elements`.
std::vector<PackedChunk> pack_chunks(const std::vector<int64_t>& sizes, int64_t chunk_elements, int dp);

// Gemini's static policy (placement_policy.py, StaticPlacementPolicy.setup_grads_device): walking
// the chunks in order, a chunk goes to the host while the bytes already sent there are under
// fraction * total. Returns one flag per chunk.
std::vector<bool> host_chunks(const std::vector<int64_t>& chunk_bytes, double fraction);

}  // namespace tandem
