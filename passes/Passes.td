//===- Passes.td - kfuse passes ----------------------------*- tablegen -*-===//
//
// Every kf pass: def KF<Name>Pass, argument kf-<name> (the names of
// design.md's pipeline), implemented in passes/<Name>.cpp and tested in
// tests/lit/passes/kf-<name>.mlir.
// Pass order lives in Pipeline.cpp only.
//
//===----------------------------------------------------------------------===//

#ifndef KF_PASSES
#define KF_PASSES

include "mlir/Pass/PassBase.td"

def KFSpecializePass
    : Pass<"kf-specialize", "mlir::ModuleOp"> {
  let summary = "Bind symbolic dims to the concrete shapes of one call";
  let description = [{
    The JIT step: a graph written for `tensor<?x64xf32>` with its dim named
    `M` is compiled for the shapes of the call at hand. Symbols are bound
    from `shapes` (one shape per function argument, in order) and from
    `bind` (explicit `NAME=SIZE` pairs); every result type is then
    recomputed by the ops' shape rules and `dim_symbols` annotations that
    are fully bound are dropped.

    Before, with shapes="128x64":
    ```mlir
    func.func @f(%x: tensor<?x64xf32> {kf.dim_symbols = ["M", ""]})
        -> tensor<?x64xf32> {
      %y = kf.exp %x : tensor<?x64xf32>
      return %y : tensor<?x64xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<128x64xf32>) -> tensor<128x64xf32> {
      %y = kf.exp %x : tensor<128x64xf32>
      return %y : tensor<128x64xf32>
    }
    ```
    A symbol bound to two sizes, a static dim given another size, or a
    symbol left unbound is an error naming the dim and both sizes.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "one shape per argument, e.g. 128x64 (a scalar is '')">,
    ListOption<"bind", "bind", "std::string",
               "symbol bindings NAME=SIZE, e.g. M=128">,
  ];
}

#endif // KF_PASSES
