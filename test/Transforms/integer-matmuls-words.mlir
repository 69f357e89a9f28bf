// RUN: ign-opt %s --ign-integer-matmuls=words=true --split-input-file | FileCheck %s

// With words (a CPU with vpmaddwd and no VNNI), the same integer matmul
// as with bytes reads 16-bit words: the activations' bytes widened (an
// elementwise cast the producer fuses), the weight an int16 blob of the
// same integers; the correction and scales are unchanged.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = ign.constant dense_resource<[[WN:.*]]> : tensor<4x2xi16>
// CHECK: %[[X:.*]] = ign.cast %arg0 : tensor<3x4xui8> to i16
// CHECK: %[[ACC:.*]] = ign.matmul %[[X]], %[[W]] : (tensor<3x4xi16>, tensor<4x2xi16>) -> tensor<3x2xi32>
// CHECK: %[[CORR:.*]] = ign.constant dense<[-1240, 1340]> : tensor<2xi32>
// CHECK: ign.sub %[[ACC]], %[[CORR]]
// CHECK-NOT: tensor<4x2xi8>
// CHECK-NOT: tensor<4x2xf32>
// CHECK: [[WN]]: "0x020000000100FEFF0300040080FF7F0000000500"
func.func @main(%x: tensor<3x4xui8>) -> tensor<3x2xf32> {
  %z = ign.constant dense<10> : tensor<ui8>
  %zf = ign.cast %z : tensor<ui8> to f32
  %s = ign.constant dense<0.1> : tensor<f32>
  %xf = ign.cast %x : tensor<3x4xui8> to f32
  %c = ign.sub %xf, %zf : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %a = ign.mul %c, %s : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %w = ign.constant {ign.dequantized = {axis = 1 : i64, scale = dense<[0.5, 0.25]> : tensor<2xf32>, type = i8, zero_point = dense<0> : tensor<2xi64>}} dense<[[0.5, -0.5], [1.5, 1.0], [-64.0, 31.75], [0.0, 1.25]]> : tensor<4x2xf32>
  %y = ign.matmul %a, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A 1x1 convolution stays in f32 with words: its integer matmul would
// stream the activations, packed into pairs of channels at run time (2.4x
// slower for quantized ResNet-50 than its f32 convolutions).
// CHECK-LABEL: func.func @main
// CHECK-NOT: ign.matmul
// CHECK: ign.conv {{.*}} : (tensor<1x3x2x2xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x2x2xf32>
// CHECK: ign.conv {{.*}} : (tensor<1x5x2x2xf32>, tensor<2x5x1x1xf32>) -> tensor<1x2x2x2xf32>
func.func @main(%x: tensor<1x3x2x2xui8>, %x5: tensor<1x5x2x2xui8>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %z = ign.constant dense<5> : tensor<ui8>
  %s = ign.constant dense<0.5> : tensor<f32>
  %xf = ign.cast %x : tensor<1x3x2x2xui8> to f32
  %zf = ign.cast %z : tensor<ui8> to f32
  %c = ign.sub %xf, %zf : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %a = ign.mul %c, %s : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %w = ign.constant {ign.dequantized = {axis = 0 : i64, scale = dense<[0.25, 0.5]> : tensor<2xf32>, type = i8, zero_point = dense<0> : tensor<2xi64>}} dense<[[[[0.25]], [[0.5]], [[0.0]]], [[[-1.5]], [[-1.0]], [[-0.5]]]]> : tensor<2x3x1x1xf32>
  %y = ign.conv %a, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x2x2xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x2x2xf32>
  %xf5 = ign.cast %x5 : tensor<1x5x2x2xui8> to f32
  %c5 = ign.sub %xf5, %zf : (tensor<1x5x2x2xf32>, tensor<f32>) -> tensor<1x5x2x2xf32>
  %a5 = ign.mul %c5, %s : (tensor<1x5x2x2xf32>, tensor<f32>) -> tensor<1x5x2x2xf32>
  %w5 = ign.constant {ign.dequantized = {scale = dense<0.25> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<0.25> : tensor<2x5x1x1xf32>
  %y5 = ign.conv %a5, %w5 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x5x2x2xf32>, tensor<2x5x1x1xf32>) -> tensor<1x2x2x2xf32>
  return %y, %y5 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// An odd K (3) stays f32 with words: the host's word tiles take whole pairs
// of steps, and the rest would be generic i32 code, slower than f32.
// CHECK-LABEL: func.func @main
// CHECK-NOT: xi16
// CHECK: ign.matmul {{.*}} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
func.func @main(%x: tensor<2x3xui8>) -> tensor<2x2xf32> {
  %s = ign.constant dense<0.1> : tensor<f32>
  %xf = ign.cast %x : tensor<2x3xui8> to f32
  %a = ign.mul %xf, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %w = ign.constant {ign.dequantized = {scale = dense<0.5> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<[[0.5, -0.5], [1.5, 1.0], [-64.0, 63.5]]> : tensor<3x2xf32>
  %y = ign.matmul %a, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}
