// A digest of a scenario's content, stored in every trace so that a report can tell whether two
// traces ran the same scenario: the FNV-1a 64-bit hash, as 16 hex digits, of a canonical text of
// every resolved field of the model, cluster and strategy and the seed. Scenarios that differ in
// any of those fields get different digests (barring a hash collision, ~2^-64 for a pair); the
// scenario's name, description and origin (the file it was read from) are not part of it, so the
// same scenario loaded from two paths, or renamed, keeps its digest.
#pragma once

#include <string>

#include "shared/scenario.h"

namespace tandem {

std::string scenario_digest(const Scenario& scenario);

// The text the digest hashes: one "part.field=value" line per field, doubles written to round
// trip exactly (%.17g), strings quoted and escaped, enums by name. Shown to explain a mismatch.
std::string scenario_canonical_text(const Scenario& scenario);

}  // namespace tandem
