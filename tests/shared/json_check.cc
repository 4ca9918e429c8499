// tandem-test-json-check [KEY]: exits 0 when stdin is one RFC 8259 JSON value (then a newline at
// most), 1 with the reason otherwise; with KEY, prints the decoded string or the literal number of
// the top-level member KEY. For the shell tests of the programs' --json output.
#include <iostream>
#include <iterator>
#include <string>

#include "json_parse.h"

int main(int argc, char** argv) {
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (!text.empty() && text.back() == '\n') text.pop_back();
  try {
    const tandem::testing::JsonValue v = tandem::testing::parse_json(text);
    if (argc > 1) {
      const tandem::testing::JsonValue& m = v.at(argv[1]);
      std::cout << (m.kind == tandem::testing::JsonValue::kNull ? "null" : m.string);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tandem-test-json-check: " << e.what() << "\n";
    return 1;
  }
}
