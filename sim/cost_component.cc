#include "sim/cost_component.h"

#include <cstring>

namespace tandem::sim {

namespace {

constexpr const char* kNames[kComponentCount] = {"gemm", "attention", "vector", "optimizer", "host",
                                                 "nvlink", "nic", "p2p", "pcie"};

}  // namespace

const char* component_name(Component c) { return kNames[static_cast<int>(c)]; }

bool component_from_name(const char* name, Component& out) {
  for (int i = 0; i < kComponentCount; ++i)
    if (std::strcmp(name, kNames[i]) == 0) {
      out = static_cast<Component>(i);
      return true;
    }
  return false;
}

}  // namespace tandem::sim
