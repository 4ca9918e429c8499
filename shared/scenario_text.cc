#include "shared/scenario_text.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "shared/error.h"

namespace tandem {

namespace pb = google::protobuf;

namespace {

// The text of line `line` (from 0), without its indentation and trailing comment space.
std::string source_line(const std::string& text, int line) {
  size_t start = 0;
  for (int i = 0; i < line && start != std::string::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start >= text.size()) return "";
  const size_t end = text.find('\n', start);
  std::string out = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  const size_t first = out.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  out = out.substr(first);
  out.erase(out.find_last_not_of(" \t\r") + 1);
  return out;
}

void collect_locations(const pb::Message& m, const pb::TextFormat::ParseInfoTree* tree, const std::string& prefix,
                       const std::string& file, const std::string& suffix, const pb::Message* skip_set_in,
                       std::map<std::string, std::string>& out) {
  const pb::Reflection* refl = m.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->is_repeated()) continue;
    if (skip_set_in && skip_set_in->GetReflection()->HasField(*skip_set_in, f)) continue;
    const std::string path = prefix + f->name();
    const auto loc = tree->GetLocation(f, -1);
    if (loc.line >= 0) out[path] = file + ":" + std::to_string(loc.line + 1) + suffix;
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (const auto* sub = tree->GetTreeForNested(f, -1)) {
        collect_locations(refl->GetMessage(m, f), sub, path + ".", file, suffix, nullptr, out);
      }
    }
  }
}

// Silences the tokenizer: the text has parsed already.
class NoErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int, pb::io::ColumnNumber, const std::string&) override {}
};

// Refuses integer literals with a leading zero or in hexadecimal anywhere in `text` (which has parsed).
void refuse_leading_zeros(const std::string& text, const std::string& origin) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  NoErrors quiet;
  pb::io::Tokenizer tokenizer(&input, &quiet);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  while (tokenizer.Next()) {
    const pb::io::Tokenizer::Token& t = tokenizer.current();
    if (t.type != pb::io::Tokenizer::TYPE_INTEGER) continue;
    if (const std::string problem = integer_token_problem(t.text); !problem.empty()) {
      std::string error = origin;
      error.append(":").append(std::to_string(t.line + 1)).append(":").append(std::to_string(t.column + 1));
      error.append(": ").append(problem);
      if (const std::string shown = source_line(text, t.line); !shown.empty()) error.append("\n    ").append(shown);
      throw Error(error);
    }
  }
}

bool value_error(const std::string& message) {
  for (const char* head : {"Expected integer", "Integer out of range", "Expected double", "Invalid value for boolean"})
    if (message.rfind(head, 0) == 0) return true;
  return false;
}

// The field name written before the value at (line, column) of `text`: "layers" in
// "model { layers: +5 }" for the column of "+5"; "" when there is none.
std::string field_before(const std::string& text, int line, int column) {
  size_t start = 0;
  for (int i = 0; i < line && start != std::string::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return "";
  const size_t end = std::min(text.find('\n', start), text.size());
  const std::string head = text.substr(start, std::min<size_t>(end - start, size_t(std::max(column, 0))));
  const size_t colon = head.find_last_of(':');
  if (colon == std::string::npos) return "";
  size_t stop = head.find_last_not_of(" \t", colon == 0 ? 0 : colon - 1);
  if (colon == 0 || stop == std::string::npos) return "";
  size_t begin = stop + 1;
  while (begin > 0 && (std::isalnum(static_cast<unsigned char>(head[begin - 1])) || head[begin - 1] == '_')) --begin;
  return head.substr(begin, stop + 1 - begin);
}

}  // namespace

std::string integer_token_problem(const std::string& token) {
  if (token.size() < 2 || token[0] != '0') return "";
  if (token[1] == 'x' || token[1] == 'X')
    return "the integer " + token + " is hexadecimal; tandem takes decimal only (digits 0-9)";
  if (token[1] < '0' || token[1] > '9') return "";
  const size_t first = token.find_first_not_of('0');
  const std::string decimal = first == std::string::npos ? "0" : token.substr(first);
  return "the integer " + token + " has a leading zero, which protobuf's text format reads as octal; "
         "tandem takes decimal only: write " + decimal;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

void TextErrors::AddError(int line, pb::io::ColumnNumber column, const std::string& message) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
  std::string error = origin_;
  if (line >= 0) error.append(":").append(std::to_string(line + 1)).append(":").append(std::to_string(column + 1));
  error.append(": ");
  // A value the parser refuses: name its field, the word before the ':' that precedes the value.
  if (text_ && line >= 0 && value_error(message)) {
    const std::string field = field_before(*text_, line, column);
    if (!field.empty()) error.append(field).append(": ");
  }
  error.append(message);
  if (text_ && line >= 0) {
    if (const std::string shown = source_line(*text_, line); !shown.empty()) error += "\n    " + shown;
  }
  errors_.push_back(error);
  bare_.push_back(message);
}

std::string Origins::at(std::string path) const {
  for (;;) {
    if (auto it = where.find(path); it != where.end()) return it->second;
    const size_t dot = path.rfind('.');
    if (dot == std::string::npos) return file;
    path.resize(dot);
  }
}

void parse_text(const std::string& text, const std::string& origin, pb::Message* message, const std::string& prefix,
                const std::string& suffix, const pb::Message* skip_set_in, const std::string& note,
                Origins* origins) {
  pb::TextFormat::ParseInfoTree tree;
  TextErrors errors(origin, &text);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(text, message)) {
    std::string error = errors.message();
    error.insert(std::min(error.find('\n'), error.size()), note);
    throw Error(error);
  }
  refuse_leading_zeros(text, origin);
  collect_locations(*message, &tree, prefix, origin, suffix, skip_set_in, origins->where);
}

std::string field_names(const pb::Descriptor* d) {
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
  return join(names, ", ");
}

}  // namespace tandem
