#include "shared/json_writer.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "json_parse.h"
#include "shared/error.h"

namespace tandem {
namespace {

using testing::JsonValue;
using testing::parse_json;

std::string json_quoted(std::string_view s) {
  std::string out;
  JsonWriter::append_quoted(out, s);
  return out;
}

const std::string kFffd = "\xEF\xBF\xBD";

// RFC 8259 section 7: '"', '\' and U+0000..U+001F must be escaped; \b \f \n \r \t have short
// forms, the others are written \u00XX (lower-case hex here).
TEST(JsonWriter, EscapesEveryControlCharacter) {
  const char* expected[32] = {"\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
                              "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
                              "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
                              "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f"};
  for (int c = 0; c < 32; ++c) {
    const std::string in(1, char(c));
    std::string want = "\"";
    want.append(expected[c]).push_back('"');
    EXPECT_EQ(json_quoted(in), want) << c;
    EXPECT_EQ(parse_json(json_quoted(in)).string, in) << c;
  }
  EXPECT_EQ(json_quoted("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(parse_json(json_quoted("a\"b\\c")).string, "a\"b\\c");
  EXPECT_EQ(json_quoted("/ \x7f"), "\"/ \x7f\"");  // neither needs escaping
}

TEST(JsonWriter, KeepsWellFormedUtf8) {
  // e-acute U+00E9, euro U+20AC, G clef U+1D11E, the last code point U+10FFFF, U+FFFD itself.
  const std::string s = "\xC3\xA9 \xE2\x82\xAC \xF0\x9D\x84\x9E \xF4\x8F\xBF\xBF " + kFffd;
  EXPECT_EQ(json_quoted(s), "\"" + s + "\"");
  EXPECT_EQ(parse_json(json_quoted(s)).string, s);
}

// One U+FFFD per maximal subpart of an ill-formed sequence (Unicode 15.0 section 3.9).
TEST(JsonWriter, ReplacesIllFormedUtf8) {
  const std::string r = kFffd;
  struct Case {
    std::string in, out;
  } cases[] = {
      {"\x80", r},                                  // a continuation byte alone
      {"a\xBF" "b", "a" + r + "b"},
      {"\xC0\xAF", r + r},                          // overlong '/': C0 is never a lead byte
      {"\xE0\x80\xAF", r + r + r},                  // overlong 3-byte form: E0 needs A0..BF next
      {"\xF0\x80\x80\xAF", r + r + r + r},          // overlong 4-byte form: F0 needs 90..BF next
      {"\xED\xA0\x80", r + r + r},                  // surrogate U+D800: ED needs 80..9F next
      {"\xED\xBF\xBF", r + r + r},                  // surrogate U+DFFF
      {"\xF4\x90\x80\x80", r + r + r + r},          // U+110000, beyond Unicode
      {"\xF5\x80", r + r}, {"\xFF", r}, {"\xFE", r},
      {"\xE2\x82", r},                              // truncated at the end: one subpart
      {"\xE2\x82" "A", r + "A"},                    // truncated before ASCII
      {"\xF0\x9D\x84", r},                          // 3 of the 4 bytes of U+1D11E
      {"\xC3", r},
      // Unicode 15.0 Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d
      {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" + r + r + r + "b" + r + "c" + r + r + "d"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(json_quoted(c.in), "\"" + c.out + "\"") << ::testing::PrintToString(c.in);
    EXPECT_EQ(parse_json(json_quoted(c.in)).string, c.out);
  }
}

TEST(JsonWriter, NonFiniteNumbersAreNull) {
  for (double v : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()}) {
    JsonWriter w;
    w.begin_array().number(v).number(v, 9).number(v, 17).fixed(v, 3).end_array();
    EXPECT_EQ(w.take(), "[null,null,null,null]");
  }
}

