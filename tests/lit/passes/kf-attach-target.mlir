// RUN: kfuse-opt %s --kf-attach-target="chip=sm_90a sms=114 aligned=true wgmma=true allow-tf32=true unordered-adds=true" | FileCheck %s
// RUN: kfuse-opt %s --kf-attach-target | FileCheck %s --check-prefix=DEFAULT
// RUN: not kfuse-opt %s --kf-attach-target="chip=sm_80 wgmma=true" 2>&1 | FileCheck %s --check-prefix=NO-WGMMA
// RUN: not kfuse-opt %s --kf-attach-target="sms=0" 2>&1 | FileCheck %s --check-prefix=NO-SMS

// The compiler's target options become one attribute on the module, which
// the passes after it read; parameters at their defaults are left out.
// CHECK: module attributes {kf.target = #kf.target<chip = "sm_90a", multiprocessors = 114, aligned = true, wgmma = true, allowTF32 = true, unorderedAdds = true>}
// DEFAULT: module attributes {kf.target = #kf.target<>}
// A target the options contradict is refused, naming the option.
// NO-WGMMA: error: kf-attach-target: wgmma on chip "sm_80": only sm_90 and sm_90a have it
// NO-SMS: error: kf-attach-target: multiprocessors = 0: needs 1 to 4096
func.func @f() {
  return
}
