//===- ignc-fault.cpp - ignc with the test-only fault target --------------===//

#include "FaultTarget.h"
#include "IgncMain.h"
#include "ign/Target/TargetRegistry.h"

int main(int argc, char **argv) {
  ign::target::registerBuiltinTargets();
  ign::fault::registerFaultTarget(); // the one registration line
  return ign::igncMain(argc, argv);
}
