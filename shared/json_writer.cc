#include "shared/json_writer.h"

#include <cmath>

#include "shared/error.h"

namespace tandem {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// The length of the well-formed UTF-8 sequence that starts s[i] (Unicode 15, Table 3-7), or, when
// it is ill-formed, minus the length of its maximal subpart: the lead byte and the continuation
// bytes that could still have begun a well-formed sequence (at least 1).
int utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = b(i);
  int length;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4;
  else return -1;  // a continuation byte, C0/C1 (always overlong) or F5..FF (beyond U+10FFFF)
  if (lead == 0xE0) lo = 0xA0;       // overlong below U+0800
  else if (lead == 0xED) hi = 0x9F;  // surrogates U+D800..U+DFFF
  else if (lead == 0xF0) lo = 0x90;  // overlong below U+10000
  else if (lead == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  for (int k = 1; k < length; ++k) {
    if (i + size_t(k) >= s.size()) return -k;
    const unsigned char c = b(i + size_t(k));
    const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) return -k;
  }
  return length;
}

}  // namespace

void JsonWriter::append_quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const int n = utf8_sequence(s, i);
      if (n > 0) out.append(s.substr(i, size_t(n)));
      else out += kReplacement;
      i += size_t(n > 0 ? n : -n);
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += char(c);
        }
    }
    ++i;
  }
  out += '"';
}

JsonWriter& JsonWriter::key(std::string_view k) {
  if (open_.empty() || !open_.back().object || after_key_)
    throw Error("JsonWriter: a key outside an object or after a key", ErrorKind::kInternal);
  separate(true);
  append_quoted(out_, k);
  out_ += spaced_ ? ": " : ":";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view s) {
  separate();
  append_quoted(out_, s);
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  if (!std::isfinite(v)) return null();
  separate();
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::number(double v, int significant_digits) {
  if (significant_digits < 1 || significant_digits > 17)
    throw Error("JsonWriter: significant digits must be 1 to 17", ErrorKind::kInternal);
  if (!std::isfinite(v)) return null();
  separate();
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, significant_digits);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::fixed(double v, int decimals) {
  if (decimals < 0 || decimals > 17) throw Error("JsonWriter: decimals must be 0 to 17", ErrorKind::kInternal);
  if (!std::isfinite(v)) return null();
  separate();
  char buf[400];  // DBL_MAX has 309 integer digits
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

std::string JsonWriter::take() {
  if (!open_.empty() || after_key_) throw Error("JsonWriter: unfinished JSON", ErrorKind::kInternal);
  flush_newlines();
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

JsonWriter& JsonWriter::open(char c) {
  separate();
  out_ += c;
  open_.push_back({c == '{', true});
  return *this;
}

JsonWriter& JsonWriter::close(char c) {
  if (open_.empty() || open_.back().object != (c == '}') || after_key_)
    throw Error("JsonWriter: a bracket closed that is not open", ErrorKind::kInternal);
  flush_newlines();
  out_ += c;
  open_.pop_back();
  return *this;
}

// A comma before every member of a container but the first; none between a key and its value.
void JsonWriter::separate(bool is_key) {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!open_.empty()) {
    if (open_.back().object && !is_key) throw Error("JsonWriter: a value in an object without its key", ErrorKind::kInternal);
    if (!open_.back().empty) out_ += spaced_ ? ", " : ",";
    open_.back().empty = false;
  }
  flush_newlines();
}

void JsonWriter::flush_newlines() {
  out_.append(size_t(pending_newlines_), '\n');
  pending_newlines_ = 0;
}

}  // namespace tandem
