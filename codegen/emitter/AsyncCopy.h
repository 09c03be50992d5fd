//===- AsyncCopy.h - mbarriers and TMA copies of warp-specialised blocks -*- C++
//-*-===//
//
// The pieces a warp-specialised kernel template (MatmulTmaPipeline.cpp,
// AttentionTmaPipeline.cpp) builds its pipeline from: one thread of a copying
// warpgroup moves boxes of a tensor map into shared memory with the TMA,
// and mbarriers hand each stage between it and the warpgroups that read it.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_ASYNCCOPY_H
#define KFUSE_CODEGEN_ASYNCCOPY_H

#include "mlir/IR/Builders.h"

namespace kfuse::kf::async {

/// Registers a thread of each of the two computing warpgroups and of the
/// copying one take (setmaxnreg) from the 168 a thread of 384 is launched
/// with. setmaxnreg.inc waits until setmaxnreg.dec has released what it
/// takes, so the two must balance: 2 x 128 x (computing - 168) = 128 x
/// (168 - copying).
struct RegisterSplit {
  int32_t computing, copying;
  constexpr bool balanced() const {
    return 2 * (computing - 168) == 168 - copying;
  }
};
/// The matmul's and the forward attention's: 40 registers leave the
/// copying thread room for its loop's addresses.
constexpr RegisterSplit kRegisterSplit{232, 40};
/// FlashAttention 3's: the backward's computing warpgroups hold three
/// accumulators (ptxas spilled 28 bytes a thread at d128 with 232, none
/// with 240).
constexpr RegisterSplit kWideRegisterSplit{240, 24};
static_assert(kRegisterSplit.balanced() && kWideRegisterSplit.balanced());

/// Splits a warp-specialised block: threads [0, `computing`) raise their
/// registers to `split.computing` and run `compute`; the copying warpgroup
/// past them lowers its registers to `split.copying`, and its first thread
/// runs `copy`. Both at the builder's insertion point.
mlir::LogicalResult
splitRoles(mlir::OpBuilder &b, mlir::Location l, mlir::Value tid,
           int64_t computing, llvm::function_ref<mlir::LogicalResult()> copy,
           llvm::function_ref<mlir::LogicalResult()> compute,
           RegisterSplit split = kRegisterSplit);

/// Thread 0 (`tid`) initialises the block's mbarriers (`init`, through
/// initBarrier) and fences them; the block then waits for it.
void initBarriers(mlir::OpBuilder &b, mlir::Location l, mlir::Value tid,
                  llvm::function_ref<void()> init);
/// An mbarrier whose phases complete on `arrivals` arrivals (and the bytes
/// announced to it).
void initBarrier(mlir::OpBuilder &b, mlir::Location l, mlir::Value barrier,
                 int32_t arrivals);

/// A pointer (address space 3) to shared-memory byte address `address`
/// (an index).
mlir::Value sharedPointer(mlir::OpBuilder &b, mlir::Location l,
                          mlir::Value address);

/// Waits until mbarrier `barrier` completes its phase of parity `phase`
/// (an i32, 0 or 1).
void waitParity(mlir::OpBuilder &b, mlir::Location l, mlir::Value barrier,
                mlir::Value phase);

/// One TMA copy of the box of tensor map `map` (a kernel parameter) at
/// element coordinates `coords` (indices, innermost dim first) into shared
/// memory at `dst`, its bytes counted on mbarrier `barrier`.
void loadBox(mlir::OpBuilder &b, mlir::Location l, mlir::Value map,
             mlir::ValueRange coords, mlir::Value dst, mlir::Value barrier);

/// One bulk copy (not a tensor map's) of `bytes` (an i32, a multiple of
/// 16) from global address `src` (an i64 from globalAddress, 16-byte
/// aligned) into shared memory at `dst`, counted on mbarrier `barrier`.
void loadBulk(mlir::OpBuilder &b, mlir::Location l, mlir::Value dst,
              mlir::Value src, mlir::Value bytes, mlir::Value barrier);

/// The global address (an i64) of the element `offset` (an index) places
/// past the first element of global `memref`.
mlir::Value globalAddress(mlir::OpBuilder &b, mlir::Location l,
                          mlir::Value memref, mlir::Value offset);
/// Adds `bytes` (an index, a multiple of 16) of f32s from shared memory at
/// byte address `from` (an index) into global memory at address `to` (from
/// globalAddress), both 16-byte aligned, with one bulk asynchronous
/// reduction (cp.reduce.async.bulk ... add.f32), committed as a bulk group
/// of the issuing thread.
void addToGlobalInBulk(mlir::OpBuilder &b, mlir::Location l, mlir::Value to,
                       mlir::Value from, mlir::Value bytes);
/// The issuing thread waits until its bulk groups have read their shared
/// memory (`readOnly`) or are complete.
void waitBulkGroups(mlir::OpBuilder &b, mlir::Location l, bool readOnly);

} // namespace kfuse::kf::async

#endif // KFUSE_CODEGEN_ASYNCCOPY_H
