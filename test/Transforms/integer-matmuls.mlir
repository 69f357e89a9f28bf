// RUN: ign-opt %s --ign-integer-matmuls --split-input-file | FileCheck %s

// (cast(x) - 10) * 0.1 times a weight folded from int8 [[1, -2], [3, 4],
// [-128, 127], [0, 5]] with column scales [0.5, 0.25]: an 8-bit matmul into
// i32, less 10 * each column's sum (-124, 134), times 0.1 * the column's
// scale. The int8 weight is a blob of its own; the f32 one is gone.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = ign.constant dense_resource<[[WN:.*]]> : tensor<4x2xi8>
// CHECK: %[[ACC:.*]] = ign.matmul %arg0, %[[W]] : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
// CHECK: %[[CORR:.*]] = ign.constant dense<[-1240, 1340]> : tensor<2xi32>
// CHECK: %[[SUB:.*]] = ign.sub %[[ACC]], %[[CORR]]
// CHECK: %[[F:.*]] = ign.cast %[[SUB]] : tensor<3x2xi32> to f32
// CHECK: %[[SCALE:.*]] = ign.constant dense<[5.000000e-02, 2.500000e-02]> : tensor<2xf32>
// CHECK: %[[Y:.*]] = ign.mul %[[F]], %[[SCALE]]
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: tensor<4x2xf32>
// CHECK: [[WN]]: "0x0100000001FE0304807F0005"
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

