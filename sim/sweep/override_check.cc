#include "sim/sweep/override_check.h"

#include <memory>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

namespace tandem::sweep {
namespace {

namespace pb = google::protobuf;

class SilentErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int, pb::io::ColumnNumber, const std::string&) override {}
};

}  // namespace

// The loader's field check (shared/scenario_loader.cc, apply_override) applies part.field=value
// through reflection: every part but the last names a message field, the last a singular scalar;
// a string takes any unquoted text, anything else is parsed as protobuf text.
OverrideProblem override_problem(const proto::Scenario& scenario, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) return OverrideProblem::kKey;
  const std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  std::unique_ptr<pb::Message> copy(scenario.New());
  copy->CopyFrom(scenario);
  pb::Message* m = copy.get();
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const pb::FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(path.substr(start, dot - start));
    if (!f || f->is_repeated()) return OverrideProblem::kKey;
    const bool is_message = f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if (dot != std::string::npos) {
      if (!is_message) return OverrideProblem::kKey;
      m = m->GetReflection()->MutableMessage(m, f);
      start = dot + 1;
      continue;
    }
    if (is_message) return OverrideProblem::kKey;
    const bool quoted = !value.empty() && (value.front() == '"' || value.front() == '\'');
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING && !quoted) return OverrideProblem::kNone;
    SilentErrors silent;
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&silent);
    return parser.ParseFieldValueFromString(value, f, m) ? OverrideProblem::kNone : OverrideProblem::kValue;
  }
}

}  // namespace tandem::sweep
