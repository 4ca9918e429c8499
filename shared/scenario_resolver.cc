// The resolver's shared checks, the whole scenario and its model part.
//
// Resolution choices: kv_heads 0 -> heads; ffn_hidden 0 -> 4*hidden for gelu AND swiglu (the
// proto's documented default; Llama-style models should give ffn_hidden explicitly, as Llama's is
// about 8/3*hidden); a scenario without a name takes its file's stem.
#include "shared/scenario_resolver.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "shared/error.h"

namespace tandem {

namespace {

}  // namespace

bool same_spelling(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

Scenario Resolver::run() const {
  Scenario out;
  out.origin = o_.file;
  out.name = s_.has_name() ? s_.name() : std::filesystem::path(o_.file).stem().string();
  out.description = s_.description();
  out.seed = s_.seed();
  out.model = model();
  out.cluster = cluster();
  out.strategy = strategy(out.model, out.cluster);
  out.software = software(out.strategy, out.notes);
  check_sizes(out.model, out.strategy);
  return out;
}

void Resolver::fail(const std::string& path, const std::string& rule) const {
  throw Error(o_.at(path) + ": " + path + ": " + rule);
}

int Resolver::required_positive(const std::string& path, bool has, int value, const std::string& what,
                                int max) const {
  if (!has) fail(path, "required field is missing (" + what + ")");
  if (value <= 0) fail(path, "must be positive, got " + num(value));
  at_most(path, value, max);
  return value;
}

void Resolver::at_least(const std::string& path, int64_t value, int64_t low) const {
  if (value < low) fail(path, "must be >= " + num(low) + ", got " + num(value));
}

void Resolver::at_most(const std::string& path, int64_t value, int64_t high) const {
  if (value > high) fail(path, "must be at most " + num(high) + " (tandem's input limit), got " + num(value));
}

void Resolver::finite_at_most(const std::string& path, double value, double max, const std::string& bound) const {
  if (!std::isfinite(value)) fail(path, "must be a finite number, got " + num(value));
  if (value > max) fail(path, "must be at most " + num(max) + " " + bound + ", got " + num(value));
}

void Resolver::positive_figure(const std::string& path, double value, double max, const std::string& bound) const {
  finite_at_most(path, value, max, bound);
  if (!(value > 0)) {
    fail(path, "must be positive, got " + num(value) +
                   (value == 0 ? " (not set: name a cluster.preset or give the figure)" : ""));
  }
}

void Resolver::non_negative(const std::string& path, double value, double max, const std::string& bound) const {
  finite_at_most(path, value, max, bound);
  if (!(value >= 0)) fail(path, "must be >= 0, got " + num(value));
}

int64_t Resolver::product(const std::string& path, const std::string& what,
                          std::initializer_list<int64_t> factors) const {
  int64_t p = 1;
  std::string shown;
  bool overflow = false;
  for (int64_t f : factors) {
    shown += (shown.empty() ? "" : " x ") + num(f);
    overflow = overflow || __builtin_mul_overflow(p, f, &p);
  }
  if (overflow) fail(path, what + " = " + shown + " is beyond what 64-bit arithmetic holds");
  return p;
}

void Resolver::split(const std::string& path, const std::string& by, int64_t parts, const std::string& field,
                     int64_t value, const std::string& why) const {
  if (value % parts != 0) {
    fail(path, by + " = " + num(parts) + " must divide " + field + " = " + num(value) + see(field) + why);
  }
}

ModelSpec Resolver::model() const {
  if (!s_.has_model()) fail("model", "required: the scenario has no model { ... } block");
  const proto::Model& m = s_.model();
  ModelSpec spec;
  spec.name = m.name();
  spec.layers = required_positive("model.layers", m.has_layers(), m.layers(), "transformer layers", kMaxLayers);
  spec.hidden = required_positive("model.hidden", m.has_hidden(), m.hidden(), "hidden size", kMaxHidden);
  spec.heads = required_positive("model.heads", m.has_heads(), m.heads(), "attention heads", kMaxHidden);
  spec.vocab = required_positive("model.vocab", m.has_vocab(), m.vocab(), "vocabulary size", INT32_MAX);
  spec.seq_len = required_positive("model.seq_len", m.has_seq_len(), m.seq_len(), "tokens per sequence", kMaxSeqLen);
  at_least("model.kv_heads", m.kv_heads(), 0);
  at_least("model.ffn_hidden", m.ffn_hidden(), 0);
  at_most("model.ffn_hidden", m.ffn_hidden(), kMaxFfnHidden);
  spec.norm = choice("model.norm", m.norm(), kNormSpellings);
  spec.activation = choice("model.activation", m.activation(), kActivationSpellings);
  spec.tied_embeddings = m.tied_embeddings();
  spec.dropout = m.dropout();
  if (!(spec.dropout >= 0 && spec.dropout < 1)) {
    fail("model.dropout", "must be in [0, 1), got " + num(spec.dropout));
  }
  spec.kv_heads = m.kv_heads() == 0 ? spec.heads : m.kv_heads();
  spec.ffn_hidden = m.ffn_hidden() == 0 ? 4 * spec.hidden : m.ffn_hidden();

  if (spec.hidden % spec.heads != 0) {
    fail("model.heads", "heads = " + num(spec.heads) + " must divide model.hidden = " + num(spec.hidden) +
                            see("model.hidden") + " (each head gets hidden/heads dimensions)");
  }
  if (spec.heads % spec.kv_heads != 0) {
    fail("model.kv_heads", "kv_heads = " + num(spec.kv_heads) + " must divide model.heads = " +
                               num(spec.heads) + see("model.heads") +
                               " (grouped-query attention shares each kv head among heads/kv_heads heads)");
  }
  return spec;
}

}  // namespace tandem
