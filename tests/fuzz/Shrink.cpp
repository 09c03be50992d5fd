//===- Shrink.cpp - shrinking a failing recipe ----------------------------===//
//
// Greedy delta debugging on the recipe: each round proposes smaller
// variants (one output fewer, a node bypassed by one of its operands, a
// node replaced by a fresh input, a dim made 1 or halved, an input made
// f32), takes the first that still fails the same way, and starts again.
// Candidates that do not build (a bypass that no longer broadcasts) are
// skipped without calling the predicate.
//
//===----------------------------------------------------------------------===//

#include "Recipe.h"

#include <algorithm>

namespace kfuse::fuzz {

namespace {

/// Drops the nodes no output depends on, renumbering the rest.
Recipe compact(const Recipe &recipe) {
  std::vector<bool> live(recipe.nodes.size(), false);
  for (int o : recipe.outputs)
    live[o] = true;
  for (int i = int(recipe.nodes.size()) - 1; i >= 0; --i)
    if (live[i])
      for (int o : recipe.nodes[i].operands)
        live[o] = true;
  Recipe out = recipe;
  out.nodes.clear();
  std::vector<int> renumber(recipe.nodes.size(), -1);
  for (size_t i = 0; i < recipe.nodes.size(); ++i) {
    if (!live[i])
      continue;
    Node n = recipe.nodes[i];
    for (int &o : n.operands)
      o = renumber[o];
    renumber[i] = int(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (int &o : out.outputs)
    o = renumber[o];
  return out;
}

/// `recipe` with every use of node `from` reading node `to` instead.
Recipe bypass(const Recipe &recipe, int from, int to) {
  Recipe out = recipe;
  for (size_t i = from + 1; i < out.nodes.size(); ++i)
    for (int &o : out.nodes[i].operands)
      if (o == from)
        o = to;
  for (int &o : out.outputs)
    if (o == from)
      o = to;
  // Two outputs of one node are one output.
  std::vector<int> unique;
  for (int o : out.outputs)
    if (std::find(unique.begin(), unique.end(), o) == unique.end())
      unique.push_back(o);
  out.outputs = unique;
  return compact(out);
}

/// `recipe` with node `i` replaced by an input of its shape and dtype.
Recipe asInput(const Recipe &recipe, const BuiltGraph &built, int i) {
  Recipe out = recipe;
  Node n;
  n.kind = NodeKind::Input;
  n.dtype = built.nodeDTypes[i];
  for (int64_t size : built.nodeShapes[i]) {
    out.dims.push_back({size});
    n.dims.push_back(int(out.dims.size()) - 1);
  }
  out.nodes[i] = n;
  return compact(out);
}

std::vector<Recipe> candidates(const Recipe &recipe, const BuiltGraph &built) {
  std::vector<Recipe> out;
  for (size_t k = 0; recipe.outputs.size() > 1 && k < recipe.outputs.size();
       ++k) {
    Recipe fewer = recipe;
    fewer.outputs.erase(fewer.outputs.begin() + k);
    out.push_back(compact(fewer));
  }
  for (int i = int(recipe.nodes.size()) - 1; i >= 0; --i) {
    const Node &n = recipe.nodes[i];
    for (int o : n.operands)
      out.push_back(bypass(recipe, i, o));
    if (n.kind != NodeKind::Input && !n.operands.empty())
      out.push_back(asInput(recipe, built, i));
  }
  for (size_t d = 0; d < recipe.dims.size(); ++d) {
    const PoolDim &dim = recipe.dims[d];
    if (dim.factorA >= 0 || dim.size <= 1)
      continue;
    for (int64_t smaller : {int64_t(1), dim.size / 2, dim.size - 1}) {
      if (smaller < 1 || smaller >= dim.size)
        continue;
      Recipe c = recipe;
      c.dims[d].size = smaller;
      out.push_back(c);
    }
  }
  for (size_t i = 0; i < recipe.nodes.size(); ++i)
    if (recipe.nodes[i].kind == NodeKind::Input &&
        recipe.nodes[i].dtype != DType::f32) {
      Recipe c = recipe;
      c.nodes[i].dtype = DType::f32;
      out.push_back(c);
    }
  return out;
}

} // namespace

Recipe shrink(Recipe recipe,
              const std::function<bool(const Recipe &)> &stillFails,
              int maxAttempts) {
  recipe = compact(recipe);
  int attempts = 0;
  for (bool progress = true; progress && attempts < maxAttempts;) {
    progress = false;
    Expected<BuiltGraph> built = build(recipe);
    if (!built)
      break;
    for (Recipe &candidate : candidates(recipe, *built)) {
      if (!build(candidate))
        continue;
      if (++attempts > maxAttempts)
        break;
      if (stillFails(candidate)) {
        recipe = std::move(candidate);
        progress = true;
        break;
      }
    }
  }
  return recipe;
}

} // namespace kfuse::fuzz
