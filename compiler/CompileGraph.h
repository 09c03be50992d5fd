//===- CompileGraph.h - one specialisation of a graph to a Plan -*- C++ -*-===//
//
// The staged compile behind Compiler, kfusec and the tests: kf graph text
// and the call's input shapes in, a runtime Plan (kernels, buffers, PTX and
// the text of every stage) out.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_COMPILER_COMPILEGRAPH_H
#define KFUSE_COMPILER_COMPILEGRAPH_H

#include "kfuse/Compiler.h"
#include "runtime/Plan.h"

#include <functional>

namespace mlir {
class PassManager;
}

namespace kfuse::compiler {

struct CompileRequest {
  std::string graphText;
  /// One shape per graph input; empty keeps the graph's own (static) shapes.
  std::vector<std::vector<int64_t>> shapes;
  std::string arch = "sm_90";
  bool fused = true;
  bool padRows = true; ///< run kf-pad
  bool allowTF32 = false; ///< f32 matmuls may use TF32 tensor cores
  bool splitK = true;     ///< run kf-split-k
  bool splitKeys = true;  ///< run kf-split-keys
  bool deterministic = true; ///< else run kf-atomic-dq
  /// kf-promote-shared's `grad-tma` (CompileOptions::attentionGradTma).
  bool attentionGradTma = true;
  int64_t multiprocessors = 132;
  /// Every buffer starts on a 16-byte boundary: kernels may use 16-byte
  /// accesses. An alignment fact, so part of the cache key.
  bool aligned = true;
  /// Symbols of the graph's dims whose sizes the kernels take at run time
  /// (kf-runtime-extents); `shapes` hold the sizes to compile for. Where
  /// some kernel cannot, the compile fails and says why in `*refusal`.
  std::vector<std::string> runtimeSymbols;
  std::string *refusal = nullptr;
  /// The last stage to run.
  Stage stopAfter = Stage::PTX;
  /// Keep the text of the gpu and LLVM stages in Plan::dumps (the graph
  /// and fused stages, small, are always kept). Executables compile
  /// without it unless dumping to a directory, and compile again for
  /// those stages when asked (ExecutableImpl::fillDumps).
  bool printLateStages = true;
  /// Applied to every pass manager (kfusec: MLIR's IR-printing flags).
  std::function<void(mlir::PassManager &)> configure;
};

/// The stage names used as Plan::dumps keys and dump file names.
const char *stageName(Stage stage);

Expected<runtime::Plan> compileGraph(const CompileRequest &request);

/// kf-fuse's decision on every producer-consumer edge of the specialised
/// graph, with the reason: one line an edge, or a JSON array.
Expected<std::string> explainFusion(const CompileRequest &request, bool json);

} // namespace kfuse::compiler

#endif // KFUSE_COMPILER_COMPILEGRAPH_H
