//===- IgnOps.td - all ign ops, one file per family ------------------------===//

#ifndef IGN_OPS_TD
#define IGN_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"
include "ign/Dialect/Ign/IR/IgnElementwiseOps.td"
include "ign/Dialect/Ign/IR/IgnContractionOps.td"
include "ign/Dialect/Ign/IR/IgnNormalizationOps.td"
include "ign/Dialect/Ign/IR/IgnPoolingOps.td"
include "ign/Dialect/Ign/IR/IgnReductionOps.td"
include "ign/Dialect/Ign/IR/IgnDataMovementOps.td"
include "ign/Dialect/Ign/IR/IgnRecurrentOps.td"
include "ign/Dialect/Ign/IR/IgnKernelOps.td"
include "ign/Dialect/Ign/IR/IgnControlFlowOps.td"

#endif // IGN_OPS_TD
