//===- MinCut.cpp - max flow by Dinic's algorithm -------------------------===//

#include "autodiff/MinCut.h"

#include <algorithm>
#include <deque>

namespace kfuse::autodiff {

void MinCut::addEdge(size_t from, size_t to, int64_t capacity) {
  adjacency[from].push_back(edges.size());
  edges.push_back({to, capacity});
  adjacency[to].push_back(edges.size());
  edges.push_back({from, 0});
}

/// Levels by BFS over edges with capacity left; whether the sink is reached.
bool MinCut::levelGraph(size_t source, size_t sink) {
  level.assign(adjacency.size(), -1);
  level[source] = 0;
  std::deque<size_t> queue = {source};
  while (!queue.empty()) {
    size_t node = queue.front();
    queue.pop_front();
    for (size_t e : adjacency[node])
      if (edges[e].capacity > 0 && level[edges[e].to] < 0) {
        level[edges[e].to] = level[node] + 1;
        queue.push_back(edges[e].to);
      }
  }
  return level[sink] >= 0;
}

/// Up to `limit` more flow from `node` to the sink along increasing levels.
int64_t MinCut::push(size_t node, size_t sink, int64_t limit) {
  if (node == sink)
    return limit;
  for (; next[node] < adjacency[node].size(); ++next[node]) {
    size_t e = adjacency[node][next[node]];
    Edge &edge = edges[e];
    if (edge.capacity <= 0 || level[edge.to] != level[node] + 1)
      continue;
    int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity));
    if (pushed > 0) {
      edge.capacity -= pushed;
      edges[e ^ 1].capacity += pushed;
      return pushed;
    }
  }
  return 0;
}

std::vector<bool> MinCut::sourceSide(size_t source, size_t sink,
                                     Tie tie) {
  while (levelGraph(source, sink)) {
    next.assign(adjacency.size(), 0);
    while (int64_t pushed = push(source, sink, kInfinite))
      total += pushed;
  }
  std::vector<bool> side(adjacency.size());
  if (tie == Tie::nearSource) {
    // After the last BFS, the nodes it reached are the source side.
    for (size_t n = 0; n < adjacency.size(); ++n)
      side[n] = level[n] >= 0;
    return side;
  }
  // The nodes that still reach the sink along edges with capacity left
  // are the sink side; every other node is on the source's.
  std::vector<bool> reachesSink(adjacency.size());
  reachesSink[sink] = true;
  std::deque<size_t> queue = {sink};
  while (!queue.empty()) {
    size_t node = queue.front();
    queue.pop_front();
    for (size_t e : adjacency[node]) {
      size_t from = edges[e].to;
      if (edges[e ^ 1].capacity > 0 && !reachesSink[from]) {
        reachesSink[from] = true;
        queue.push_back(from);
      }
    }
  }
  for (size_t n = 0; n < adjacency.size(); ++n)
    side[n] = !reachesSink[n];
  return side;
}

} // namespace kfuse::autodiff
