//===- RowKernel.h - kf-lower-to-gpu's row template's class -----*- C++ -*-===//
//
// Internal to kf-lower-to-gpu: the template of RowKernels.cpp, whose
// kernels that also sum column partials (kf-fuse-column-sums: a
// LayerNorm backward's weight and bias gradients) loop over their rows in
// RowKernelPartials.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_ROWKERNEL_H
#define KFUSE_CODEGEN_ROWKERNEL_H

#include "codegen/templates/KernelTemplates.h"
#include "ir/KFDialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace kfuse::kf::detail {

using llvm::ArrayRef;
using llvm::function_ref;
using mlir::Block;
using mlir::BlockArgument;
using mlir::Location;
using mlir::LogicalResult;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;


/// The lanes of one row a thread owns: `chunks` vectors of `vec` elements,
/// at columns (chunk * threads + tid) * vec + lane. Lanes past the row's
/// end are not `valid`, and read column 0 instead (a whole vector from
/// column 0 where `vec` divides the row); `first` is the vector's first
/// column as it is (where padded rows are written).
struct RowLanes {
  SmallVector<Value> columns, linears, valid;
  /// The first lane's column before a vector past the row is moved back
  /// into it: distinct for every thread and chunk.
  Value first;
};

using LaneFn = function_ref<Value(Value, const RowLanes &, int64_t)>;

class RowKernel {
public:
  RowKernel(KernelEmitter &e, RowSpace space, RowTilingAttr tiling);
  LogicalResult emit();

private:
  LogicalResult emitRow(Value row);
  /// emit() for a kernel with column partials: a block per partial,
  /// `group` its place among the rows a block takes at once.
  LogicalResult emitWithPartials(Value group);
  /// emit() for rows split over clusters (row_tiling's `cluster`): each
  /// cluster takes rows in turn, each of its blocks a share of the row.
  LogicalResult emitClusterRows();
  /// A block-wide reduction of each of `partials` (this thread's), then,
  /// for rows split over a cluster, of the cluster's blocks' results:
  /// every thread of the row gets the row's values.
  SmallVector<Value>
  rowReduce(ArrayRef<Value> partials, ArrayRef<Value> identities,
            function_ref<Value(unsigned, Value, Value)> combine);
  Value rowReduce(Value partial, Value identity,
                  function_ref<Value(Value, Value)> combine);
  /// Combines each block's `values` over the row's cluster, through the
  /// blocks' distributed shared memory, in the order of their ranks.
  SmallVector<Value>
  clusterReduce(ArrayRef<Value> values,
                function_ref<Value(unsigned, Value, Value)> combine);
  /// Whether emitWithPartials loads each row's streamed vectors one
  /// iteration ahead (whole vectors of at most 16 bytes).
  bool prefetchesRows() const;
  /// The streamed inputs' raw vectors of row `r`, chunk by chunk, then
  /// each row scalar input's value there, as `prefetched` holds them.
  SmallVector<Value> loadRowVectors(Value r);
  /// `sums` (a running sum per partial, chunk and lane) plus this row's
  /// values of each partial's source.
  SmallVector<Value> accumulate(ValueRange sums);
  /// Writes each partial's running sums, added up over the block's rows
  /// first, as row `block` of its result.
  void storePartials(ValueRange sums, Value block, Value group);
  /// Stores `values`, the lanes `lanes` of a partial's row, into result
  /// `result`: lanes past the row's end are not stored.
  void storePartialLanes(unsigned result, const RowLanes &lanes,
                         ArrayRef<Value> values);
  bool isPartial(unsigned result) const {
    return llvm::any_of(partials,
                        [&](const Partial &p) { return p.result == result; });
  }
  /// The shared-memory copy of each streamed input's row (`inShared`).
  void allocateStage();
  /// The first pass of an `inShared` row: the streamed inputs' vectors,
  /// all chunks unrolled, from global into shared memory.
  void stageRow();
  /// The lanes of chunk `c` (an index, constant when unrolled); loads the
  /// streamed inputs there unless `load` is false.
  RowLanes lanesOf(Value c, bool load = true);
  /// Runs `fn` on every lane of the row, threading `acc` through.
  Value overRow(Value acc, LaneFn fn);
  Value element(Value tensor, const RowLanes &lanes, int64_t k);
  /// This thread's part of a reduction of `map` of every element of
  /// `tensor`'s row, from `identity`.
  Value threadPartial(Value tensor, ReduceKind kind, Value identity,
                      function_ref<Value(Value)> map);
  /// A block-wide reduction of `map` of every element of `tensor`'s row.
  Value reduceRow(Value tensor, ReduceKind kind, Type type,
                  function_ref<Value(Value)> map);
  /// The reductions `round`, in one block round.
  LogicalResult emitReduces(ArrayRef<ReduceOp> round);
  /// Groups the row's reductions into rounds (rows in registers): each
  /// reduction joins the round of the first one before it whose result
  /// its input does not need, nor any reduction or softmax after that.
  void planRounds();
  /// Whether `v` needs the row value of a reduction or softmax that is
  /// not before `op`.
  bool needsRowValueFrom(Value v, Operation *op) const;
  void emitOnlineSoftmax(SoftmaxOp softmax);
  /// The row's max of `x` and the sum of exp(x - max), in one pass.
  std::pair<Value, Value> onlineMaxAndSum(Value x);
  /// `max` and its shifted-exponential sum `sum` (shiftedExpSumOf).
  void emitOnlineLogSumExp(ReduceOp max, ReduceOp sum);
  void emitSoftmaxInRegisters(SoftmaxOp softmax);
  /// Row-shaped outputs at every lane, row scalars once per row.
  LogicalResult storeOutputs();
  /// Result `i` (padded to `stride`): whole vectors up to the stride.
  void storePadded(unsigned i, Value value, int64_t stride);

