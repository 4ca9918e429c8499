#include "traces/chakra/chakra_reader.h"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "et_def.pb.h"
#include "shared/error.h"
#include "shared/input_file.h"

namespace tandem {
namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

std::string et_path(const std::string& prefix, int rank) { return prefix + "." + std::to_string(rank) + ".et"; }

Error bad(const std::string& what) { return Error(what, ErrorKind::kBadInput); }

struct EtFile {
  bool from_tandem = false;  // GlobalMetadata attribute producer = "tandem"
  std::vector<Node> nodes;
};

EtFile read_et(const std::string& path) {
  InputFile file(path, "Chakra trace", kMaxTraceBytes);
  google::protobuf::io::FileInputStream in(file.fd());
  ChakraProtoMsg::GlobalMetadata meta;
  bool eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&meta, &in, &eof))
    throw bad(path + ": no GlobalMetadata at the start: not a Chakra execution trace");
  EtFile f;
  for (const AttributeProto& a : meta.attr())
    if (a.name() == "producer" && a.string_val() == "tandem") f.from_tandem = true;
  std::vector<Node>& nodes = f.nodes;
  for (;;) {
    Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &in, &eof)) {
      if (eof) break;
      throw bad(path + ": node #" + std::to_string(nodes.size()) +
                (nodes.empty() ? "" : " (after node id " + std::to_string(nodes.back().id()) + ")") +
                " is cut or malformed");
    }
    nodes.push_back(std::move(n));
  }
  return f;
}

