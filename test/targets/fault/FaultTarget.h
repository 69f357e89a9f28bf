//===- FaultTarget.h - a test-only target that fails on request -*- C++ -*-===//

#ifndef IGN_TEST_TARGETS_FAULT_FAULTTARGET_H
#define IGN_TEST_TARGETS_FAULT_FAULTTARGET_H

namespace ign::fault {

/// Registers target "fault" (FaultTarget.cpp).
void registerFaultTarget();

} // namespace ign::fault

#endif
