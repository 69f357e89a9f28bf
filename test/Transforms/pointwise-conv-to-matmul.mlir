// RUN: ign-opt %s --pass-pipeline='builtin.module(func.func(ign-pointwise-conv-to-matmul))' | FileCheck %s

// A 1x1 unit-stride unpadded convolution is a matmul of the weight [F, C]
// with the input seen as [N, C, H*W]; the bias is a column added after.
// CHECK-LABEL: func.func @pointwise
// CHECK-DAG: %[[X:.*]] = ign.reshape %arg0 {shape = [2, 8, 12]} : (tensor<2x8x3x4xf32>) -> tensor<2x8x12xf32>
// CHECK-DAG: %[[W:.*]] = ign.reshape %arg1 {shape = [16, 8]} : (tensor<16x8x1x1xf32>) -> tensor<16x8xf32>
// CHECK: %[[M:.*]] = ign.matmul %[[W]], %[[X]] : (tensor<16x8xf32>, tensor<2x8x12xf32>) -> tensor<2x16x12xf32>
// CHECK: %[[B:.*]] = ign.reshape %arg2 {shape = [16, 1]}
// CHECK: %[[S:.*]] = ign.add %[[M]], %[[B]]
// CHECK: %[[R:.*]] = ign.reshape %[[S]] {shape = [2, 16, 3, 4]}
// CHECK: return %[[R]]
func.func @pointwise(%x: tensor<2x8x3x4xf32>, %w: tensor<16x8x1x1xf32>, %b: tensor<16xf32>) -> tensor<2x16x3x4xf32> {
  %0 = ign.conv %x, %w, %b {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<2x8x3x4xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<2x16x3x4xf32>
  return %0 : tensor<2x16x3x4xf32>
}

// Strided, padded, grouped or larger kernels stay convolutions.
// CHECK-LABEL: func.func @not_pointwise
// CHECK-COUNT-3: ign.conv
// CHECK-NOT: ign.matmul
func.func @not_pointwise(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %g: tensor<8x4x1x1xf32>, %k: tensor<8x8x3x3xf32>) -> (tensor<1x8x2x2xf32>, tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>) {
  %0 = ign.conv %x, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  %1 = ign.conv %x, %g {dilations = [1, 1], group = 2 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x8x4x4xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x4x4xf32>
  %2 = ign.conv %x, %k {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x2x2xf32>
  return %0, %1, %2 : tensor<1x8x2x2xf32>, tensor<1x8x4x4xf32>, tensor<1x8x2x2xf32>
}
