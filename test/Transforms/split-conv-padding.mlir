// RUN: ign-opt %s --pass-pipeline='builtin.module(func.func(ign-split-conv-padding))' | FileCheck %s

// A padded convolution becomes a zero pad (ONNX layout: begins, then ends)
// and an unpadded convolution; an unpadded one is left alone.
// CHECK-LABEL: func.func @padded
// CHECK: %[[P:.*]] = ign.pad %arg0 {pads = [0, 0, 1, 2, 0, 0, 3, 4]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x12x14xf32>
// CHECK: ign.conv %[[P]], %arg1 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]}
// CHECK-SAME: -> tensor<1x4x10x12xf32>
func.func @padded(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x10x12xf32> {
  %0 = ign.conv %x, %w {dilations = [1, 1], pads = [1, 2, 3, 4], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x10x12xf32>
  return %0 : tensor<1x4x10x12xf32>
}

// CHECK-LABEL: func.func @unpadded
// CHECK-NOT: ign.pad
func.func @unpadded(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = ign.conv %x, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}
