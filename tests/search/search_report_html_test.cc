// The HTML report of `tandem search -o`: agreement() and pareto_front() on points made by hand,
// and the page of a real search (the tiny GPT on 8 GPUs, K = 4) checked against the --json of the
// same run: its structure (self-contained: no script, no external reference), one row per result
// in the same order with the same figures, the Pareto rows and the agreement figures recomputed
// here from the JSON, and one marker per point in the plots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "search/agreement.h"
#include "search/search_report.h"
#include "search/search_report_html.h"
#include "search/search_run.h"
#include "shared/number_format.h"
#include "tests/shared/json_parse.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

RankedPoint made(double estimate, double simulated, double tokens, int64_t peak) {
  RankedPoint p;
  p.estimate.iteration_s = estimate;
  p.simulated.status = sweep::PointStatus::kOk;
  p.simulated.iteration_time_s = simulated;
  p.simulated.tokens_per_s = tokens;
  p.simulated.peak_memory_bytes = peak;
  return p;
}

TEST(SearchAgreement, ByHand) {
  SearchResult r;
  // Errors |1/1.1 - 1| = 0.0909, |2/1.9 - 1| = 0.0526, |3/3.5 - 1| = 0.1429: median 1/11, worst
  // 1/7; both orders agree on every pair: tau 1.
  r.best = {made(1, 1.1, 1, 1), made(2, 1.9, 1, 1), made(3, 3.5, 1, 1)};
  Agreement a = agreement(r);
  EXPECT_EQ(a.points, 3u);
  EXPECT_NEAR(a.median_error, 1.0 / 11, 1e-12);
  EXPECT_NEAR(a.worst_error, 1.0 / 7, 1e-12);
  EXPECT_NEAR(a.kendall_tau, 1.0, 1e-12);
  // A fourth point estimated fastest but simulated slowest: 3 more pairs, all discordant
  // (3 - 3) / 6 = 0; its error |0.5/4 - 1| = 0.875 the worst; median of 4: (1/11 + 1/7) / 2.
  r.best.push_back(made(0.5, 4, 1, 1));
  a = agreement(r);
  EXPECT_NEAR(a.kendall_tau, 0.0, 1e-12);
  EXPECT_NEAR(a.worst_error, 0.875, 1e-12);
  EXPECT_NEAR(a.median_error, (1.0 / 11 + 1.0 / 7) / 2, 1e-12);
  // Failed simulations are left out.
  r.best.push_back(made(1, 1, 1, 1));
  r.best.back().simulated.status = sweep::PointStatus::kError;
  EXPECT_EQ(agreement(r).points, 4u);
}