const AttributeProto* find_attr(const Node& n, const char* name) {
  for (const AttributeProto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

// An integer attribute in whichever integer field its producer used; `fallback` when absent.
int64_t int_attr(const std::string& where, const Node& n, const char* name, std::optional<int64_t> fallback = {}) {
  const AttributeProto* a = find_attr(n, name);
  if (a) switch (a->value_case()) {
      case AttributeProto::kInt32Val: return a->int32_val();
      case AttributeProto::kInt64Val: return a->int64_val();
      case AttributeProto::kUint64Val: return int64_t(std::min<uint64_t>(a->uint64_val(), uint64_t(INT64_MAX)));
      case AttributeProto::kBoolVal: return a->bool_val() ? 1 : 0;
      default: break;
    }
  if (fallback) return *fallback;
  throw bad(where + ": attribute " + name + (a ? " is not an integer" : " is missing"));
}

std::string node_kind(const Node& n) {
  std::string k = ChakraProtoMsg::NodeType_Name(n.type());
  if (k.empty()) k = "node type " + std::to_string(int(n.type()));
  if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
    const AttributeProto* a = find_attr(n, "comm_type");
    const int64_t t = a && a->value_case() == AttributeProto::kInt64Val ? a->int64_val() : -1;
    const std::string name = ChakraProtoMsg::CollectiveCommType_IsValid(int(t))
                                 ? ChakraProtoMsg::CollectiveCommType_Name(ChakraProtoMsg::CollectiveCommType(t))
                                 : "comm_type " + std::to_string(t);
    k += " " + name;
  }
  return k;
}

// The collective a COMM_COLL_NODE replays, or none for the ones tandem has no model of.
std::optional<CollectiveOp> collective_op(const Node& n, const std::string& where) {
  if (const AttributeProto* a = find_attr(n, "tandem_collective")) {
    if (a->string_val() == "reduce") return CollectiveOp::kReduce;
    if (a->string_val() == "broadcast") return CollectiveOp::kBroadcast;
    throw bad(where + ": attribute tandem_collective: expected reduce or broadcast, got '" + a->string_val() + "'");
  }
  switch (int_attr(where, n, "comm_type")) {
    case ChakraProtoMsg::ALL_REDUCE: return CollectiveOp::kAllReduce;
    case ChakraProtoMsg::REDUCE: return CollectiveOp::kReduce;
    case ChakraProtoMsg::ALL_GATHER: return CollectiveOp::kAllGather;
    case ChakraProtoMsg::BROADCAST: return CollectiveOp::kBroadcast;
    case ChakraProtoMsg::ALL_TO_ALL: return CollectiveOp::kAllToAll;
    case ChakraProtoMsg::REDUCE_SCATTER: return CollectiveOp::kReduceScatter;
    default: return std::nullopt;
  }
}

bool supported(const Node& n, const std::string& where) {
  switch (n.type()) {
    case ChakraProtoMsg::COMP_NODE:
    case ChakraProtoMsg::COMM_SEND_NODE:
    case ChakraProtoMsg::COMM_RECV_NODE:
    case ChakraProtoMsg::MEM_LOAD_NODE:
    case ChakraProtoMsg::MEM_STORE_NODE: return true;
    case ChakraProtoMsg::COMM_COLL_NODE: return collective_op(n, where).has_value();
    default: return false;
  }
}

Stream default_stream(const Node& n, bool on_host) {
  switch (n.type()) {
    case ChakraProtoMsg::COMM_COLL_NODE: return Stream::kComm;
    case ChakraProtoMsg::COMM_SEND_NODE: return Stream::kSendFwd;
    case ChakraProtoMsg::COMM_RECV_NODE: return Stream::kRecvFwd;
    case ChakraProtoMsg::MEM_LOAD_NODE: return Stream::kH2D;
    case ChakraProtoMsg::MEM_STORE_NODE: return Stream::kD2H;
    default: return on_host ? Stream::kHost : Stream::kCompute;
  }
}

// The groups of comm_groups.json (ids in key order) and the all-ranks group last; `by_name`: the
// pg_name each one answers to ("" and "0" the all-ranks group unless the file names a group "0").
std::vector<ProcessGroup> read_groups(const std::string& prefix, int world, std::map<std::string, GroupId>& by_name) {
  std::vector<ProcessGroup> groups;
  const std::string path = prefix + ".comm_groups.json";
  std::vector<std::pair<int64_t, std::string>> keys;
  if (std::filesystem::exists(path)) {
    std::istringstream text(read_input_file(path, "Chakra communicator groups", kMaxScenarioBytes));
    boost::property_tree::ptree tree;
    try {
      boost::property_tree::read_json(text, tree);
    } catch (const boost::property_tree::json_parser_error& e) {
      throw bad(path + ":" + std::to_string(e.line()) + ": " + e.message());
    }
    std::map<int64_t, std::vector<int>> parsed;
    for (const auto& [key, members] : tree) {
      char* end = nullptr;
      const long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0)
        throw bad(path + ": group id '" + key + "': expected a non-negative integer");
      std::vector<int>& ranks = parsed[id];
      if (!ranks.empty()) throw bad(path + ": group " + key + " is listed twice");
      for (const auto& [unused, r] : members) {
        const auto v = r.get_value_optional<int>();
        if (!v || *v < 0 || *v >= world)
          throw bad(path + ": group " + key + ": rank '" + r.data() + "' is not one of the " + std::to_string(world) +
                    " ranks the traces have");
        if (std::find(ranks.begin(), ranks.end(), *v) != ranks.end())
          throw bad(path + ": group " + key + " lists rank " + std::to_string(*v) + " twice");
        ranks.push_back(*v);
      }
      if (ranks.empty()) throw bad(path + ": group " + key + " has no ranks");
    }
    for (auto& [id, ranks] : parsed) {
      by_name[std::to_string(id)] = GroupId(groups.size());
      groups.push_back(ProcessGroup{GroupId(groups.size()), GroupKind::kDp, 0, std::move(ranks)});
    }
  }
  ProcessGroup all{GroupId(groups.size()), GroupKind::kDp, 0, {}};
  for (int r = 0; r < world; ++r) all.ranks.push_back(r);
  by_name.emplace("", all.id);
  by_name.emplace("0", all.id);
  groups.push_back(std::move(all));
  return groups;
}

struct Converter {
  std::string prefix;
  int world = 0;
  DType dtype = DType::kBf16;
  ChakraDurations durations = ChakraDurations::kExact;
  std::map<std::string, GroupId> group_by_name;
  std::vector<ProcessGroup> groups;

  Program convert(int rank, ChakraImport* report) const {
    const std::string path = et_path(prefix, rank);
    const EtFile file = read_et(path);
    const std::vector<Node>& nodes = file.nodes;
    auto where = [&](const Node& n) { return path + ": node " + std::to_string(n.id()); };
    std::unordered_map<uint64_t, size_t> index;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!index.emplace(nodes[i].id(), i).second) throw bad(where(nodes[i]) + ": id used twice");

