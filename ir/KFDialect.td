//===- KFDialect.td - the kf dialect -----------------------*- tablegen -*-===//

#ifndef KF_DIALECT
#define KF_DIALECT

include "mlir/IR/OpBase.td"

def KF_Dialect : Dialect {
  let name = "kf";
  let cppNamespace = "::kfuse::kf";
  let summary = "kfuse tensor-expression graphs";
  let description = [{
    Ops over ranked tensors with value semantics. Shapes must match exactly;
    the frontend makes NumPy broadcasting explicit with `kf.broadcast`.
    Symbolic dims are `?` in types; their names live in `kf.dim_symbols`
    (on function arguments and on ops that create a shape) and are bound to
    sizes by kf-specialize. The decisions the passes make about a fused
    kernel are typed attributes (KFAttrs.td) on its kf.kernel, and the
    target they decide for is `kf.target` on the module.
  }];
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1;
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// Adds the decision attributes (KFAttrs.cpp).
    void registerAttributes();
  }];
}

#endif // KF_DIALECT
