//===- AttachTarget.cpp - kf-attach-target: record the target GPU ---------===//
//
// The one place the compiler's target options become IR: `kf.target` on
// the module, which the passes after it read (TargetAttr::of) instead of
// each taking the same options again.
//
//===----------------------------------------------------------------------===//

#include "ir/KFDialect.h"
#include "transforms/Passes.h"

namespace kfuse::kf {
#define GEN_PASS_DEF_KFATTACHTARGETPASS
#include "transforms/Passes.h.inc"
} // namespace kfuse::kf

using namespace mlir;
using namespace kfuse::kf;

namespace {

struct KFAttachTargetPass
    : public kfuse::kf::impl::KFAttachTargetPassBase<KFAttachTargetPass> {
  using KFAttachTargetPassBase::KFAttachTargetPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto target = TargetAttr::getChecked(
        [&] { return module.emitError("kf-attach-target: "); },
        module.getContext(), StringRef(chip.getValue()), sms.getValue(),
        aligned.getValue(), wgmma.getValue(), allowTF32.getValue(),
        unorderedAdds.getValue());
    if (!target)
      return signalPassFailure();
    module->setAttr(TargetAttr::moduleAttrName, target);
  }
};

} // namespace