TEST(SearchPareto, ByHand) {
  SearchResult r;
  // (tokens/s, peak): A (100, 10) and B (80, 5) trade off; C (90, 10) is beaten by A; D (80, 6)
  // by B; E (100, 10) equals A, so neither dominates the other; F failed.
  r.best = {made(1, 1, 100, 10), made(1, 1, 80, 5), made(1, 1, 90, 10), made(1, 1, 80, 6), made(1, 1, 100, 10),
            made(1, 1, 200, 1)};
  r.best.back().simulated.status = sweep::PointStatus::kOom;
  EXPECT_EQ(pareto_front(r), (std::vector<bool>{true, true, false, false, true, false}));
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The value of attribute `name` in `tag` (NaN when absent).
double attribute(const std::string& tag, const std::string& name) {
  const size_t at = tag.find(" " + name + "=\"");
  if (at == std::string::npos) return NAN;
  return std::stod(tag.substr(at + name.size() + 3));
}

// ">text<": a table cell's whole text (not '">" + ...': GCC 12's false -Wrestrict, bug 105329).
std::string cell(std::string text) {
  text.insert(text.begin(), '>');
  text.push_back('<');
  return text;
}

void expect_close(double html, double json, const char* what) {
  EXPECT_NEAR(html, json, 1e-8 * std::fabs(json)) << what;
}

TEST(SearchHtml, MatchesTheJsonOfTheSameRun) {
  SearchOptions o;
  o.gpus = 8;
  o.top = 4;
  o.jobs = 2;
  const SearchResult r = run_search(kTiny,
                                    {"strategy.sp_mode=none", "strategy.recompute=none", "strategy.zero_stage=0",
                                     "strategy.tp_mode=1d", "strategy.offload=none", "software.tp_comm_overlap=false"},
                                    o);
  const std::string html = search_html(r);
  const testing::JsonValue j = testing::parse_json(search_json(r));
  const auto& results = j.at("results").items;
  ASSERT_EQ(results.size(), 4u);

  // Self-contained: no script, stylesheet link, image or other fetched resource; "http" only in
  // each inline SVG's namespace.
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_EQ(html.substr(html.size() - 8), "</html>\n");
  for (const char* banned : {"<script", "<link", "src=", "href=", "url(", "@import"})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  EXPECT_EQ(count(html, "<svg"), 2u);
  EXPECT_EQ(count(html, "http"), count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(count(html, "<h2>"), 4u);

  // The counts.
  const size_t counts_at = html.find("<span id=\"counts\"");
  ASSERT_NE(counts_at, std::string::npos);
  const std::string counts = html.substr(counts_at, html.find('>', counts_at) - counts_at);
  EXPECT_EQ(attribute(counts, "data-points"), j.at("points").number);
  EXPECT_EQ(attribute(counts, "data-valid"), j.at("valid").number);

  // One row per result, in the JSON's order, with its figures and its strategy.
  std::vector<std::string> rows;
  for (size_t at = html.find("<tr class=\"point"); at != std::string::npos; at = html.find("<tr class=\"point", at + 1))
    rows.push_back(html.substr(at, html.find("</tr>", at) - at));
  ASSERT_EQ(rows.size(), results.size());
  size_t ok = 0;
  std::vector<bool> pareto_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string tag = rows[i].substr(0, rows[i].find('>'));
    const testing::JsonValue& p = results[i];
    EXPECT_EQ(attribute(tag, "data-rank"), p.at("rank").number);
    expect_close(attribute(tag, "data-estimate-s"), p.at("estimated_iteration_time_s").number, "estimate");
    ASSERT_EQ(p.at("status").string, "ok");
    ++ok;
    expect_close(attribute(tag, "data-iteration-s"), p.at("iteration_time_s").number, "iteration");
    expect_close(attribute(tag, "data-tokens-per-s"), p.at("tokens_per_s").number, "tokens");
    expect_close(attribute(tag, "data-peak-bytes"), p.at("peak_memory_bytes").number, "peak");
    // The displayed text is those figures.
    EXPECT_NE(rows[i].find(cell(format_number("%.4g s", p.at("iteration_time_s").number))), std::string::npos);
    EXPECT_NE(rows[i].find(cell(format_number("%.4g", p.at("tokens_per_s").number))), std::string::npos);
    EXPECT_NE(rows[i].find(cell(format_gib(int64_t(p.at("peak_memory_bytes").number)))), std::string::npos);
    std::string sets;
    for (const testing::JsonValue& a : p.at("sets").items) sets += (sets.empty() ? "" : " ") + a.string;
    EXPECT_NE(rows[i].find("<code>" + sets + "</code>"), std::string::npos) << sets;
    pareto_rows.push_back(tag.find("class=\"point pareto\"") != std::string::npos);
  }

  // The Pareto rows: recomputed from the JSON (no other point at least as fast and as small,
  // and better in one).
  size_t front = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    bool dominated = false;
    const double ti = results[i].at("tokens_per_s").number, mi = results[i].at("peak_memory_bytes").number;
    for (size_t k = 0; k < results.size(); ++k) {
      const double tk = results[k].at("tokens_per_s").number, mk = results[k].at("peak_memory_bytes").number;
      if (k != i && tk >= ti && mk <= mi && (tk > ti || mk < mi)) dominated = true;
    }
    EXPECT_EQ(pareto_rows[i], !dominated) << "row " << i + 1;
    front += !dominated;
  }
  EXPECT_GE(front, 1u);
  // Markers: every point in the Pareto plot, the front again on its line, every point in the
  // agreement plot.
  EXPECT_EQ(count(html, "<circle"), 2 * ok + front);

  // The agreement figures, recomputed from the JSON.
  std::vector<double> errors, est, sim;
  for (const testing::JsonValue& p : results) {
    est.push_back(p.at("estimated_iteration_time_s").number);
    sim.push_back(p.at("iteration_time_s").number);
    errors.push_back(std::fabs(est.back() / sim.back() - 1));
  }
  std::sort(errors.begin(), errors.end());
  double concordance = 0;
  for (size_t a = 0; a < est.size(); ++a)
    for (size_t b = a + 1; b < est.size(); ++b) {
      const double s = (est[a] - est[b]) * (sim[a] - sim[b]);
      concordance += s > 0 ? 1 : s < 0 ? -1 : 0;
    }
  const size_t agreement_at = html.find("<p id=\"agreement\"");
  ASSERT_NE(agreement_at, std::string::npos);
  const std::string tag = html.substr(agreement_at, html.find('>', agreement_at) - agreement_at);
  EXPECT_EQ(attribute(tag, "data-points"), 4.0);
  expect_close(attribute(tag, "data-median-error"), (errors[1] + errors[2]) / 2, "median");
  expect_close(attribute(tag, "data-worst-error"), errors[3], "worst");
  EXPECT_NEAR(attribute(tag, "data-kendall-tau"), concordance / 6, 1e-8);
}

}  // namespace
}  // namespace tandem::search