  KernelEmitter &e;
  OpBuilder &b;
  Location l;
  RowSpace space;
  /// A row's threads (`threads` of the block's `rowsPerBlock` rows), and
  /// the blocks of a cluster that share a row.
  int64_t threads, vec, chunks, rowsPerBlock, cluster;
  /// `ragged`: the lanes reach past the row's end; `wholeVectors`: each
  /// vector lies wholly inside the row or wholly past it.
  bool inRegisters, inShared, ragged, wholeVectors;
  /// `tid` is the thread's place among its row's threads in the block;
  /// `laneTid` among the row's threads in its cluster (the block's `rank`
  /// in it, times `threads`, plus `tid`), which deals out the lanes.
  Value scratch, tid, laneTid, rank;
  /// Which of two exchange slots a cluster's reductions of the row use:
  /// rows in turn take turns, so that a block sending the next row's values
  /// never overwrites a slot a slower block is still reading.
  Value rowParity;
  Block &body;
  YieldOp yield;
  /// Row-shaped inputs read only lane by lane (elementwise ops, the row's
  /// reductions and softmaxes): loaded a vector at a time.
  SmallVector<BlockArgument> streamed;
  /// With `inShared`: each streamed input's row in shared memory, and
  /// whether the row being emitted is already there.
  SmallVector<Value> stage;
  bool rowStaged = false;
  // The row being emitted, and whether it exists (the last block's group
  // may reach past the last row: those threads compute the last row again,
  // taking part in its shuffles, and store nothing).
  Value row, rowBase, rowExists;
  SmallVector<RowLanes> unrolled;
  /// Inputs of one value a row (a LayerNorm's saved mean), read by the
  /// row's broadcasts.
  SmallVector<BlockArgument> rowScalars;
  /// The row's streamed vectors, loaded before the row is emitted (chunk
  /// c's input i at c * streamed.size() + i), then its `rowScalars`; or
  /// empty: lanesOf and the broadcasts load them.
  SmallVector<Value> prefetched;
  /// Sums computed with their max by emitOnlineLogSumExp.
  llvm::SmallPtrSet<Operation *, 2> computedSums;
  /// planRounds' rounds of more than one reduction, by their first, and
  /// the reductions computed in the round of an earlier one.
  llvm::DenseMap<Operation *, SmallVector<ReduceOp>> rounds;
  llvm::SmallPtrSet<Operation *, 4> inEarlierRound;
  /// The column partials the kernel yields: the result and the row-shaped
  /// value it sums.
  struct Partial {
    unsigned result;
    Value source;
  };
  SmallVector<Partial> partials;
  LogicalResult status = mlir::success();
};

} // namespace kfuse::kf::detail

#endif // KFUSE_CODEGEN_ROWKERNEL_H