    // Topological order, file order among the ready nodes (Kahn's algorithm).
    std::vector<std::vector<size_t>> users(nodes.size());
    std::vector<size_t> waiting(nodes.size(), 0);
    std::vector<std::vector<size_t>> deps_of(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto add = [&](uint64_t d, const char* field) {
        const auto it = index.find(d);
        if (it == index.end())
          throw bad(where(nodes[i]) + ": " + field + " names node " + std::to_string(d) + ", which the file lacks");
        deps_of[i].push_back(it->second);
      };
      for (uint64_t d : nodes[i].data_deps()) add(d, "data_deps");
      // tandem's exports chain each rank's communication with ctrl_deps for ASTRA-sim's one
      // communication in flight (chakra_writer.h), an order the schedule does not have.
      if (!file.from_tandem)
        for (uint64_t d : nodes[i].ctrl_deps()) add(d, "ctrl_deps");
      std::sort(deps_of[i].begin(), deps_of[i].end());
      deps_of[i].erase(std::unique(deps_of[i].begin(), deps_of[i].end()), deps_of[i].end());
      waiting[i] = deps_of[i].size();
      for (size_t d : deps_of[i]) users[d].push_back(i);
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (waiting[i] == 0) ready.push(i);
    std::vector<size_t> order;
    order.reserve(nodes.size());
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i])
        if (--waiting[u] == 0) ready.push(u);
    }
    if (order.size() != nodes.size()) {
      for (size_t i = 0; i < nodes.size(); ++i)
        if (waiting[i] > 0) throw bad(where(nodes[i]) + ": its dependencies form a cycle");
    }

    Program p;
    p.rank = rank;
    // resolved[i]: the task ids a dependency on node i stands for (a skipped node: its own deps').
    std::vector<std::vector<TaskId>> resolved(nodes.size());
    for (size_t i : order) {
      const Node& n = nodes[i];
      std::vector<TaskId> deps;
      for (size_t d : deps_of[i]) deps.insert(deps.end(), resolved[d].begin(), resolved[d].end());
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      if (report) ++report->nodes;
      if (!supported(n, where(n))) {
        if (report) ++report->skipped[node_kind(n)];
        resolved[i] = std::move(deps);
        continue;
      }
      Task t;
      t.id = TaskId(p.tasks.size());
      t.deps = std::move(deps);
      const bool on_host = int_attr(where(n), n, "is_cpu_op", 0) != 0;
      t.stream = default_stream(n, on_host);
      if (find_attr(n, "tandem_stream")) {
        const int64_t s = int_attr(where(n), n, "tandem_stream");
        if (s < 0 || s >= kStreamCount)
          throw bad(where(n) + ": attribute tandem_stream: " + std::to_string(s) + " is not a tandem stream");
        t.stream = Stream(s);
      }
      t.op = op_of(n, rank, where(n), report);
      resolved[i] = {t.id};
      p.tasks.push_back(std::move(t));
      if (report) ++report->tasks;
    }
    return p;
  }

  TaskOp op_of(const Node& n, int rank, const std::string& where, ChakraImport* report) const {
    auto peer = [&](const char* field) {
      const int64_t r = int_attr(where, n, field);
      if (r < 0 || r >= world || r == rank)
        throw bad(where + ": " + field + " " + std::to_string(r) + " is not another of the " + std::to_string(world) +
                  " ranks");
      return int32_t(r);
    };
    auto size = [&](const char* field) {
      const int64_t b = int_attr(where, n, field);
      if (b < 0) throw bad(where + ": " + field + " is negative");
      return b;
    };
    switch (n.type()) {
      case ChakraProtoMsg::COMP_NODE: {
        Compute c;
        c.kernel = Kernel::kOpaque;
        c.dtype = dtype;
        double ps = 0;
        const AttributeProto* a =
            durations == ChakraDurations::kExact ? find_attr(n, "tandem_time_ns") : nullptr;
        if (a && a->value_case() == AttributeProto::kDoubleVal)
          ps = a->double_val() * 1e3;
        else
          ps = double(n.duration_micros()) * 1e6;
        if (!std::isfinite(ps) || ps < 0 || ps > 9e18) throw bad(where + ": its time is not a duration");
        c.dims = {std::llround(ps), std::max<int64_t>(0, int_attr(where, n, "num_ops", 0)),
                  std::max<int64_t>(0, int_attr(where, n, "tensor_size", 0)), 0, 0, 0};
        if (report) ++(c.dims[0] > 0 ? report->timed : report->priced);
        return c;
      }
      case ChakraProtoMsg::COMM_COLL_NODE: {
        Collective c;
        c.op = *collective_op(n, where);
        c.bytes = size("comm_size");
        c.dtype = dtype;
        const AttributeProto* pg = find_attr(n, "pg_name");
        const std::string name = pg ? pg->string_val() : "";
        const auto g = group_by_name.find(name);
        if (g == group_by_name.end())
          throw bad(where + ": pg_name '" + name + "' is not a group of " + prefix + ".comm_groups.json");
        c.group = g->second;
        const std::vector<int>& members = groups[g->second].ranks;
        const auto me = std::find(members.begin(), members.end(), rank);
        if (me == members.end())
          throw bad(where + ": pg_name '" + name + "': rank " + std::to_string(rank) + " is not in that group");
        if (c.op == CollectiveOp::kBroadcast || c.op == CollectiveOp::kReduce) {
          const int64_t root = int_attr(where, n, "comm_root", 0);
          if (root < 0 || root >= int64_t(members.size()))
            throw bad(where + ": comm_root " + std::to_string(root) + " is not an index of its group");
          c.root = int32_t(root);
        }
        return c;
      }
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_RECV_NODE: {
        SendRecv m;
        m.is_send = n.type() == ChakraProtoMsg::COMM_SEND_NODE;
        m.peer = peer(m.is_send ? "comm_dst" : "comm_src");
        m.bytes = size("comm_size");
        m.tag = int32_t(int_attr(where, n, "comm_tag", 0));
        return m;
      }
      default: {  // MEM_LOAD_NODE, MEM_STORE_NODE
        Copy c;
        c.direction = n.type() == ChakraProtoMsg::MEM_LOAD_NODE ? CopyDirection::kH2D : CopyDirection::kD2H;
        c.bytes = size("tensor_size");
        return c;
      }
    }
  }
};