// A gemm with a bias and no zero point: the bias is added after the scales.
// CHECK-LABEL: func.func @main
// CHECK: %[[ACC:.*]] = ign.matmul %arg0, %{{.*}} : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
// CHECK-NOT: ign.sub
// CHECK: %[[F:.*]] = ign.cast %[[ACC]] : tensor<3x2xi32> to f32
// CHECK: %[[M:.*]] = ign.mul %[[F]]
// CHECK: %[[Y:.*]] = ign.add %[[M]], %arg1
// CHECK-NEXT: return %[[Y]]
func.func @main(%x: tensor<3x4xui8>, %bias: tensor<2xf32>) -> tensor<3x2xf32> {
  %s = ign.constant dense<0.1> : tensor<f32>
  %xf = ign.cast %x : tensor<3x4xui8> to f32
  %a = ign.mul %xf, %s : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %w = ign.constant {ign.dequantized = {scale = dense<0.5> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<[[0.5, -0.5], [1.5, 1.0], [-64.0, 63.5], [0.0, 1.5]]> : tensor<4x2xf32>
  %y = ign.gemm %a, %w, %bias : (tensor<3x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A gemm with trans_b (a linear layer) and a per-row scale (axis 0): the
// int8 weight is transposed into [K, N] at compile time.
// CHECK-LABEL: func.func @main
// CHECK: ign.matmul %arg0, %{{.*}} : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
// CHECK: ign.constant dense<[5.000000e-02, 2.500000e-02]> : tensor<2xf32>
// CHECK: "0x0100000001FE0304807F0005"
func.func @main(%x: tensor<3x4xui8>) -> tensor<3x2xf32> {
  %s = ign.constant dense<0.1> : tensor<f32>
  %xf = ign.cast %x : tensor<3x4xui8> to f32
  %a = ign.mul %xf, %s : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %w = ign.constant {ign.dequantized = {axis = 0 : i64, scale = dense<[0.5, 0.25]> : tensor<2xf32>, type = i8, zero_point = dense<0> : tensor<2xi64>}} dense<[[0.5, 1.5, -64.0, 0.0], [-0.5, 1.0, 31.75, 1.25]]> : tensor<2x4xf32>
  %y = ign.gemm %a, %w {trans_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Left as they are: a weight that does not convert back exactly (0.3 is no
// multiple of 0.5), a weight with a zero point, a gemm with trans_b whose
// scales run along the wrong axis.
// CHECK-LABEL: func.func @main
// CHECK-NOT: xi32>
// CHECK-COUNT-2: ign.matmul {{.*}} -> tensor<3x2xf32>
// CHECK: ign.gemm {{.*}} -> tensor<3x2xf32>
func.func @main(%x: tensor<3x4xui8>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %s = ign.constant dense<0.1> : tensor<f32>
  %xf = ign.cast %x : tensor<3x4xui8> to f32
  %a = ign.mul %xf, %s : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %w1 = ign.constant {ign.dequantized = {scale = dense<0.5> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<[[0.3, -0.5], [1.5, 1.0], [-64.0, 63.5], [0.0, 1.5]]> : tensor<4x2xf32>
  %y1 = ign.matmul %a, %w1 : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %w2 = ign.constant {ign.dequantized = {scale = dense<0.5> : tensor<1xf32>, type = i8, zero_point = dense<1> : tensor<1xi64>}} dense<[[0.5, -0.5], [1.5, 1.0], [-64.0, 63.5], [0.0, 1.5]]> : tensor<4x2xf32>
  %y2 = ign.matmul %a, %w2 : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %w4 = ign.constant {ign.dequantized = {axis = 1 : i64, scale = dense<[0.5, 0.5, 0.5, 0.5]> : tensor<4xf32>, type = i8, zero_point = dense<0> : tensor<4xi64>}} dense<[[0.5, -0.5, 1.5, 1.0], [-64.0, 63.5, 0.0, 1.5]]> : tensor<2x4xf32>
  %y4 = ign.gemm %a, %w4 {trans_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
  return %y1, %y2, %y4 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Signed activations (zero point -3) move up by 128 into bytes VNNI takes
// unsigned, their zero point with them (125): the correction is 125 times
// the column sums (-124, 131).
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = ign.cast %arg0 : tensor<3x4xi8> to i32
// CHECK: %[[S:.*]] = ign.add %[[W]], %{{.*}} : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x4xi32>
// CHECK: %[[U:.*]] = ign.cast %[[S]] : tensor<3x4xi32> to ui8
// CHECK: ign.matmul %[[U]], %{{.*}} : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
// CHECK: ign.constant dense<[-15500, 16375]> : tensor<2xi32>
func.func @main(%x: tensor<3x4xi8>) -> tensor<3x2xf32> {
  %z = ign.constant dense<-3> : tensor<i8>
  %zf = ign.cast %z : tensor<i8> to f32
  %s = ign.constant dense<0.1> : tensor<f32>
  %xf = ign.cast %x : tensor<3x4xi8> to f32
  %c = ign.sub %xf, %zf : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %a = ign.mul %c, %s : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %w = ign.constant {ign.dequantized = {scale = dense<0.5> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<[[0.5, -0.5], [1.5, 1.0], [-64.0, 63.5], [0.0, 1.5]]> : tensor<4x2xf32>
  %y = ign.matmul %a, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A 1x1 convolution of 3 channels (zero point 5) by 2 filters: the input
// padded with the zero point to 4 channels, the filters with zeros, then
// the integer matmul [F, C] x [N, C, P], the correction (5 * filter sums
// 3 and -6) and scales per filter as columns, the bias, the output shape.
// A 3x3 convolution of the same bytes likewise, directly: one pad with the
// zero point (a fourth channel and the window's border), filters with a
// zero channel (each filter's sum 27: correction 135), bytes into i32.
// CHECK-LABEL: func.func @main
// CHECK: %[[PAD:.*]] = ign.pad %arg0 {pads = [0, 0, 0, 0, 0, 1, 0, 0], value = 5.000000e+00 : f64} : (tensor<1x3x2x2xui8>) -> tensor<1x4x2x2xui8>
// CHECK: %[[X:.*]] = ign.reshape %[[PAD]] {shape = [1, 4, 4]}
// CHECK: %[[W:.*]] = ign.constant dense_resource<[[WN:.*]]> : tensor<2x4xi8>
// CHECK: %[[ACC:.*]] = ign.matmul %[[W]], %[[X]] : (tensor<2x4xi8>, tensor<1x4x4xui8>) -> tensor<1x2x4xi32>
// CHECK: ign.constant dense<[15, -30]> : tensor<2xi32>
// CHECK: ign.sub %[[ACC]]
// CHECK: ign.cast {{.*}} : tensor<1x2x4xi32> to f32
// CHECK: ign.mul
// CHECK: ign.add
// CHECK: ign.reshape {{.*}} {shape = [1, 2, 2, 2]}
// CHECK: %[[PAD3:.*]] = ign.pad %arg0 {pads = [0, 0, 1, 1, 0, 1, 1, 1], value = 5.000000e+00 : f64} : (tensor<1x3x2x2xui8>) -> tensor<1x4x4x4xui8>
// CHECK: %[[W3:.*]] = ign.constant dense_resource<[[W3N:.*]]> : tensor<2x4x3x3xi8>
// CHECK: %[[ACC3:.*]] = ign.conv %[[PAD3]], %[[W3]] {{.*}} : (tensor<1x4x4x4xui8>, tensor<2x4x3x3xi8>) -> tensor<1x2x2x2xi32>
// CHECK: ign.reshape %[[ACC3]] {shape = [1, 2, 4]}
// CHECK: ign.constant dense<135> : tensor<2xi32>
// CHECK: [[WN]]: "0x0100000001020000FDFEFF00"
// CHECK: [[W3N]]: "0x01000000010101010101010101010101010101010101010101010101010101000000000000000000010101010101010101010101010101010101010101010101010101000000000000000000"
func.func @main(%x: tensor<1x3x2x2xui8>, %bias: tensor<2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %z = ign.constant dense<5> : tensor<ui8>
  %s = ign.constant dense<0.5> : tensor<f32>
  %xf = ign.cast %x : tensor<1x3x2x2xui8> to f32
  %zf = ign.cast %z : tensor<ui8> to f32
  %c = ign.sub %xf, %zf : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %a = ign.mul %c, %s : (tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x3x2x2xf32>
  %w = ign.constant {ign.dequantized = {axis = 0 : i64, scale = dense<[0.25, 0.5]> : tensor<2xf32>, type = i8, zero_point = dense<0> : tensor<2xi64>}} dense<[[[[0.25]], [[0.5]], [[0.0]]], [[[-1.5]], [[-1.0]], [[-0.5]]]]> : tensor<2x3x1x1xf32>
  %y = ign.conv %a, %w, %bias {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x2x2xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %w3 = ign.constant {ign.dequantized = {scale = dense<0.25> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<0.25> : tensor<2x3x3x3xf32>
  %y3 = ign.conv %a, %w3 {dilations = [1, 1], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x3x2x2xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x2x2xf32>
  return %y, %y3 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// A 3x3 convolution of 2 channels stays in f32: padded to a quad, half of
// its multiplies would be of zeros.
// CHECK-LABEL: func.func @main
// CHECK-NOT: xi32>
// CHECK: ign.conv {{.*}} : (tensor<1x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
func.func @main(%x: tensor<1x2x2x2xui8>) -> tensor<1x2x2x2xf32> {
  %z = ign.constant dense<5> : tensor<ui8>
  %s = ign.constant dense<0.5> : tensor<f32>
  %xf = ign.cast %x : tensor<1x2x2x2xui8> to f32
  %zf = ign.cast %z : tensor<ui8> to f32
  %c = ign.sub %xf, %zf : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %a = ign.mul %c, %s : (tensor<1x2x2x2xf32>, tensor<f32>) -> tensor<1x2x2x2xf32>
  %w = ign.constant {ign.dequantized = {scale = dense<0.25> : tensor<1xf32>, type = i8, zero_point = dense<0> : tensor<1xi64>}} dense<0.25> : tensor<2x2x3x3xf32>
  %y = ign.conv %a, %w {dilations = [1, 1], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x2x2x2xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// MatMulInteger's form: (cast(x) - z) x cast(w) in i32, the zero point
// computed at run time (dynamic quantization): the byte matmul less z times
// the weight's column sums (-124, 134). An i32 weight out of int8's range
// stays as it is.
// CHECK-LABEL: func.func @main
// CHECK: %[[Z:.*]] = ign.cast %arg1 : tensor<ui8> to i32
// CHECK: %[[W:.*]] = ign.constant dense_resource<{{.*}}> : tensor<4x2xi8>
// CHECK: %[[ACC:.*]] = ign.matmul %arg0, %[[W]] : (tensor<3x4xui8>, tensor<4x2xi8>) -> tensor<3x2xi32>
// CHECK: %[[SUMS:.*]] = ign.constant dense<[-124, 134]> : tensor<2xi32>
// CHECK: %[[C:.*]] = ign.mul %[[SUMS]], %[[Z]]
// CHECK: %[[Y:.*]] = ign.sub %[[ACC]], %[[C]]
// CHECK: ign.matmul {{.*}} : (tensor<3x4xi32>, tensor<4x2xi32>) -> tensor<3x2xi32>
// CHECK: return %[[Y]]
func.func @main(%x: tensor<3x4xui8>, %z: tensor<ui8>) -> (tensor<3x2xi32>, tensor<3x2xi32>) {
  %a = ign.cast %x : tensor<3x4xui8> to i32
  %z32 = ign.cast %z : tensor<ui8> to i32
  %c = ign.sub %a, %z32 : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x4xi32>
  %w = ign.constant dense<[[1, -2], [3, 4], [-128, 127], [0, 5]]> : tensor<4x2xi8>
  %w32 = ign.cast %w : tensor<4x2xi8> to i32
  %y = ign.matmul %c, %w32 : (tensor<3x4xi32>, tensor<4x2xi32>) -> tensor<3x2xi32>
  %big = ign.constant dense<[[1, -2], [3, 4], [-128, 300], [0, 5]]> : tensor<4x2xi32>
  %y2 = ign.matmul %c, %big : (tensor<3x4xi32>, tensor<4x2xi32>) -> tensor<3x2xi32>
  return %y, %y2 : tensor<3x2xi32>, tensor<3x2xi32>
}

// -----

// ConvInteger's form: an i32 convolution of centered bytes by a constant
// weight less its zero point (1) whose partial sums stay below 2^24
// computes as the f32 convolution of the same values (weights w - 1 as
// floats), converted back to i32. Weights whose sums could reach 2^24
// stay i32.
// CHECK-LABEL: func.func @main
// CHECK: %[[XF:.*]] = ign.cast %arg0 : tensor<1x2x4x4xui8> to f32
// CHECK: %[[ZF:.*]] = ign.cast %{{.*}} : tensor<i32> to f32
// CHECK: %[[C:.*]] = ign.sub %[[XF]], %[[ZF]]
// CHECK: %[[W:.*]] = ign.constant dense_resource<[[WN:.*]]> : tensor<1x2x1x1xf32>
// CHECK: %[[Y:.*]] = ign.conv %[[C]], %[[W]] {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
// CHECK: %[[I:.*]] = ign.cast %[[Y]] : tensor<1x1x4x4xf32> to i32
// CHECK: ign.conv {{.*}} -> tensor<1x1x4x4xi32>
// CHECK: ign.conv {{.*}} -> tensor<1x1x4x4xi32>
// CHECK: return %[[I]]
// CHECK: [[WN]]: "0x0400000000000040000080C0"
// A zero point that is no 8-bit value bounds nothing: that one stays i32.
func.func @main(%x: tensor<1x2x4x4xui8>, %z8: tensor<ui8>, %z: tensor<i32>) -> (tensor<1x1x4x4xi32>, tensor<1x1x4x4xi32>, tensor<1x1x4x4xi32>) {
  %a = ign.cast %x : tensor<1x2x4x4xui8> to i32
  %zc = ign.cast %z8 : tensor<ui8> to i32
  %c = ign.sub %a, %zc : (tensor<1x2x4x4xi32>, tensor<i32>) -> tensor<1x2x4x4xi32>
  %c2 = ign.sub %a, %z : (tensor<1x2x4x4xi32>, tensor<i32>) -> tensor<1x2x4x4xi32>
  %w = ign.constant dense<[[[[3]], [[-3]]]]> : tensor<1x2x1x1xi8>
  %w32 = ign.cast %w : tensor<1x2x1x1xi8> to i32
  %wz = ign.constant dense<1> : tensor<i32>
  %wc = ign.sub %w32, %wz : (tensor<1x2x1x1xi32>, tensor<i32>) -> tensor<1x2x1x1xi32>
  %y = ign.conv %c, %wc {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xi32>) -> tensor<1x1x4x4xi32>
  %big = ign.constant dense<[[[[40000]], [[40000]]]]> : tensor<1x2x1x1xi32>
  %y2 = ign.conv %c, %big {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xi32>) -> tensor<1x1x4x4xi32>
  %y3 = ign.conv %c2, %wc {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x4x4xi32>, tensor<1x2x1x1xi32>) -> tensor<1x1x4x4xi32>
  return %y, %y2, %y3 : tensor<1x1x4x4xi32>, tensor<1x1x4x4xi32>, tensor<1x1x4x4xi32>
}

// -----

// A max pool of dequantized bytes (a convolution's quantized output, or an
// argument's) pools the bytes (unsigned), then dequantizes: the same
// values, as the dequantization never reorders them. A scale of zero is
// no dequantization: that pool stays f32.
// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = ign.cast {{.*}} : tensor<1x2x4x4xf32> to ui8
// CHECK: %[[P:.*]] = ign.max_pool %[[Q]] {{.*}} : (tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xui8>
// CHECK: %[[F:.*]] = ign.cast %[[P]] : tensor<1x2x2x2xui8> to f32
// CHECK: %[[C:.*]] = ign.sub %[[F]], %{{.*}}
// CHECK: %[[Y:.*]] = ign.mul %[[C]], %{{.*}}
// CHECK: %[[AP:.*]] = ign.max_pool %arg1 {{.*}} : (tensor<1x2x4x4xui8>) -> tensor<1x2x2x2xui8>
// CHECK: ign.max_pool {{.*}} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK: return %[[Y]], %{{.*}}, %{{.*}}
func.func @main(%x: tensor<1x3x4x4xf32>, %arg: tensor<1x2x4x4xui8>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = ign.constant dense<0.5> : tensor<2x3x1x1xf32>
  %y = ign.conv %x, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %q = ign.cast %y : tensor<1x2x4x4xf32> to ui8
  %z = ign.constant dense<5> : tensor<ui8>
  %s = ign.constant dense<0.5> : tensor<f32>
  %qf = ign.cast %q : tensor<1x2x4x4xui8> to f32
  %zf = ign.cast %z : tensor<ui8> to f32
  %c = ign.sub %qf, %zf : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %d = ign.mul %c, %s : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = ign.max_pool %d {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %af = ign.cast %arg : tensor<1x2x4x4xui8> to f32
  %ac = ign.sub %af, %zf : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %ad = ign.mul %ac, %s : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %ap = ign.max_pool %ad {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %s0 = ign.constant dense<0.0> : tensor<f32>
  %zd = ign.mul %ac, %s0 : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %zp = ign.max_pool %zd {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %p, %ap, %zp : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
