// A schedule as MLCommons Chakra execution traces (ASTRA-sim's input): one file
// `<prefix>.<rank>.et` per rank, a stream of varint-length-delimited messages, a GlobalMetadata
// first, then one Node per task of the rank (traces/chakra/et_def.proto), plus
// `<prefix>.comm_groups.json` mapping each process group id to its ranks ({"3": [0, 1], ...}, the
// communicator-group file ASTRA-sim takes), since collectives name their group by id (pg_name).
//
// Nodes (id = the task id; name = its label, traces/task_label.h):
//   Compute        COMP_NODE       num_ops (int64) = matmul flops, tensor_size (uint64) = bytes
//                                  moved, is_cpu_op = it runs on the host stream
//   Collective     COMM_COLL_NODE  comm_type (int64) = CollectiveCommType, comm_size (int64) =
//                                  bytes, pg_name = the group id, comm_root (int32) for broadcast
//                                  and reduce (the root's index in the group)
//   Send / Recv    COMM_SEND_NODE / COMM_RECV_NODE  comm_src, comm_dst (global ranks), comm_tag
//                                  (int32), comm_size (int64)
//   Copy h2d/d2h   MEM_LOAD_NODE / MEM_STORE_NODE   tensor_size = bytes
//   Copy d2d       COMP_NODE       num_ops 0, tensor_size = 2 x bytes (read and written)
//   Alloc / Free   no node: Chakra has no allocation node (MEM_LOAD/STORE are transfers). A
//                  task that depended on one depends instead on what that one depended on.
// data_deps = the task's deps and the previous task of its stream (Chakra has no streams: the
// stream order is a dependency), sorted, without duplicates; ctrl_deps stay empty (Chakra's
// converters keep them for the parent/child links of host operators). No times: a schedule has
// none (start_time_micros and duration_micros are 0); ASTRA-sim costs nodes from their attributes.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "shared/schedule.h"

namespace tandem {

inline constexpr const char* kChakraSchemaVersion = "0.0.4";

struct ChakraExport {
  int files = 0;                   // .et files written (one per rank)
  std::array<int64_t, 11> nodes{};  // by ChakraProtoMsg::NodeType value, over all ranks
  int64_t dropped = 0;             // Alloc and Free tasks
};

// The bytes of `program`'s .et file (GlobalMetadata then nodes).
std::string chakra_trace(const Schedule& schedule, const Program& program, ChakraExport* counts = nullptr);

// Writes every rank's file and the groups file, each atomically; generates one rank's program at a
// time. Error naming the path when a file cannot be written.
ChakraExport write_chakra(const Schedule& schedule, const std::string& prefix);

// The text of <prefix>.comm_groups.json.
std::string chakra_comm_groups_json(const Schedule& schedule);

}  // namespace tandem
