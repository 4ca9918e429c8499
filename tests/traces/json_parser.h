// A strict JSON parser (RFC 8259) for the tests of traces/chrome_json.cc: enough to prove the
// output is valid JSON and to look inside it. Throws std::runtime_error with the offset of the
// first error. (Boost.JSON would do, but Debian ships it apart, in libboost-json1.74-dev.)
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::testing {

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  const Json& at(const std::string& key) const {
    auto it = object.find(key);
    if (type != kObject || it == object.end()) throw std::runtime_error("json: no key " + key);
    return it->second;
  }
  bool has(const std::string& key) const { return type == kObject && object.count(key) > 0; }
};

class JsonParser {
 public:
  static Json parse(std::string_view text) {
    JsonParser p(text);
    p.ws();
    Json v = p.value(0);
    p.ws();
    if (p.pos_ != text.size()) p.fail("trailing characters");
    return v;
  }

 private:
  explicit JsonParser(std::string_view t) : t_(t) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(pos_));
  }
  void ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\r' || t_[pos_] == '\t')) ++pos_;
  }
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) fail("bad literal");
    pos_ += word.size();
  }

  Json value(int depth) {
    if (depth > 100) fail("too deep");
    Json v;
    switch (peek()) {
      case '{': {
        v.type = Json::kObject;
        ++pos_;
        ws();
        if (peek() == '}') {
          ++pos_;
          return v;
        }
        for (;;) {
          ws();
          std::string key = string();
          ws();
          expect(':');
          ws();
          if (v.object.count(key)) fail("duplicate key " + key);
          v.object.emplace(std::move(key), value(depth + 1));
          ws();
          if (peek() == ',') {
            ++pos_;
            continue;
          }
          expect('}');
          return v;
        }
      }
      case '[': {
        v.type = Json::kArray;
        ++pos_;
        ws();
        if (peek() == ']') {
          ++pos_;
          return v;
        }
        for (;;) {
          ws();
          v.array.push_back(value(depth + 1));
          ws();
          if (peek() == ',') {
            ++pos_;
            continue;
          }
          expect(']');
          return v;
        }
      }
      case '"':
        v.type = Json::kString;
        v.string = string();
        return v;
      case 't':
        literal("true");
        v.type = Json::kBool;
        v.boolean = true;
        return v;
      case 'f':
        literal("false");
        v.type = Json::kBool;
        return v;
      case 'n':
        literal("null");
        return v;
      default:
        v.type = Json::kNumber;
        v.number = number();
        return v;
    }
  }

  std::string string() {
    expect('"');
    std::string s;
    for (;;) {
      if (pos_ >= t_.size()) fail("unterminated string");
      char c = t_[pos_++];
      if (c == '"') return s;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        s += c;
        continue;
      }
      char e = peek();
      ++pos_;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          if (pos_ + 4 > t_.size()) fail("short \\u escape");
          unsigned code = 0;
          for (int i = 0; i < 4; ++i) {
            char h = t_[pos_++];
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail("bad \\u escape");
            code = code * 16 + unsigned(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (code >= 0x80) fail("non-ASCII \\u escape (not needed by these tests)");
          s += char(code);
          break;
        }
        default: fail("bad escape");
      }
    }
  }

  double number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (std::isdigit(static_cast<unsigned char>(peek()))) {
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    } else {
      fail("bad value");
    }
    if (peek() == '.') {
      ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("digit expected after '.'");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("digit expected in exponent");
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    }
    return std::strtod(std::string(t_.substr(start, pos_ - start)).c_str(), nullptr);
  }

  std::string_view t_;
  size_t pos_ = 0;
};

}  // namespace tandem::testing
