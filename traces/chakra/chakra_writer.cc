#include "traces/chakra/chakra_writer.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <cmath>
#include <variant>
#include <vector>

#include "et_def.pb.h"
#include "shared/error.h"
#include "traces/atomic_file.h"
#include "shared/json_writer.h"
#include "traces/scenario_digest.h"
#include "traces/task_label.h"

namespace tandem {
namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;
using ChakraProtoMsg::NodeType;

AttributeProto* attr(Node& n, const char* name) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  return a;
}

// ASTRA-sim's collectives: reduce and broadcast become the ones of the same traffic it simulates
// (chakra_writer.h).
ChakraProtoMsg::CollectiveCommType comm_type(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return ChakraProtoMsg::ALL_REDUCE;
    case CollectiveOp::kAllGather: return ChakraProtoMsg::ALL_GATHER;
    case CollectiveOp::kReduceScatter: return ChakraProtoMsg::REDUCE_SCATTER;
    case CollectiveOp::kAllToAll: return ChakraProtoMsg::ALL_TO_ALL;
    case CollectiveOp::kBroadcast: return ChakraProtoMsg::ALL_GATHER;
    case CollectiveOp::kReduce: return ChakraProtoMsg::REDUCE_SCATTER;
  }
  throw Error("chakra: unknown collective op " + std::to_string(int(op)), ErrorKind::kInternal);
}

// Microseconds, to the nearest, at least 1 (ASTRA-sim replays a 0 as 1 ns).
uint64_t micros(double seconds) { return uint64_t(std::max<long long>(1, std::llround(seconds * 1e6))); }

void compute_node(Node& n, double ops, double bytes, int dtype_size, bool cpu, double seconds) {
  n.set_type(ChakraProtoMsg::COMP_NODE);
  const double tensor = std::max(1.0, std::round(bytes));
  // Element-wise kernels: one op per element read or written (chakra_writer.h).
  if (ops <= 0) ops = tensor / std::max(1, dtype_size);
  attr(n, "is_cpu_op")->set_bool_val(cpu);
  attr(n, "num_ops")->set_int64_val(std::max<int64_t>(1, std::llround(ops)));
  attr(n, "tensor_size")->set_uint64_val(uint64_t(tensor));
  attr(n, "tandem_time_ns")->set_double_val(seconds * 1e9);
  n.set_duration_micros(micros(seconds));
}

bool is_comm(const Task& t) {
  return std::holds_alternative<Collective>(t.op) || std::holds_alternative<SendRecv>(t.op);
}

// Fills `n` for task `t`; false for the tasks that become no node.
bool fill(Node& n, const Schedule& s, const Program& p, const Task& t, const sim::ComputeCostModel& costs,
          ChakraExport* counts, const sim::CalibrationTable* calibration) {
  if (const auto* c = std::get_if<Compute>(&t.op)) {
    const bool host = t.stream == Stream::kHost;
    const double seconds = costs.time_s(*c, host) + costs.gap_s(*c);  // a host profile's time before the kernel too
    if (!std::isfinite(seconds) || seconds < 0)
      throw Error("chakra: rank " + std::to_string(p.rank) + " task " + std::to_string(t.id) + " (" + task_label(s, p, t) +
                  "): the compute cost model gives no time (" + std::to_string(seconds) + " s) on cluster '" +
                  s.scenario().cluster.gpu_name + "': its GPU peak or memory bandwidth is missing");
    compute_node(n, c->matmul_flops(), c->bytes_moved(), dtype_bytes(c->dtype), host, seconds);
    if (calibration) {
      const bool measured = calibration->find(*c) >= 0;
      attr(n, "tandem_measured")->set_bool_val(measured);
      if (measured && counts) ++counts->measured;
    }
  } else if (const auto* c = std::get_if<Collective>(&t.op)) {
    if (c->group == kNoId)
      throw Error("chakra: rank " + std::to_string(p.rank) + " task " + std::to_string(t.id) +
                  ": a collective without a group", ErrorKind::kInternal);
    n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
    attr(n, "is_cpu_op")->set_bool_val(false);
    attr(n, "comm_type")->set_int64_val(comm_type(c->op));
    attr(n, "comm_size")->set_int64_val(c->bytes);
    attr(n, "pg_name")->set_string_val(std::to_string(chakra_group_id(c->group)));
    if (c->op == CollectiveOp::kBroadcast || c->op == CollectiveOp::kReduce) {
      attr(n, "tandem_collective")->set_string_val(to_string(c->op));
      attr(n, "comm_root")->set_int32_val(c->root);
      if (counts) ++(c->op == CollectiveOp::kReduce ? counts->reduce_as_reduce_scatter : counts->broadcast_as_all_gather);
    }
  } else if (const auto* r = std::get_if<SendRecv>(&t.op)) {
    n.set_type(r->is_send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
    attr(n, "is_cpu_op")->set_bool_val(false);
    attr(n, "comm_src")->set_int32_val(r->is_send ? p.rank : r->peer);
    attr(n, "comm_dst")->set_int32_val(r->is_send ? r->peer : p.rank);
    attr(n, "comm_tag")->set_int32_val(r->tag);
    attr(n, "comm_size")->set_int64_val(r->bytes);
  } else if (const auto* c = std::get_if<Copy>(&t.op)) {
    if (c->direction == CopyDirection::kD2D) {
      const double bytes = 2.0 * double(c->bytes);  // read and written
      compute_node(n, bytes, bytes, 1, false, costs.d2d_copy_s(c->bytes));
    } else {
      n.set_type(c->direction == CopyDirection::kH2D ? ChakraProtoMsg::MEM_LOAD_NODE : ChakraProtoMsg::MEM_STORE_NODE);
      attr(n, "is_cpu_op")->set_bool_val(false);
      attr(n, "tensor_size")->set_uint64_val(uint64_t(c->bytes));
    }
  } else {
    return false;  // Alloc, Free
  }
  n.set_id(t.id);
  n.set_name(task_label(s, p, t));
  attr(n, "tandem_stream")->set_int64_val(int64_t(t.stream));  // for tandem sim --chakra (chakra_reader.h)
  return true;
}

void put(google::protobuf::io::ZeroCopyOutputStream& out, const google::protobuf::MessageLite& m) {
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(m, &out))
    throw Error("chakra: cannot serialize a message");
}

}  // namespace

