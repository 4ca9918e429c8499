// SimResult as bytes (sim/proto/sim_result.proto), for its trip from the simulation's child
// process to the parent. decode(encode(r)) == r, field for field and bit for bit.
#pragma once

#include <string>

#include "sim/simulation.h"

namespace tandem::sim {

std::string encode_sim_result(const SimResult& r);
// Error (internal) if the bytes do not parse.
SimResult decode_sim_result(const std::string& bytes);

}  // namespace tandem::sim
