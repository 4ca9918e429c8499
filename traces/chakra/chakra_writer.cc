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

ChakraProtoMsg::CollectiveCommType comm_type(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return ChakraProtoMsg::ALL_REDUCE;
    case CollectiveOp::kAllGather: return ChakraProtoMsg::ALL_GATHER;
    case CollectiveOp::kReduceScatter: return ChakraProtoMsg::REDUCE_SCATTER;
    case CollectiveOp::kAllToAll: return ChakraProtoMsg::ALL_TO_ALL;
    case CollectiveOp::kBroadcast: return ChakraProtoMsg::BROADCAST;
    case CollectiveOp::kReduce: return ChakraProtoMsg::REDUCE;
  }
  throw Error("chakra: unknown collective op " + std::to_string(int(op)));
}

void compute_node(Node& n, double flops, double bytes, bool cpu) {
  n.set_type(ChakraProtoMsg::COMP_NODE);
  attr(n, "is_cpu_op")->set_bool_val(cpu);
  attr(n, "num_ops")->set_int64_val(int64_t(std::llround(flops)));
  attr(n, "tensor_size")->set_uint64_val(uint64_t(std::llround(std::max(0.0, bytes))));
}

// Fills `n` for task `t`; false for the tasks that become no node.
bool fill(Node& n, const Schedule& s, const Program& p, const Task& t) {
  if (const auto* c = std::get_if<Compute>(&t.op)) {
    compute_node(n, c->matmul_flops(), c->bytes_moved(), t.stream == Stream::kHost);
  } else if (const auto* c = std::get_if<Collective>(&t.op)) {
    n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
    attr(n, "is_cpu_op")->set_bool_val(false);
    attr(n, "comm_type")->set_int64_val(comm_type(c->op));
    attr(n, "comm_size")->set_int64_val(c->bytes);
    attr(n, "pg_name")->set_string_val(std::to_string(c->group));
    if (c->op == CollectiveOp::kBroadcast || c->op == CollectiveOp::kReduce)
      attr(n, "comm_root")->set_int32_val(c->root);
  } else if (const auto* r = std::get_if<SendRecv>(&t.op)) {
    n.set_type(r->is_send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
    attr(n, "is_cpu_op")->set_bool_val(false);
    attr(n, "comm_src")->set_int32_val(r->is_send ? p.rank : r->peer);
    attr(n, "comm_dst")->set_int32_val(r->is_send ? r->peer : p.rank);
    attr(n, "comm_tag")->set_int32_val(r->tag);
    attr(n, "comm_size")->set_int64_val(r->bytes);
  } else if (const auto* c = std::get_if<Copy>(&t.op)) {
    if (c->direction == CopyDirection::kD2D) {
      compute_node(n, 0, 2.0 * double(c->bytes), false);
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
  return true;
}

void put(google::protobuf::io::ZeroCopyOutputStream& out, const google::protobuf::MessageLite& m) {
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(m, &out))
    throw Error("chakra: cannot serialize a message");
}

}  // namespace

std::string chakra_trace(const Schedule& s, const Program& p, ChakraExport* counts) {
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
      if (fill(n, s, p, t)) {
        for (uint64_t d : deps) n.add_data_deps(d);
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
    j.key(std::to_string(g.id)).begin_array();
    for (int r : g.ranks) j.integer(r);
    j.end_array();
  }
  j.end_object();
  std::string out = j.take();
  out += '\n';
  return out;
}

ChakraExport write_chakra(const Schedule& s, const std::string& prefix) {
  ChakraExport counts;
  for (int rank = 0; rank < s.world_size(); ++rank) {
    const Program p = s.program(rank);
    write_file_atomic(prefix + "." + std::to_string(rank) + ".et", chakra_trace(s, p, &counts));
    ++counts.files;
  }
  write_file_atomic(prefix + ".comm_groups.json", chakra_comm_groups_json(s));
  return counts;
}

}  // namespace tandem
