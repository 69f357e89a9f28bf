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

// -----

// A resize at scale 1 whose coordinate transformation maps every pixel onto
// itself is its input, in any mode; tf_crop_and_resize (a crop) and
// tf_half_pixel_for_nn (a half-pixel shift) are not, nor is a scale other
// than 1 that rounds to the same size.
// CHECK-LABEL: func.func @resize_identity
// CHECK-SAME: (%[[X:.*]]: tensor<1x4x16x16xf32>)
// CHECK: %[[C:.*]] = ign.resize %[[X]] {{.*}}tf_half_pixel_for_nn
// CHECK: %[[S:.*]] = ign.resize %[[X]] {{.*}}scales = [1.000000e+00, 1.000000e+00, 1.010000e+00, 1.000000e+00]
// CHECK: return %[[X]], %[[X]], %[[C]], %[[S]]
func.func @resize_identity(%x: tensor<1x4x16x16xf32>) -> (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) {
  %a = ign.resize %x {mode = "cubic", sizes = [1, 4, 16, 16], scales = [1.0, 1.0, 1.0, 1.0]} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %b = ign.resize %x {mode = "linear", coordinate_transformation_mode = "align_corners", sizes = [1, 4, 16, 16], scales = [1.0, 1.0, 1.0, 1.0]} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %c = ign.resize %x {mode = "nearest", coordinate_transformation_mode = "tf_half_pixel_for_nn", sizes = [1, 4, 16, 16], scales = [1.0, 1.0, 1.0, 1.0]} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %s = ign.resize %x {mode = "linear", sizes = [1, 4, 16, 16], scales = [1.0, 1.0, 1.01, 1.0]} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  return %a, %b, %c, %s : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>
}