class ChakraGenerator : public ProgramGenerator {
 public:
  explicit ChakraGenerator(Converter c) : c_(std::move(c)) {}
  Program generate(int rank) const override { return c_.convert(rank, nullptr); }

 private:
  Converter c_;
};

}  // namespace

ChakraDurations parse_chakra_durations(const std::string& text, const std::string& where) {
  if (text == "exact") return ChakraDurations::kExact;
  if (text == "micros") return ChakraDurations::kMicros;
  throw bad(where + ": '" + text + "' is not one of exact, micros");
}

Schedule import_chakra(Scenario scenario, const std::string& prefix, ChakraImport* report,
                       const ChakraImportOptions& options) {
  int world = 0;
  while (std::filesystem::exists(et_path(prefix, world))) ++world;
  if (world == 0) throw bad(et_path(prefix, 0) + ": no such file (expected PREFIX.<rank>.et for ranks 0, 1, ...)");
  Converter c;
  c.prefix = prefix;
  c.world = world;
  c.dtype = scenario.strategy.dtype;
  c.durations = options.durations;
  c.groups = read_groups(prefix, world, c.group_by_name);
  ChakraImport r;
  r.ranks = world;
  for (int rank = 0; rank < world; ++rank) c.convert(rank, &r);
  if (report) *report = r;
  // The trace is the workload: the scenario keeps its cluster; its model and strategy do not apply.
  scenario.name = "chakra " + prefix;
  scenario.cluster.gpus = world;
  StrategySpec& st = scenario.strategy;
  st.dp = world, st.tp = st.pp = st.sp = 1;
  st.global_batch = 0;
  scenario.software.host_dispatch_us = 0;  // the nodes' times are what they are: no host model
  std::vector<ProcessGroup> groups = c.groups;
  return Schedule(std::move(scenario), world, std::move(groups), std::make_unique<ChakraGenerator>(std::move(c)));
}

}  // namespace tandem