// number(v) is the shortest text that strtod reads back as v; number(v, 17) always reads back too.
TEST(JsonWriter, DoublesRoundTrip) {
  const double values[] = {0.0,  -0.0,    0.1,     1.0 / 3,      2.0 / 3, 1e21, 1e-7, 123456789012345678.0,
                           5e-324 /* smallest subnormal */, DBL_MIN, DBL_MAX, -DBL_MAX, 0.00294557679,
                           std::nextafter(1.0, 2.0)};
  for (double v : values) {
    JsonWriter w;
    w.begin_array().number(v).number(v, 17).end_array();
    const JsonValue a = parse_json(w.take());
    ASSERT_EQ(a.items.size(), 2u);
    EXPECT_EQ(a.items[0].number, v) << a.items[0].string;
    EXPECT_EQ(std::signbit(a.items[0].number), std::signbit(v));
    EXPECT_EQ(a.items[1].number, v) << a.items[1].string;
  }
  JsonWriter w;
  w.begin_array().number(0.1).number(1e21).number(5e-324).end_array();
  EXPECT_EQ(w.take(), "[0.1,1e+21,5e-324]");
}

// The fixed-precision forms are printf's %.<n>g and %.<n>f (C locale).
TEST(JsonWriter, PrecisionForms) {
  JsonWriter w;
  w.begin_array();
  w.number(1.0 / 3, 9).number(1e-5 / 3, 9).number(352321536.0, 17).number(2.5e9, 9).number(0.1, 17);
  w.fixed(1.5, 3).fixed(0.25, 1).fixed(-0.0004, 3).fixed(1e20, 0);
  w.end_array();
  EXPECT_EQ(w.take(),
            "[0.333333333,3.33333333e-06,352321536,2.5e+09,0.10000000000000001,"
            "1.500,0.2,-0.000,100000000000000000000]");
  EXPECT_THROW(JsonWriter().number(1, 18), Error);
  EXPECT_THROW(JsonWriter().fixed(1, -1), Error);
}

TEST(JsonWriter, IntegersAndLiterals) {
  JsonWriter w;
  w.begin_array().integer(std::numeric_limits<int64_t>::min()).integer(std::numeric_limits<uint64_t>::max());
  w.boolean(true).boolean(false).null().end_array();
  EXPECT_EQ(w.take(), "[-9223372036854775808,18446744073709551615,true,false,null]");
}

TEST(JsonWriter, SpacingAndLineBreaks) {
  JsonWriter s(JsonWriter::Spacing::kSpaced);
  s.begin_object().key("a").integer(1).key("b").begin_array().integer(1).integer(2).end_array();
  s.key("c").begin_object().end_object().end_object();
  EXPECT_EQ(s.take(), R"({"a": 1, "b": [1, 2], "c": {}})");

  // The Chrome timeline's layout: one record per line.
  JsonWriter c;
  c.begin_object().key("x").string("y").line_break().key("e").begin_array().line_break();
  c.begin_object().key("i").integer(1).end_object().line_break().begin_object().end_object();
  c.line_break().end_array().end_object();
  EXPECT_EQ(c.take(), "{\"x\":\"y\",\n\"e\":[\n{\"i\":1},\n{}\n]}");
  JsonWriter e;
  e.begin_array().line_break().line_break().end_array();
  EXPECT_EQ(e.take(), "[\n\n]");
}

TEST(JsonWriter, MisuseIsAnInternalError) {
  auto kind = [](auto f) {
    try {
      JsonWriter w;
      f(w);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kBadInput;  // nothing thrown
  };
  EXPECT_EQ(kind([](JsonWriter& w) { w.begin_array().key("k"); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([](JsonWriter& w) { w.begin_object().integer(1); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([](JsonWriter& w) { w.begin_object().end_array(); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([](JsonWriter& w) { w.end_object(); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([](JsonWriter& w) { w.begin_object().key("k").end_object(); }), ErrorKind::kInternal);
  EXPECT_EQ(kind([](JsonWriter& w) { w.begin_object().take(); }), ErrorKind::kInternal);
}

}  // namespace
}  // namespace tandem
