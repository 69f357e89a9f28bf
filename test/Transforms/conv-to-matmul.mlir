// RUN: ign-opt %s --pass-pipeline='builtin.module(func.func(ign-conv-to-matmul))' | FileCheck %s

// A 1x1 unit-stride unpadded convolution is a matmul of the weight [F, C]
// with the input seen as [N, C, H*W]; the bias is a column added after.
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT: ign.slice
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

// A pointwise convolution over one pixel (a squeeze-excitation's) is a Gemm
// with the weight transposed as stored, [N, C] x [F, C]^T, and the bias as
// its C: a matmul's one column left no vector along the output. Not with a
// channel count that 16 does not divide.
// CHECK-LABEL: func.func @one_pixel
// CHECK-DAG: %[[X:.*]] = ign.reshape %arg0 {shape = [2, 32]} : (tensor<2x32x1x1xf32>) -> tensor<2x32xf32>
// CHECK-DAG: %[[W:.*]] = ign.reshape %arg1 {shape = [24, 32]} : (tensor<24x32x1x1xf32>) -> tensor<24x32xf32>
// CHECK: %[[G:.*]] = ign.gemm %[[X]], %[[W]], %arg2 {trans_b = true} : (tensor<2x32xf32>, tensor<24x32xf32>, tensor<24xf32>) -> tensor<2x24xf32>
// CHECK: %[[R:.*]] = ign.reshape %[[G]] {shape = [2, 24, 1, 1]}
// CHECK: return %[[R]]
func.func @one_pixel(%x: tensor<2x32x1x1xf32>, %w: tensor<24x32x1x1xf32>, %b: tensor<24xf32>) -> tensor<2x24x1x1xf32> {
  %0 = ign.conv %x, %w, %b {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<2x32x1x1xf32>, tensor<24x32x1x1xf32>, tensor<24xf32>) -> tensor<2x24x1x1xf32>
  return %0 : tensor<2x24x1x1xf32>
}
// CHECK-LABEL: func.func @one_pixel_odd_channels
// CHECK-NOT: ign.gemm
// CHECK: ign.matmul
func.func @one_pixel_odd_channels(%x: tensor<1x24x1x1xf32>, %w: tensor<8x24x1x1xf32>) -> tensor<1x8x1x1xf32> {
  %0 = ign.conv %x, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x24x1x1xf32>, tensor<8x24x1x1xf32>) -> tensor<1x8x1x1xf32>
  return %0 : tensor<1x8x1x1xf32>
}

// Other kernels read columns: one ign.im2col [N, C*K, P] (kernel offsets
// row-major, as the weight's [F, C, kh, kw]) with the padding inside.
// CHECK-LABEL: func.func @im2col
// CHECK-NOT: ign.slice
// CHECK: %[[X:.*]] = ign.im2col %arg0 {dilations = [1, 1], kernel_shape = [2, 2], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x3x4x4xf32>) -> tensor<1x12x9xf32>
// CHECK: %[[W:.*]] = ign.reshape %arg1 {shape = [5, 12]}
// CHECK: %[[M:.*]] = ign.matmul %[[W]], %[[X]] : (tensor<5x12xf32>, tensor<1x12x9xf32>) -> tensor<1x5x9xf32>
// CHECK: ign.reshape %[[M]] {shape = [1, 5, 3, 3]}
func.func @im2col(%x: tensor<1x3x4x4xf32>, %w: tensor<5x3x2x2xf32>) -> tensor<1x5x3x3xf32> {
  %0 = ign.conv %x, %w {dilations = [1, 1], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x3x4x4xf32>, tensor<5x3x2x2xf32>) -> tensor<1x5x3x3xf32>
  return %0 : tensor<1x5x3x3xf32>
}

