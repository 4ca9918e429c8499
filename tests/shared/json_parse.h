// A strict RFC 8259 JSON reader for the tests: it rejects what a conforming parser must reject
// (raw control characters and ill-formed UTF-8 in strings, bare inf/nan, leading zeros, trailing
// commas, trailing text) and decodes what it accepts, so that a test can assert what a reader of
// tandem's JSON gets back. Test code only; tandem itself writes JSON and never reads it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::testing {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;  // decoded (UTF-8) for strings; the literal text for numbers
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  const JsonValue& at(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return v;
    throw std::runtime_error("no member " + std::string(key));
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}
  JsonValue parse() {
    ws();
    JsonValue v = value();
    ws();
    if (i_ != s_.size()) fail("text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("invalid JSON at byte " + std::to_string(i_) + ": " + what);
  }
  bool eof() const { return i_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[i_]; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  void ws() {
    while (!eof() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool literal(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  JsonValue value() {
    JsonValue v;
    const char c = peek();
    if (c == '{') {
      v.kind = JsonValue::kObject;
      ++i_;
      ws();
      if (peek() == '}') return ++i_, v;
      for (;;) {
        ws();
        if (peek() != '"') fail("expected a key");
        std::string k = string();
        ws();
        expect(':');
        ws();
        v.members.emplace_back(std::move(k), value());
        ws();
        if (peek() == ',') { ++i_; continue; }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JsonValue::kArray;
      ++i_;
      ws();
      if (peek() == ']') return ++i_, v;
      for (;;) {
        ws();
        v.items.push_back(value());
        ws();
        if (peek() == ',') { ++i_; continue; }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonValue::kString;
      v.string = string();
      return v;
    }
    if (literal("true")) return v.kind = JsonValue::kBool, v.boolean = true, v;
    if (literal("false")) return v.kind = JsonValue::kBool, v;
    if (literal("null")) return v;
    return number();
  }
  JsonValue number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (!eof() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("expected a digit");
    };
    if (peek() == '-') ++i_;
    if (peek() == '0') ++i_;
    else digits();
    if (peek() == '.') ++i_, digits();
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      digits();
    }
    JsonValue v;
    v.kind = JsonValue::kNumber;
    v.string = std::string(s_.substr(start, i_ - start));
    v.number = std::strtod(v.string.c_str(), nullptr);
    return v;
  }
  unsigned hex4() {
    unsigned u = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = peek();
      ++i_;
      u <<= 4;
      if (h >= '0' && h <= '9') u |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f') u |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') u |= unsigned(h - 'A' + 10);
      else fail("bad \\u escape");
    }
    return u;
  }
  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  // One well-formed UTF-8 sequence copied from the input (Unicode Table 3-7).
  void raw_utf8(std::string& out) {
    const auto b = [&](size_t k) { return k < s_.size() ? static_cast<unsigned char>(s_[k]) : 0u; };
    const unsigned lead = b(i_);
    int n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) n = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) n = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) n = 4;
    else fail("ill-formed UTF-8");
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
    for (int k = 1; k < n; ++k) {
      const unsigned c = b(i_ + size_t(k));
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) fail("ill-formed UTF-8");
    }
    out.append(s_.substr(i_, size_t(n)));
    i_ += size_t(n);
  }
  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (eof()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') return ++i_, out;
      if (c < 0x20) fail("raw control character in a string");
      if (c >= 0x80) {
        raw_utf8(out);
        continue;
      }
      ++i_;
      if (c != '\\') {
        out += char(c);
        continue;
      }
      const char e = peek();
      ++i_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!literal("\\u")) fail("lone high surrogate");
            const uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail("lone low surrogate");
          }
          utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

inline JsonValue parse_json(std::string_view text) { return JsonParser(text).parse(); }

}  // namespace tandem::testing
