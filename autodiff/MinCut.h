//===- MinCut.h - a minimum s-t cut for splitVJP's save-or-recompute ------===//
//
// What splitVJP saves for the backward is a minimum cut (the choice
// AOTAutograd's min-cut partitioner makes): each forward value is an edge
// whose capacity is its bytes, and the cut separates what the forward must
// compute from what the backward reads. Max flow by Dinic's algorithm
// (blocking flows along BFS levels). Written here, forty lines, because
// neither LLVM nor the project's other dependencies have a max-flow
// routine (Boost.Graph's would be the one to take if it were a dependency).
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_AUTODIFF_MINCUT_H
#define KFUSE_AUTODIFF_MINCUT_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kfuse::autodiff {

class MinCut {
public:
  /// More than any sum of finite capacities the callers add.
  static constexpr int64_t kInfinite = INT64_MAX / 4;

  explicit MinCut(size_t nodes) : adjacency(nodes) {}
  void addEdge(size_t from, size_t to, int64_t capacity);
  /// Which of the minimum cuts of equal capacity to take: the one nearest
  /// the source (the smallest source side) or nearest the sink.
  enum class Tie { nearSource, nearSink };
  /// Pushes the maximum flow from `source` to `sink`; then, per node,
  /// whether it lies on the source's side of the minimum cut `tie` picks
  /// (nearSource: the nodes reachable from the source along edges with
  /// capacity left; nearSink: those that cannot reach the sink so).
  /// Deterministic: the same edges in the same order give the same side.
  std::vector<bool> sourceSide(size_t source, size_t sink,
                               Tie tie = Tie::nearSource);
  /// The flow pushed: the cut's capacity.
  int64_t flow() const { return total; }

private:
  struct Edge {
    size_t to;
    int64_t capacity; ///< left
  };
  bool levelGraph(size_t source, size_t sink);
  int64_t push(size_t node, size_t sink, int64_t limit);

  std::vector<Edge> edges; ///< each followed by its reverse
  std::vector<std::vector<size_t>> adjacency;
  std::vector<int> level;
  std::vector<size_t> next; ///< per node, the first edge not yet saturated
  int64_t total = 0;
};

} // namespace kfuse::autodiff

#endif // KFUSE_AUTODIFF_MINCUT_H
