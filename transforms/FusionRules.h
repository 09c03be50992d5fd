//===- FusionRules.h - kf-fuse's rules: what may share a kernel -*- C++ -*-===//
//
// Which op may join which kernel under construction, and why: the
// legality half of kf-fuse, shared by the partitioning in Fuse.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_TRANSFORMS_FUSIONRULES_H
#define KFUSE_TRANSFORMS_FUSIONRULES_H

#include "analysis/KernelAnalysis.h"
#include "ir/KFDialect.h"

#include <optional>
#include <string>
#include <utility>

namespace kfuse::kf::fusion {

/// What a kernel under construction computes over.
struct Cluster {
  KernelKind kind;
  int64_t elements;                ///< of the root
  std::optional<RowSpace> rows;    ///< set once a row op joined
  mlir::Operation *root = nullptr; ///< the op whose result the kernel yields
  bool onlyViews = false;          ///< every op is a reshape, transpose, slice
  bool writesOutputs = false;      ///< also writes graph outputs its ops read
  /// Some of those outputs have fewer elements than the root (per row):
  /// a matmul's epilogue stores only values of its output's shape.
  bool writesRowOutputs = false;
  /// A column reduction (over the leading dims) or an index_add that the
  /// ops from it to the root are the elementwise epilogue of.
  mlir::Operation *epilogueOf = nullptr;
};

/// A splat constant costs nothing to recompute: every kernel gets its own.
bool isFreeConstant(mlir::Operation *op);
int64_t numElements(mlir::Value v);

/// Whether `op` reads a matmul's result where the matmul template has it
/// (its own output elements: elementwise ops, reshapes that keep the last
/// dim).
bool readsAccumulatorsInPlace(mlir::Operation *op);

/// Whether an elementwise kernel (a matmul's epilogue included) can also
/// write `op`'s result where it has the kernel's shape: an elementwise op
/// or the matmul itself.
bool isElementwiseOutput(mlir::Operation *op);

/// Can `op` (whose users are all in `c`) be computed inside `c`? Returns
/// the reason either way; on success `c` may become a row cluster.
std::pair<bool, std::string> canJoin(mlir::Operation *op, Cluster &c);

/// Can the kernel of `c`, which `op` joins as `why` says, also write
/// `op`'s result (a graph output)?
std::pair<bool, std::string> canAlsoWrite(mlir::Operation *op,
                                          Cluster &c,
                                          const std::string &why);

} // namespace kfuse::kf::fusion

#endif // KFUSE_TRANSFORMS_FUSIONRULES_H
