//===- SystolicDevice.h - the simulator as libignrt's systolic driver -*- C++
//-*-//
//
// The runtime side of --target=systolic: a device driver for libignrt that
// runs a bundle's systolic kernels on the cycle-level simulator. It stages
// the operands the way a driver for the real chip would (im2col, transposes,
// int8 quantization with per-tensor scales for int8 machines), runs the
// kernel's ISA program functionally, and reports the simulated cycles.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_SYSTOLICDEVICE_H
#define IGN_TARGETS_SYSTOLIC_SYSTOLICDEVICE_H

namespace ign::systolic {

/// Registers the simulator as libignrt's driver for target "systolic"
/// (idempotent; process-wide).
void registerSystolicDevice();

} // namespace ign::systolic

#endif
