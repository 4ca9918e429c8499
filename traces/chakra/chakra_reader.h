// Chakra execution traces as a tandem Schedule, for `tandem sim SCENARIO --chakra PREFIX`: a
// workload from ASTRA-sim's examples, from traces collected with PyTorch and converted by Chakra,
// or from `tandem export-chakra`, replayed on the scenario's cluster by the SimGrid backend.
//
// Files: PREFIX.<rank>.et for rank 0, 1, ... up to the first that does not exist (the world size),
// and PREFIX.comm_groups.json ({"group id": [ranks]}, ASTRA-sim's communicator-group file) when
// present. Each .et file is what traces/chakra/chakra_writer.h writes: a GlobalMetadata, then
// varint-length-delimited Nodes (schema traces/chakra/et_def.proto).
//
// What each node becomes (one task per node; tandem's task ids are the nodes' topological order,
// file order among ready nodes):
//  - COMP_NODE: an opaque kernel (Kernel::kOpaque) whose time is the node's attribute
//    tandem_time_ns when present (tandem's own exports: exact) unless ChakraImportOptions says to
//    replay duration_micros as ASTRA-sim does, else duration_micros, else (0) priced from num_ops
//    and tensor_size on the cluster the way ASTRA-sim's roofline does.
//    is_cpu_op: on the host stream.
//  - COMM_COLL_NODE: a collective of comm_size bytes over the group pg_name names (comm_groups.json;
//    "" or "0": all ranks, ASTRA-sim's convention). ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER,
//    ALL_TO_ALL, BROADCAST and REDUCE (root comm_root); tandem's exports write reduce and broadcast
//    as REDUCE_SCATTER / ALL_GATHER with attribute tandem_collective naming the original, which is
//    what is replayed.
//  - COMM_SEND_NODE / COMM_RECV_NODE: a message of comm_size bytes to comm_dst / from comm_src,
//    tag comm_tag.
//  - MEM_LOAD_NODE / MEM_STORE_NODE: a host-to-device / device-to-host copy of tensor_size bytes.
//  - Anything else (METADATA_NODE, INVALID_NODE, GATHER, SCATTER, REDUCE_SCATTER_BLOCK, BARRIER):
//    no task, counted by kind in ChakraImport::skipped; a node that depended on it depends
//    instead on what it depended on.
// Dependencies: data_deps and ctrl_deps alike, but for files tandem wrote (GlobalMetadata
// producer "tandem"), whose ctrl_deps only chain the rank's communication for ASTRA-sim.
// Messages: tandem's are rendezvous (a send ends when its receive is posted and the data has
// moved), ASTRA-sim's sends are eager: a trace that relies on eager sends can deadlock here. Streams: Chakra has none; the attribute
// tandem_stream (tandem's exports) restores the original stream, else compute nodes run on the
// compute stream, collectives one after another on the communication stream, sends and receives on
// their own streams, copies on theirs (tandem's streams are in-order queues, shared/schedule.h).
// Memory: Chakra has no allocations, so an imported workload's peak memory is 0.
//
// Errors (bad input) name the file, the node id and the field: a missing rank 0 file, a cut or
// malformed node, duplicate ids, a dependency on an id the file lacks, a dependency cycle, a peer
// or group member outside the world, a pg_name comm_groups.json lacks, a bad comm_groups.json.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "shared/schedule.h"

namespace tandem {

struct ChakraImport {
  int ranks = 0;
  int64_t nodes = 0;               // read, over all ranks
  int64_t tasks = 0;               // became tasks
  int64_t timed = 0;               // compute nodes with their own time (tandem_time_ns or duration_micros)
  int64_t priced = 0;              // compute nodes priced from num_ops and tensor_size
  std::map<std::string, int64_t> skipped;  // node kind -> count, for the nodes that became no task
};

// How compute nodes are timed.
enum class ChakraDurations {
  kExact,   // tandem_time_ns where a node has it (tandem's exports), else duration_micros
  kMicros,  // duration_micros only, whole microseconds as ASTRA-sim replays them (1 us at least on
            // tandem's exports): the like-for-like figure beside an ASTRA-sim run of the same files
};

struct ChakraImportOptions {
  ChakraDurations durations = ChakraDurations::kExact;
};

// The schedule of the trace set PREFIX on `scenario`'s cluster (its GPU, node shape and network;
// as many GPUs as the traces have ranks). The scenario's model and strategy do not apply: its
// name becomes "chakra PREFIX" and its global batch 0 (no tokens: tokens/s and MFU are not known).
// Every file is read and checked once here (report filled); programs are converted again, one rank
// at a time, when the simulator asks for them.
Schedule import_chakra(Scenario scenario, const std::string& prefix, ChakraImport* report = nullptr,
                       const ChakraImportOptions& options = {});

// "exact" or "micros" (the --chakra-durations spelling); bad input otherwise.
ChakraDurations parse_chakra_durations(const std::string& text, const std::string& where);

}  // namespace tandem
