// What `tandem sim` prints: a human summary and one JSON object (--json). Both are functions of
// the result alone, formatted with fixed precision, so equal results print byte-identical text.
#pragma once

#include <ostream>
#include <string>

#include "sim/simulation.h"

namespace tandem::sim {

// The breakdown of one rank's iteration: compute, exposed communication, offload, and the rest
// (bubble: waiting for pipeline neighbours or for the slowest member of a collective) up to the
// iteration time.
struct Breakdown {
  int rank = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0, offload_s = 0;
};
Breakdown breakdown_of(const SimResult& r, int rank);

// What an approximate result (SimResult::approximate) approximated, in a sentence.
std::string approximation_note(const SimResult& r);

void write_summary(std::ostream& out, const Schedule& schedule, const SimResult& r);
void write_json(std::ostream& out, const Schedule& schedule, const SimResult& r);

}  // namespace tandem::sim
