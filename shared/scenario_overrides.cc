// --set part.field=value: one field of a scenario set from the command line, through reflection,
// before the cluster preset is merged (so a --set cluster figure overrides the preset's). The
// field's origin becomes the --set itself, so that a rule it breaks later names it.
#include <string>
#include <vector>

#include "shared/error.h"
#include "shared/scenario_text.h"

namespace tandem {

namespace pb = google::protobuf;

namespace {

// "an int32", "a double", "a uint64".
const char* article(const char* type_name) { return type_name[0] == 'i' ? "an " : "a "; }

}  // namespace

void apply_override(proto::Scenario& scenario, const std::string& assignment, Origins& origins) {
  const std::string where = "--set " + assignment;
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(where + ": expected part.field=value, e.g. --set strategy.tp=8");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);

  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }

  pb::Message* m = &scenario;
  std::string walked;
  for (size_t i = 0; i < parts.size(); ++i) {
    const pb::Descriptor* d = m->GetDescriptor();
    const pb::FieldDescriptor* f = d->FindFieldByName(parts[i]);
    const std::string scope = walked.empty() ? "a scenario" : walked;
    if (!f) {
      throw Error(where + ": unknown field \"" + parts[i] + "\" in " + scope + "; its fields are: " +
                  field_names(d));
    }
    if (f->is_repeated()) throw Error(where + ": " + path + " is a repeated field; --set cannot set it");
    walked += (walked.empty() ? "" : ".") + parts[i];
    const bool is_message = f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if (i + 1 < parts.size()) {
      if (!is_message) {
        throw Error(where + ": " + walked + " is " + article(f->type_name()) + f->type_name() + ", it has no field \"" +
                    parts[i + 1] + "\"");
      }
      m = m->GetReflection()->MutableMessage(m, f);
      continue;
    }
    if (is_message) {
      throw Error(where + ": " + walked + " is a group of fields; set one of them (" +
                  field_names(f->message_type()) + ")");
    }
    const bool quoted = !value.empty() && (value.front() == '"' || value.front() == '\'');
    if (quoted && (value.size() < 2 || value.back() != value.front()))
      throw Error(where + ": " + walked + ": unterminated quote: the value opens with " + value.front() +
                  " and does not close with it");
    const auto type = f->cpp_type();
    if (type == pb::FieldDescriptor::CPPTYPE_INT32 || type == pb::FieldDescriptor::CPPTYPE_INT64 ||
        type == pb::FieldDescriptor::CPPTYPE_UINT32 || type == pb::FieldDescriptor::CPPTYPE_UINT64) {
      const size_t digits = value.find_first_not_of("+-");
      if (digits != std::string::npos) {
        if (const std::string problem = integer_token_problem(value.substr(digits)); !problem.empty())
          throw Error(where + ": " + walked + ": " + problem);
      }
      // Exactly decimal digits after an optional minus: no "+5", " 5", "5 # note", "- 5", "1e3".
      const size_t first = value.empty() || value[0] != '-' ? 0 : 1;
      if (first == value.size() || value.find_first_not_of("0123456789", first) != std::string::npos)
        throw Error(where + ": " + walked + " takes " + article(f->type_name()) + f->type_name() + ", not \"" + value +
                    "\" (decimal digits only, a minus sign before a negative number, nothing else)");
    }
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING && !quoted) {
      m->GetReflection()->SetString(m, f, value);
    } else {
      TextErrors errors(where);
      pb::TextFormat::Parser parser;
      parser.RecordErrorsTo(&errors);
      if (!parser.ParseFieldValueFromString(value, f, m)) {
        const std::string detail = errors.bare();
        throw Error(where + ": " + walked + " takes " + article(f->type_name()) + f->type_name() + ", not \"" + value + "\"" +
                    (detail.empty() ? "" : " (" + detail + ")"));
      }
    }
  }
  origins.where[path] = where + " (over " + origins.file + ")";
}

}  // namespace tandem
