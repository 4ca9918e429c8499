// The search's values as the protobuf messages its MPI ranks exchange (search/proto/search_ranks.proto),
// and back. Doubles travel as doubles: rank 0 sees every rank's numbers bit for bit.
#pragma once

#include <string>

#include "search/estimate.h"
#include "search/search_space.h"
#include "search_ranks.pb.h"
#include "shared/error.h"

namespace tandem::search {

void to_proto(const Candidate& c, proto::SearchCandidate* out);
Candidate from_proto(const proto::SearchCandidate& p);
void to_proto(const Estimate& e, proto::SearchEstimate* out);
Estimate from_proto(const proto::SearchEstimate& p);

// Parses a message a rank sent; Error (internal) when the bytes are not one.
template <class M>
M parse_rank_message(const std::string& bytes, const char* what) {
  M m;
  if (!m.ParseFromString(bytes)) throw Error(std::string("search: internal: a rank's ") + what + " does not parse", ErrorKind::kInternal);
  return m;
}

}  // namespace tandem::search
