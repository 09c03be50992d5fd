//===- FaultTest.cpp - a kernel that faults is reported, not hung on -----===//
//
// A device fault spoils the CUDA context for the rest of the process, so
// the test runs in a child process (a death test, "threadsafe" style: the
// child re-executes this binary and starts CUDA afresh). The child must see
// a clear error for the fault, then a clear refusal from every later call,
// and exit on its own within the alarm.
//
//===----------------------------------------------------------------------===//

#include "kfuse/Testing.h"
#include "kfuse/kfuse.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

using namespace kfuse;

namespace {

bool contains(const std::string &text, const char *part) {
  return text.find(part) != std::string::npos;
}

/// The child's side: exits 0 only if every expectation holds.
[[noreturn]] void faultAndCarryOn() {
  alarm(60); // a hang is a failure: SIGALRM ends the child
  Graph g("after_fault");
  g.output("y", exp(g.input("x", DType::f32, {1024})));
  Expected<Executable> exe = Compiler().compile(g);
  HostTensor x = HostTensor::random(DType::f32, {1024}, 1);
  bool ranBefore = exe && exe->runOnHost({x});
  Status fault = kfuse::testing::launchOutOfBoundsStore();
  std::string message = fault.message();
  Expected<std::vector<HostTensor>> after = exe->runOnHost({x});
  std::string refusal = after ? "" : after.error().message();
  bool ok = ranBefore && !fault && contains(message, "ILLEGAL_ADDRESS") &&
            contains(message, "unusable") && !after &&
            contains(refusal, "unusable after an earlier error") &&
            contains(refusal, "ILLEGAL_ADDRESS");
  std::fprintf(stderr, "fault: %s\nlater call: %s\n%s\n", message.c_str(),
               refusal.c_str(), ok ? "fault reported" : "NOT AS EXPECTED");
  std::_Exit(ok ? 0 : 1);
}

TEST(GpuFault, OutOfBoundsStoreIsReportedAndTheContextRetired) {
  if (Expected<DeviceInfo> d = device(); !d)
    GTEST_SKIP() << "no GPU: " << d.error().message();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(faultAndCarryOn(), ::testing::ExitedWithCode(0),
              "fault reported");
}

} // namespace
