#include "shared/chunk_layout.h"

#include <cmath>

#include "shared/chunk_plan.h"

namespace tandem {

bool uses_chunks(const StrategySpec& s) { return s.offload == Offload::kParams || s.offload == Offload::kAuto; }

void pack_units_into_chunks(const Scenario& sc, ParamLayout& lay, const ChunkPlacement* placement) {
  const StrategySpec& st = sc.strategy;
  const int dp = st.dp * st.sp;  // sharded over the data and sequence ranks together
  std::vector<int64_t> sizes;
  for (const ParamUnit& u : lay.units) sizes.push_back(u.elements);
  ChunkSearchOptions o;
  o.search_range = std::llround(st.chunk_search_range_m * 1048576.0);
  o.min_chunk = std::llround(st.chunk_min_m * 1048576.0);
  o.interval = sc.model.hidden;
  o.dp = dp;
  const ChunkSearch found = search_chunk_size(sizes, o);
  const std::vector<PackedChunk> chunks = pack_chunks(sizes, found.chunk_elements, dp);
  std::vector<int64_t> bytes;
  for (const PackedChunk& c : chunks) bytes.push_back(c.capacity * dtype_bytes(st.dtype));
  std::vector<bool> host(chunks.size(), false);
  if (st.offload == Offload::kParams && !found.keep_gathered) host = tandem::host_chunks(bytes, st.offload_fraction);
  std::vector<bool> device_optimizer(chunks.size(), false);
  if (st.offload == Offload::kAuto && placement) {
    for (size_t c = 0; c < host.size() && c < placement->host.size(); ++c) host[c] = placement->host[c];
    for (size_t c = 0; c < host.size() && c < placement->device_optimizer.size(); ++c)
      device_optimizer[c] = placement->device_optimizer[c];
  }

  lay.buckets.clear();
  lay.bucket_of_unit.assign(lay.units.size(), -1);
  lay.offset_of_unit.assign(lay.units.size(), 0);
  lay.chunk_elements = found.chunk_elements;
  lay.chunk_wasted_elements = 0;
  for (size_t c = chunks.size(); c-- > 0;) {
    const PackedChunk& pc = chunks[c];
    GradBucket b;
    b.elements = pc.capacity;
    b.shard_elements = pc.capacity / dp;
    b.on_host = host[c];
    b.host_optimizer = st.offload == Offload::kAuto && !found.keep_gathered && !device_optimizer[c];
    int64_t off = 0;
    for (int m : pc.members) lay.offset_of_unit[m] = off, off += sizes[m];
    for (size_t i = pc.members.size(); i-- > 0;) {
      const int m = pc.members[i];
      b.units.push_back(m);
      b.unit_offsets.push_back(lay.offset_of_unit[m]);
      lay.bucket_of_unit[m] = int(lay.buckets.size());
    }
    lay.chunk_wasted_elements += pc.capacity - pc.used;
    lay.buckets.push_back(std::move(b));
  }
}

}  // namespace tandem