sim::ComputeCostModel chakra_cost_model(const Scenario& scenario, const sim::CalibrationTable* calibration) {
  return sim::ComputeCostModel(scenario.cluster, sim::KernelEfficiency{}, scenario.strategy.flash_attention, calibration);
}

std::string chakra_trace(const Schedule& s, const Program& p, const sim::ComputeCostModel& costs, ChakraExport* counts,
                         const sim::CalibrationTable* calibration) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream out(&bytes);
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version(kChakraSchemaVersion);
    auto meta_attr = [&](const char* name) {
      AttributeProto* a = meta.add_attr();
      a->set_name(name);
      return a;
    };
    meta_attr("producer")->set_string_val("tandem");
    meta_attr("scenario")->set_string_val(s.scenario().name);
    meta_attr("scenario_digest")->set_string_val(scenario_digest(s.scenario()));
    meta_attr("rank")->set_int64_val(p.rank);
    meta_attr("world_size")->set_int64_val(s.world_size());
    put(out, meta);

    // resolved[t]: the node ids a dependency on task t stands for: t itself when t has a node,
    // else what t depended on (Alloc/Free become no node).
    std::vector<std::vector<uint64_t>> resolved(p.tasks.size());
    std::vector<TaskId> last_of_stream(kStreamCount, kNoId);
    int64_t last_comm = -1;  // the previous communication node, for the ctrl_deps chain
    Node n;
    for (const Task& t : p.tasks) {
      if (t.id >= p.tasks.size() || &p.tasks[t.id] != &t)
        throw Error("chakra: rank " + std::to_string(p.rank) + ": task ids are not program indices");
      std::vector<uint64_t> deps;
      auto depend = [&](TaskId d) {
        if (d >= t.id) throw Error("chakra: rank " + std::to_string(p.rank) + " task " + std::to_string(t.id) +
                                   " depends on a later task " + std::to_string(d));
        deps.insert(deps.end(), resolved[d].begin(), resolved[d].end());
      };
      for (TaskId d : t.deps) depend(d);
      TaskId& prev = last_of_stream[size_t(t.stream)];
      if (prev != kNoId) depend(prev);
      prev = t.id;
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());

      n.Clear();
      if (fill(n, s, p, t, costs, counts, calibration)) {
        for (uint64_t d : deps) n.add_data_deps(d);
        if (is_comm(t)) {
          if (last_comm >= 0) n.add_ctrl_deps(uint64_t(last_comm));
          last_comm = int64_t(t.id);
        }
        put(out, n);
        resolved[t.id] = {t.id};
        if (counts) ++counts->nodes[size_t(n.type())];
      } else {
        resolved[t.id] = std::move(deps);
        if (counts) ++counts->dropped;
      }
    }
  }
  return bytes;
}

std::string chakra_comm_groups_json(const Schedule& s) {
  JsonWriter j;
  j.begin_object();
  for (const ProcessGroup& g : s.groups()) {
    j.key(std::to_string(chakra_group_id(g.id))).begin_array();
    for (int r : g.ranks) j.integer(r);
    j.end_array();
  }
  j.end_object();
  std::string out = j.take();
  out += '\n';
  return out;
}

ChakraExport write_chakra(const Schedule& s, const std::string& prefix, const sim::CalibrationTable* calibration) {
  ChakraExport counts;
  const sim::ComputeCostModel costs = chakra_cost_model(s.scenario(), calibration);
  for (int rank = 0; rank < s.world_size(); ++rank) {
    const Program p = s.program(rank);
    write_file_atomic(prefix + "." + std::to_string(rank) + ".et", chakra_trace(s, p, costs, &counts, calibration));
    ++counts.files;
  }
  write_file_atomic(prefix + ".comm_groups.json", chakra_comm_groups_json(s));
  return counts;
}

}  // namespace tandem
