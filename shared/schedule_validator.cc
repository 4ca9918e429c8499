#include "shared/schedule_validator.h"

#include <map>
#include <tuple>

#include "shared/error.h"
#include "shared/reference_executor.h"

namespace tandem {
namespace {

std::string at(const Program& p, const Task& t) {
  return "rank " + std::to_string(p.rank) + " task " + std::to_string(t.id) + ": ";
}

std::vector<BufferId> touched(const Task& t) {
  if (const Compute* c = std::get_if<Compute>(&t.op)) {
    std::vector<BufferId> b = c->inputs;
    b.insert(b.end(), c->outputs.begin(), c->outputs.end());
    return b;
  }
  if (const Collective* c = std::get_if<Collective>(&t.op)) return c->buffers;
  if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) return {m->buffer};
  if (const Copy* c = std::get_if<Copy>(&t.op)) return {c->src, c->dst};
  return {};
}

}  // namespace

std::vector<std::string> validate_program(const Program& p) {
  std::vector<std::string> problems;
  std::vector<char> live(p.buffers.size(), 0), ever_freed(p.buffers.size(), 0);
  auto root = [&](BufferId b) {
    while (p.buffers[b].view_of != kNoId) b = p.buffers[b].view_of;
    return b;
  };
  for (const Task& t : p.tasks) {
    for (TaskId d : t.deps)
      if (d >= t.id) problems.push_back(at(p, t) + "depends on later task " + std::to_string(d));
    if (const Alloc* a = std::get_if<Alloc>(&t.op)) {
      if (p.buffers.at(a->buffer).is_view()) problems.push_back(at(p, t) + "allocates a view");
      else if (live[a->buffer]) problems.push_back(at(p, t) + "allocates " + p.buffers[a->buffer].name + " twice");
      live[a->buffer] = 1;
      continue;
    }
    if (const Free* f = std::get_if<Free>(&t.op)) {
      if (!live[f->buffer]) problems.push_back(at(p, t) + "frees " + p.buffers.at(f->buffer).name + ", not allocated");
      live[f->buffer] = 0;
      ever_freed[f->buffer] = 1;
      continue;
    }
    for (BufferId b : touched(t)) {
      if (b >= p.buffers.size()) {
        problems.push_back(at(p, t) + "names buffer " + std::to_string(b) + " of " + std::to_string(p.buffers.size()));
        continue;
      }
      if (!live[root(b)]) problems.push_back(at(p, t) + "uses " + p.buffers[b].name + " while it is not allocated");
    }
  }
  for (const Buffer& b : p.buffers)
    if (!b.is_view() && live[b.id] && b.role == BufferRole::kActivation)
      problems.push_back("rank " + std::to_string(p.rank) + ": activation " + b.name + " is never freed");
  return problems;
}

std::vector<std::string> validate_schedule(const Schedule& s, size_t limit) {
  std::vector<std::string> problems;
  auto add = [&](std::string m) {
    if (problems.size() < limit) problems.push_back(std::move(m));
  };
  using Key = std::tuple<int, int, int>;  // (src, dst, tag)
  std::map<Key, std::vector<int64_t>> sends, recvs;
  struct Call {
    CollectiveOp op;
    ReduceOp reduce;
    int64_t bytes;
    int root;
    bool operator==(const Call& o) const {
      return op == o.op && reduce == o.reduce && bytes == o.bytes && root == o.root;
    }
  };
  std::map<std::pair<GroupId, int>, std::vector<Call>> calls;  // (group, rank) -> calls
  for (int r = 0; r < s.world_size(); ++r) {
    Program p = s.program(r);
    for (std::string& m : validate_program(p)) add(std::move(m));
    std::map<GroupId, Stream> stream_of;
    for (const Task& t : p.tasks) {
      if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
        if (m->is_send) sends[{r, m->peer, m->tag}].push_back(m->bytes);
        else recvs[{m->peer, r, m->tag}].push_back(m->bytes);
      } else if (const Collective* c = std::get_if<Collective>(&t.op)) {
        const ProcessGroup& g = s.group(c->group);
        if (std::find(g.ranks.begin(), g.ranks.end(), r) == g.ranks.end())
          add(at(p, t) + "collective on group " + std::to_string(c->group) + " it is not in");
        auto [it, fresh] = stream_of.emplace(c->group, t.stream);
        if (!fresh && it->second != t.stream)
          add(at(p, t) + "group " + std::to_string(c->group) + " used on two streams");
        calls[{c->group, r}].push_back({c->op, c->reduce, c->bytes, c->root});
      }
    }
  }
  for (const auto& [key, sizes] : sends) {
    auto it = recvs.find(key);
    const auto& [src, dst, tag] = key;
    const std::string pair = "messages " + std::to_string(src) + " -> " + std::to_string(dst) + " tag " + std::to_string(tag);
    if (it == recvs.end()) add(pair + ": " + std::to_string(sizes.size()) + " sends, no receive");
    else if (it->second != sizes) add(pair + ": sends and receives differ in count or bytes");
  }
  for (const auto& [key, sizes] : recvs)
    if (!sends.count(key))
      add("messages " + std::to_string(std::get<0>(key)) + " -> " + std::to_string(std::get<1>(key)) +
          ": receive without send");
  for (const ProcessGroup& g : s.groups()) {
    const auto first = calls.find({g.id, g.ranks.front()});
    for (int r : g.ranks) {
      auto it = calls.find({g.id, r});
      const bool same = (it == calls.end() && first == calls.end()) ||
                        (it != calls.end() && first != calls.end() && it->second == first->second);
      if (!same)
        add("group " + std::to_string(g.id) + " (" + to_string(g.kind) + "): rank " + std::to_string(r) +
            " issues different collectives than rank " + std::to_string(g.ranks.front()));
    }
  }
  if (problems.empty()) {
    try {
      run_reference(s, [](int, const Program&, const Task&) { return 1.0; });
    } catch (const Error& e) {
      add(e.what());
    }
  }
  return problems;
}

}  // namespace tandem
