// A schedule as MLCommons Chakra execution traces that ASTRA-sim runs: one file
// `<prefix>.<rank>.et` per rank, a stream of varint-length-delimited messages, a GlobalMetadata
// first, then one Node per task of the rank (traces/chakra/et_def.proto, Chakra mainline schema
// 1.0.0), plus `<prefix>.comm_groups.json` mapping each process group id to its ranks
// ({"1": [0, 1], ...}, the communicator-group file ASTRA-sim takes), since collectives name their
// group by id (pg_name).
//
// Conventions, each for a reason in ASTRA-sim (astra-sim/workload/Workload.cc,
// HardwareResource.cc, system/CommunicatorGroup.cc; issue 19):
//  - Group ids are tandem's GroupId + 1, in pg_name and in comm_groups.json: ASTRA-sim asserts an
//    id > 0 and reads pg_name "0" (or none) as the group of all ranks.
//  - Compute nodes (COMP_NODE): num_ops = matmul flops (2mnk, Compute::matmul_flops) for the
//    kernels that have them; element-wise kernels (norms, activations, softmax, dropout, adds,
//    loss, optimizer) and device copies have none, so they carry one op per element read or
//    written (tensor_size / dtype bytes; a copy: one per byte): ASTRA-sim's roofline costs them at tensor_size /
//    memory bandwidth, and never divides 0 by 0. tensor_size = bytes read and written
//    (Compute::bytes_moved; 2 x bytes for a device copy). Both at least 1.
//    duration_micros = the kernel's time in tandem's compute cost model
//    (sim/compute_cost_model.h, the one `tandem sim` uses), rounded to the nearest microsecond
//    and at least 1: ASTRA-sim without its roofline replays compute nodes for that long. The
//    exact time is in the attribute tandem_time_ns (double). With a calibration profile
//    (`export-chakra --calibration`, the one `tandem sim --calibration` takes) the time is the
//    profile's measured time where it holds the kernel's shape (attribute tandem_measured true),
//    the model's elsewhere, exactly as `tandem sim` prices it. is_cpu_op = it runs on the host
//    stream (ASTRA-sim replays those nodes too).
//  - Collectives (COMM_COLL_NODE): comm_type, comm_size (bytes, nccl-tests' size), pg_name.
//    ASTRA-sim simulates all-reduce, all-gather, reduce-scatter and all-to-all; it has no reduce
//    (it throws) and replays broadcast for its duration. So a reduce is written as a
//    REDUCE_SCATTER and a broadcast as an ALL_GATHER of the same bytes (on a ring, the same
//    (n-1)/n x bytes per rank as a pipelined reduce or broadcast moves within a factor n/(n-1)),
//    with the attribute tandem_collective naming the original, and counted in ChakraExport.
//  - Send / Recv: COMM_SEND_NODE / COMM_RECV_NODE, comm_src, comm_dst (global ranks), comm_tag
//    (int32), comm_size (int64).
//  - Copy h2d/d2h: MEM_LOAD_NODE / MEM_STORE_NODE, tensor_size = bytes.
//  - Alloc / Free: no node (Chakra has no allocation node). A task that depended on one depends
//    instead on what that one depended on.
//  - tandem_stream (int64, every node): the task's stream (shared/schedule.h Stream), which
//    Chakra lacks: `tandem sim --chakra` replays an export on the streams it came from.
//  - data_deps = the task's deps and the previous task of its stream (Chakra has no streams: the
//    stream order is a dependency), sorted, without duplicates.
//  - ctrl_deps of a communication node (collective, send, recv) = the rank's previous
//    communication node in program order: ASTRA-sim keeps one communication in flight per rank
//    and issues ready nodes in id order, so without the chain a rank could start a collective
//    while its peer waits for a send that rank has not issued yet (deadlock). Chained, every
//    rank issues its communications in the order the program does, the order the peers match.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "shared/schedule.h"
#include "sim/compute_cost_model.h"

namespace tandem {

inline constexpr const char* kChakraSchemaVersion = "1.0.0";

struct ChakraExport {
  int files = 0;                  // .et files written (one per rank)
  std::array<int64_t, 8> nodes{};  // by ChakraProtoMsg::NodeType value, over all ranks
  int64_t dropped = 0;            // Alloc and Free tasks
  int64_t reduce_as_reduce_scatter = 0;   // reduces written as REDUCE_SCATTER
  int64_t broadcast_as_all_gather = 0;    // broadcasts written as ALL_GATHER
  int64_t measured = 0;           // compute nodes timed from the calibration profile
};

// The compute cost model an export takes its durations from: `tandem sim`'s, for the scenario's
// cluster and flash-attention setting, with `calibration`'s measured times where it has them
// (null: none). The table must outlive the model.
sim::ComputeCostModel chakra_cost_model(const Scenario& scenario, const sim::CalibrationTable* calibration = nullptr);

// The Chakra group id of tandem's process group `g` (ASTRA-sim reserves 0).
inline uint64_t chakra_group_id(GroupId g) { return uint64_t(g) + 1; }

// The bytes of `program`'s .et file (GlobalMetadata then nodes).
// `calibration`: the table `costs` was built with (null: none), to mark and count measured nodes.
std::string chakra_trace(const Schedule& schedule, const Program& program, const sim::ComputeCostModel& costs,
                         ChakraExport* counts = nullptr, const sim::CalibrationTable* calibration = nullptr);

// Writes every rank's file and the groups file, each atomically; generates one rank's program at a
// time. Error naming the path when a file cannot be written.
ChakraExport write_chakra(const Schedule& schedule, const std::string& prefix,
                          const sim::CalibrationTable* calibration = nullptr);

// The text of <prefix>.comm_groups.json.
std::string chakra_comm_groups_json(const Schedule& schedule);

}  // namespace tandem
