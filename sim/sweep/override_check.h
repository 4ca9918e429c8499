// Whether a --set/--vary assignment is one the scenario loader can apply (a known, settable field
// and a value of its type), judged on the structure of the parsed scenario (protobuf reflection),
// not on the loader's message. The sweep stops on assignments that are wrong in themselves and
// keeps, as invalid points, those the loader's whole-scenario rules reject.
#pragma once

#include <string>

#include "scenario.pb.h"

namespace tandem::sweep {

enum class OverrideProblem {
  kNone,   // the loader can apply it (its rules may still reject the resulting scenario)
  kKey,    // no '=', an unknown field, a repeated field, a group of fields, a path through a scalar
  kValue,  // a known field, but the value does not parse as the field's type
};

OverrideProblem override_problem(const proto::Scenario& scenario, const std::string& assignment);

}  // namespace tandem::sweep
