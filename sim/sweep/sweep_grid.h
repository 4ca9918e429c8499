// The points of a sweep: the cross product of the --vary axes ("strategy.tp=1,2,4"), in the
// order the axes were given, the first axis varying slowest (nested loops written left to right):
//   --vary cluster.gpus=1,2 --vary strategy.tp=1,2  ->  (1,1) (1,2) (2,1) (2,2)
// A point is the list of --set assignments that turn the scenario into it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tandem::sweep {

struct VaryAxis {
  std::string key;                  // a scenario field, "part.field" as --set takes it
  std::vector<std::string> values;  // as written, in order; none empty, none repeated
};

// Parses one --vary argument "key=v1,v2,...". Throws Error naming the flag on bad syntax: no '=',
// an empty key or value, a key that is not part.field, a value listed twice.
VaryAxis parse_vary(const std::string& argument);

class SweepGrid {
 public:
  // Throws Error when no axis is given or two axes name the same key.
  explicit SweepGrid(std::vector<VaryAxis> axes);

  const std::vector<VaryAxis>& axes() const { return axes_; }
  size_t size() const { return size_; }
  // The value index of each axis for point i (i < size()).
  std::vector<size_t> coordinates(size_t i) const;
  // The point's values, one per axis, and its --set assignments ("key=value").
  std::vector<std::string> values(size_t i) const;
  std::vector<std::string> assignments(size_t i) const;
  // The axis varying cluster.gpus, or -1.
  int gpus_axis() const;

 private:
  std::vector<VaryAxis> axes_;
  size_t size_ = 1;
};

}  // namespace tandem::sweep
