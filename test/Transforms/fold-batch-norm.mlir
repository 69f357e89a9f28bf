// RUN: ign-opt %s --ign-fold-batch-norm --split-input-file | FileCheck %s

// s = scale / sqrt(var + eps) = 3 / sqrt(3 + 1) = 1.5, t = bias - mean * s
// = 0.5 - 1.5 = -1: the weight 2 becomes 3 (0x40400000) and the bias 1
// becomes 1 * 1.5 - 1 = 0.5 (0x3F000000), in blobs of their own.
// CHECK-LABEL: func.func @main
// CHECK-NOT: ign.batch_norm
// CHECK: %[[W:.*]] = ign.constant dense_resource<[[WN:.*]]> : tensor<1x1x1x1xf32>
// CHECK: %[[B:.*]] = ign.constant dense_resource<[[BN:.*]]> : tensor<1xf32>
// CHECK: %[[C:.*]] = ign.conv %arg0, %[[W]], %[[B]]
// CHECK-NEXT: return %[[C]]
// CHECK: [[WN]]: "0x0400000000004040"
// CHECK: [[BN]]: "0x040000000000003F"
func.func @main(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %w = ign.constant dense<2.0> : tensor<1x1x1x1xf32>
  %b = ign.constant dense<1.0> : tensor<1xf32>
  %scale = ign.constant dense<3.0> : tensor<1xf32>
  %bias = ign.constant dense<0.5> : tensor<1xf32>
  %mean = ign.constant dense<1.0> : tensor<1xf32>
  %var = ign.constant dense<3.0> : tensor<1xf32>
  %c = ign.conv %x, %w, %b {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %y = ign.batch_norm %c, %scale, %bias, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  return %y : tensor<1x1x2x2xf32>
}

// -----

// A convolution whose result is also used elsewhere, or parameters that
// are not constants, leave the batch norm in place.
// CHECK-LABEL: func.func @main
// CHECK: ign.batch_norm
// CHECK: ign.batch_norm
func.func @main(%x: tensor<1x1x2x2xf32>, %p: tensor<1xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = ign.constant dense<2.0> : tensor<1x1x1x1xf32>
  %one = ign.constant dense<1.0> : tensor<1xf32>
  %c = ign.conv %x, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %y = ign.batch_norm %c, %one, %one, %one, %one : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %d = ign.conv %x, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %z = ign.batch_norm %d, %p, %one, %one, %one : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  return %y, %c, %z : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}
