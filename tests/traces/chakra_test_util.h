// Reading tandem's Chakra files back in the tests, with the classes generated from
// traces/chakra/et_def.proto.
#pragma once

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "et_def.pb.h"
#include "shared/scenario.h"
#include "trace_test_util.h"

namespace tandem::testing {

struct EtFile {
  ChakraProtoMsg::GlobalMetadata meta;
  std::vector<ChakraProtoMsg::Node> nodes;
};

// A length-delimited stream: a GlobalMetadata, then nodes to a clean end.
inline EtFile parse_et(const std::string& bytes) {
  google::protobuf::io::ArrayInputStream in(bytes.data(), int(bytes.size()));
  EtFile f;
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f.meta, &in, &clean_eof))
    throw std::runtime_error("no GlobalMetadata");
  for (;;) {
    ChakraProtoMsg::Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &in, &clean_eof)) {
      if (!clean_eof) throw std::runtime_error("a node is cut or malformed");
      break;
    }
    f.nodes.push_back(std::move(n));
  }
  return f;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline EtFile parse_et_file(const std::string& path) { return parse_et(read_bytes(path)); }

inline bool has_attr(const ChakraProtoMsg::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return true;
  return false;
}

inline const ChakraProtoMsg::AttributeProto& attr(const ChakraProtoMsg::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return a;
  throw std::runtime_error("node " + std::to_string(n.id()) + " has no attribute " + name);
}

inline bool is_comm_node(const ChakraProtoMsg::Node& n) {
  return n.type() == ChakraProtoMsg::COMM_COLL_NODE || n.type() == ChakraProtoMsg::COMM_SEND_NODE ||
         n.type() == ChakraProtoMsg::COMM_RECV_NODE;
}

// The sample scenario (trace_test_util.h) on the tiny GPT's cluster (a DGX A100 80 GB), so that
// the compute cost model the export takes its durations from has a GPU to time kernels on.
inline Scenario sample_scenario_on_a100() {
  Scenario sc = sample_scenario();
  sc.cluster = load_scenario(TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto", {}).cluster;
  return sc;
}

// sample_schedule() on that cluster: two ranks running sample_program, groups 0 and 1 of {0, 1}.
inline Schedule sample_schedule_on_a100() {
  std::vector<ProcessGroup> groups(2);
  groups[0] = ProcessGroup{0, GroupKind::kTp, 0, {0, 1}};
  groups[1] = ProcessGroup{1, GroupKind::kTp, 1, {0, 1}};
  std::vector<Program> programs{sample_program(0), sample_program(1)};
  return Schedule(sample_scenario_on_a100(), 2, std::move(groups),
                  std::make_unique<FixedGenerator>(std::move(programs)));
}

}  // namespace tandem::testing
