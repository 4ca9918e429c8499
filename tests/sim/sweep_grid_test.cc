// `tandem sweep`'s flags: --vary parsing, the cross product's size and order, and the errors that
// must name the flag.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "shared/error.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_runner.h"

namespace tandem::sweep {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

TEST(SweepGrid, ParsesKeyAndValuesInOrder) {
  const VaryAxis a = parse_vary("strategy.tp=1,2,8,4");
  EXPECT_EQ(a.key, "strategy.tp");
  EXPECT_EQ(a.values, (std::vector<std::string>{"1", "2", "8", "4"}));
  EXPECT_EQ(parse_vary("strategy.dtype=bf16").values, std::vector<std::string>{"bf16"});
}

TEST(SweepGrid, CrossProductFirstAxisSlowest) {
  const SweepGrid g({parse_vary("cluster.gpus=1,2,4"), parse_vary("strategy.tp=1,2"), parse_vary("strategy.pp=1,2")});
  ASSERT_EQ(g.size(), 3u * 2u * 2u);
  EXPECT_EQ(g.gpus_axis(), 0);
  EXPECT_EQ(g.values(0), (std::vector<std::string>{"1", "1", "1"}));
  EXPECT_EQ(g.values(1), (std::vector<std::string>{"1", "1", "2"}));
  EXPECT_EQ(g.values(2), (std::vector<std::string>{"1", "2", "1"}));
  EXPECT_EQ(g.values(4), (std::vector<std::string>{"2", "1", "1"}));
  EXPECT_EQ(g.values(11), (std::vector<std::string>{"4", "2", "2"}));
  EXPECT_EQ(g.assignments(5), (std::vector<std::string>{"cluster.gpus=2", "strategy.tp=1", "strategy.pp=2"}));
  // Every combination once.
  std::set<std::vector<std::string>> seen;
  for (size_t i = 0; i < g.size(); ++i) seen.insert(g.values(i));
  EXPECT_EQ(seen.size(), g.size());
  EXPECT_EQ(SweepGrid({parse_vary("strategy.tp=1,2")}).gpus_axis(), -1);
}

TEST(SweepGrid, BadSyntaxNamesTheFlag) {
  for (const std::string bad : {"strategy.tp", "=1,2", "tp=1,2", "strategy.tp=", "strategy.tp=1,,2", "strategy.tp=1,2,",
                                "strategy.tp=1,2,1", ".tp=1", "strategy.=1"}) {
    const std::string m = error_of([&] { parse_vary(bad); });
    EXPECT_EQ(m.rfind("--vary " + bad + ":", 0), 0u) << bad << " -> " << m;
  }
  EXPECT_NE(error_of([] { SweepGrid({}); }).find("--vary"), std::string::npos);
  const std::string twice = error_of([] { SweepGrid({parse_vary("strategy.tp=1"), parse_vary("strategy.tp=2")}); });
  EXPECT_NE(twice.find("varied twice"), std::string::npos) << twice;
}

TEST(SweepFlags, UnknownKeysAndBadValuesNameTheFlag) {
  const std::string unknown = error_of([] { check_flags(kTiny, {}, SweepGrid({parse_vary("strategy.tpp=1,2")})); });
  EXPECT_EQ(unknown.rfind("--vary strategy.tpp=1,2:", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("unknown field"), std::string::npos) << unknown;

  const std::string part = error_of([] { check_flags(kTiny, {}, SweepGrid({parse_vary("clutser.gpus=1,2")})); });
  EXPECT_EQ(part.rfind("--vary clutser.gpus=1,2:", 0), 0u) << part;

  const std::string type = error_of([] { check_flags(kTiny, {}, SweepGrid({parse_vary("strategy.tp=1,two")})); });
  EXPECT_EQ(type.rfind("--vary strategy.tp=1,two: value two:", 0), 0u) << type;
  EXPECT_EQ(unknown.find("value 1"), std::string::npos) << unknown;

  const std::string set = error_of([] { check_flags(kTiny, {"strategy.ppp=2"}, SweepGrid({parse_vary("strategy.tp=1")})); });
  EXPECT_EQ(set.rfind("--set strategy.ppp=2:", 0), 0u) << set;

  const std::string both = error_of([] { check_flags(kTiny, {"strategy.tp=2"}, SweepGrid({parse_vary("strategy.tp=1,2")})); });
  EXPECT_NE(both.find("also given with --set"), std::string::npos) << both;

  const std::string missing = error_of([] { check_flags("/nonexistent.textproto", {}, SweepGrid({parse_vary("strategy.tp=1")})); });
  EXPECT_NE(missing.find("cannot read"), std::string::npos) << missing;

  // Values that are well-formed but make some points invalid are not flag errors.
  EXPECT_EQ(error_of([] { check_flags(kTiny, {}, SweepGrid({parse_vary("cluster.gpus=1,2"), parse_vary("strategy.tp=1,64")})); }), "");
}

}  // namespace
}  // namespace tandem::sweep