// A grouped 1x1 convolution with at least 4 channels per group is a
// batched matmul, one batch per group: [G, F/G, C/G] with [N, G, C/G, P];
// the bias a column per group.
// CHECK-LABEL: func.func @grouped_pointwise
// CHECK-DAG: %[[X:.*]] = ign.reshape %arg0 {shape = [1, 2, 4, 16]} : (tensor<1x8x4x4xf32>) -> tensor<1x2x4x16xf32>
// CHECK-DAG: %[[W:.*]] = ign.reshape %arg1 {shape = [2, 6, 4]} : (tensor<12x4x1x1xf32>) -> tensor<2x6x4xf32>
// CHECK: %[[M:.*]] = ign.matmul %[[W]], %[[X]] : (tensor<2x6x4xf32>, tensor<1x2x4x16xf32>) -> tensor<1x2x6x16xf32>
// CHECK: %[[B:.*]] = ign.reshape %arg2 {shape = [2, 6, 1]}
// CHECK: %[[S:.*]] = ign.add %[[M]], %[[B]]
// CHECK: ign.reshape %[[S]] {shape = [1, 12, 4, 4]}
func.func @grouped_pointwise(%x: tensor<1x8x4x4xf32>, %g: tensor<12x4x1x1xf32>, %b: tensor<12xf32>) -> tensor<1x12x4x4xf32> {
  %0 = ign.conv %x, %g, %b {dilations = [1, 1], group = 2 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x8x4x4xf32>, tensor<12x4x1x1xf32>, tensor<12xf32>) -> tensor<1x12x4x4xf32>
  return %0 : tensor<1x12x4x4xf32>
}

// Other grouped convolutions stay convolutions: spatial ones, and 1x1 ones
// with fewer channels per group (depthwise: one).
// CHECK-LABEL: func.func @not_converted
// CHECK: ign.conv
// CHECK: ign.conv
// CHECK-NOT: ign.matmul
func.func @not_converted(%x: tensor<1x8x4x4xf32>, %g: tensor<8x4x3x3xf32>, %d: tensor<8x1x1x1xf32>) -> (tensor<1x8x2x2xf32>, tensor<1x8x4x4xf32>) {
  %0 = ign.conv %x, %g {dilations = [1, 1], group = 2 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x8x4x4xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x2x2xf32>
  %1 = ign.conv %x, %d {dilations = [1, 1], group = 8 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x8x4x4xf32>, tensor<8x1x1x1xf32>) -> tensor<1x8x4x4xf32>
  return %0, %1 : tensor<1x8x2x2xf32>, tensor<1x8x4x4xf32>
}

// A transposed convolution (one group, batch 1) is a Gemm of its weight
// [C, F*K], read transposed, with the input [C, P], whose columns one
// ign.col2im sums into the output (the bias with them).
// CHECK-LABEL: func.func @conv_transpose
// CHECK: %[[X:.*]] = ign.reshape %arg0 {shape = [4, 9]}
// CHECK: %[[W:.*]] = ign.reshape %arg1 {shape = [4, 8]}
// CHECK: %[[G:.*]] = ign.gemm %[[W]], %[[X]] {trans_a = true} : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<8x9xf32>
// CHECK: %[[C:.*]] = ign.reshape %[[G]] {shape = [1, 8, 9]}
// CHECK: ign.col2im %[[C]], %arg2 {dilations = [1, 1], input_shape = [3, 3], kernel_shape = [2, 2], output_shape = [6, 6], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x8x9xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
func.func @conv_transpose(%x: tensor<1x4x3x3xf32>, %w: tensor<4x2x2x2xf32>, %b: tensor<2xf32>) -> tensor<1x2x6x6xf32> {
  %0 = ign.conv_transpose %x, %w, %b {dilations = [1, 1], output_padding = [0, 0], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x4x3x3xf32>, tensor<4x2x2x2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// Grouped ones stay transposed convolutions.
// CHECK-LABEL: func.func @conv_transpose_grouped
// CHECK: ign.conv_transpose
// CHECK-NOT: ign.col2im
func.func @conv_transpose_grouped(%x: tensor<1x4x3x3xf32>, %w: tensor<4x1x2x2xf32>) -> tensor<1x4x6x6xf32> {
  %0 = ign.conv_transpose %x, %w {dilations = [1, 1], group = 4 : i64, output_padding = [0, 0], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x4x3x3xf32>, tensor<4x1x2x2xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}
