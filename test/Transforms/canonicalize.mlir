// RUN: ign-opt %s --canonicalize --split-input-file | FileCheck %s

// No-op data movement folds away; transpose chains compose; reshape chains
// merge.
// CHECK-LABEL: func.func @noops
// CHECK-NEXT: return %arg0, %arg0, %arg0
func.func @noops(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = ign.transpose %x {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %u = ign.transpose %t {perm = [1, 0]} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %s = ign.slice %x {sizes = [2, 3], starts = [0, 0], steps = [1, 1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = ign.pad %x {pads = [0, 0, 0, 0]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %u, %s, %p : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @chains
// CHECK-NEXT: %[[T:.*]] = ign.transpose %arg0 {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[R:.*]] = ign.reshape %arg0 {shape = [24]}
// CHECK-NEXT: return %[[T]], %[[R]]
func.func @chains(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<24xf32>) {
  %a = ign.transpose %x {perm = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %b = ign.transpose %a {perm = [1, 2, 0]} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %c = ign.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %d = ign.reshape %c {shape = [24]} : (tensor<6x4xf32>) -> tensor<24xf32>
  return %b, %d : tensor<4x2x3xf32>, tensor<24xf32>
}
