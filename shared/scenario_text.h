// The scenario loader's text side, private to its files (scenario_loader.cc, scenario_text.cc,
// scenario_overrides.cc, scenario_presets.cc, the resolver): parsing protobuf text with errors that
// show file, line and the offending text, and remembering where each field's value came from
// (a file line, a preset's line, or a --set) so that a rule broken later names it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include "scenario.pb.h"

namespace tandem {

std::string join(const std::vector<std::string>& parts, const char* sep);
std::string num(double v);
inline std::string num(int64_t v) { return std::to_string(v); }
inline std::string num(int v) { return std::to_string(v); }

// Collects the parser's complaints as FILE:LINE:COL: message (protobuf counts from 0), followed by
// the offending line of the text when there is one, so the field in question shows.
class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit TextErrors(std::string origin, const std::string* text = nullptr)
      : origin_(std::move(origin)), text_(text) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override;
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  std::string message() const { return errors_.empty() ? origin_ + ": cannot parse" : join(errors_, "\n"); }
  // The parser's own words, without the location.
  std::string bare() const { return join(bare_, "; "); }

 private:
  std::string origin_;
  const std::string* text_;
  std::vector<std::string> errors_;
  std::vector<std::string> bare_;
};

// Where each field's value came from, by dotted path ("strategy.tp").
struct Origins {
  std::string file;
  std::map<std::string, std::string> where;

  // The origin of `path`, else of its nearest enclosing block, else the file.
  std::string at(std::string path) const;
};

// Parses `text` (from `origin`) into `message`, recording the line of every field set in
// `origins->where` under `prefix` with `suffix` appended (fields set in `skip_set_in` are left
// alone: they override the text). Throws Error with the parser's complaints, `note` added to the
// first line.
void parse_text(const std::string& text, const std::string& origin, google::protobuf::Message* message,
                const std::string& prefix, const std::string& suffix, const google::protobuf::Message* skip_set_in,
                const std::string& note, Origins* origins);

// Why an integer token is refused ("" when it is not): a leading zero, which protobuf's text
// format would read as octal (010 is 8), or a hexadecimal 0x prefix (0x10 is 16). Decimal is the
// only base the loader takes.
std::string integer_token_problem(const std::string& token);

// "layers, hidden, heads, ..." for a message type.
std::string field_names(const google::protobuf::Descriptor* d);

// One --set part.field=value (scenario_overrides.cc).
void apply_override(proto::Scenario& scenario, const std::string& assignment, Origins& origins);
// The software preset a scenario without software.preset runs: the framework a new user most
// likely trains with today (docs/software.md).
inline constexpr const char* kDefaultSoftwarePreset = "megatron-core-0.8";
// cluster.preset and software.preset: load each named preset (embedded, or a file), then let the
// scenario's own fields of that part override it (scenario_presets.cc).
void merge_preset(proto::Scenario& scenario, Origins& origins);

}  // namespace tandem
