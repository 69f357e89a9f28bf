// RUN: ign-opt %s --convert-ign-to-linalg --split-input-file | FileCheck %s

// Broadcasting binary ops become one linalg.generic with a constant-0 map
// for the broadcast dim.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[BC:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[BC]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK-NOT: ign.
func.func @add_broadcast(%a: tensor<4x3xf32>, %b: tensor<1x3xf32>) -> tensor<4x3xf32> {
  %0 = ign.add %a, %b : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Matmul is a contraction with a reduction dim, accumulated from zero.
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul(%a: tensor<2x8xf32>, %b: tensor<8x5xf32>) -> tensor<2x5xf32> {
  %0 = ign.matmul %a, %b : (tensor<2x8xf32>, tensor<8x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// A matmul of bytes accumulates in i32, each operand extended by its own
// signedness (ui8 activations zero-extended, int8 weights sign-extended).
// CHECK-LABEL: func.func @byte_matmul
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x8xi8>, tensor<8x5xi8>) outs(%{{.*}} : tensor<2x5xi32>)
// CHECK: ^bb0(%[[A:.*]]: i8, %[[B:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-DAG: %[[X:.*]] = arith.extui %[[A]] : i8 to i32
// CHECK-DAG: %[[Y:.*]] = arith.extsi %[[B]] : i8 to i32
// CHECK: %[[P:.*]] = arith.muli %[[X]], %[[Y]] : i32
// CHECK: arith.addi %[[ACC]], %[[P]] : i32
func.func @byte_matmul(%a: tensor<2x8xui8>, %b: tensor<8x5xi8>) -> tensor<2x5xi32> {
  %0 = ign.matmul %a, %b : (tensor<2x8xui8>, tensor<8x5xi8>) -> tensor<2x5xi32>
  return %0 : tensor<2x5xi32>
}

// -----

// Softmax subtracts the max, exponentiates and divides by the sum.
// CHECK-LABEL: func.func @softmax
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.divf
func.func @softmax(%x: tensor<2x7xf32>) -> tensor<2x7xf32> {
  %0 = ign.softmax %x {axis = 1 : i64} : tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// Unsigned integers become signless with unsigned arithmetic.
// CHECK-LABEL: func.func @unsigned_div(%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> tensor<4xi8>
// CHECK: arith.divui
func.func @unsigned_div(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = ign.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// Reshape and transpose are data movement, not loops of arithmetic.
// CHECK-LABEL: func.func @reshape_transpose
// CHECK: tensor.reshape
// CHECK: linalg.transpose ins({{.*}}) outs({{.*}}) permutation = [1, 0]
func.func @reshape_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = ign.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = ign.transpose %0 {perm = [1, 0]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// im2col is one parallel generic with no operands: its body decomposes the
// indices into channel, kernel offset and output pixel and reads the input
// there, or 0 in the padding (an unsigned compare catches both sides).
// CHECK-LABEL: func.func @im2col
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} outs(
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: linalg.index 2
// CHECK: arith.cmpi ult
// CHECK: tensor.extract %arg0
// CHECK: arith.select
// CHECK: -> tensor<1x12x9xf32>
func.func @im2col(%x: tensor<1x3x4x4xf32>) -> tensor<1x12x9xf32> {
  %0 = ign.im2col %x {dilations = [1, 1], kernel_shape = [2, 2], pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x3x4x4xf32>) -> tensor<1x12x9xf32>
  return %0 : tensor<1x12x9xf32>
}

// -----

// A convolution with blocked filters-last weights [F / 8, C, kh, kw, 8]
// reads filter d1 at [d1 / 8, ..., d1 % 8]: one vector of filters per step
// of the reduction (c, kh, kw), from one block.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1 floordiv 8, d4, d5, d6, d1 mod 8)>
// CHECK-LABEL: func.func @conv_filters_last
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
func.func @conv_filters_last(%x: tensor<1x4x10x10xf32>, %w: tensor<2x4x3x3x8xf32>) -> tensor<1x16x8x8xf32> {
  %0 = ign.conv %x, %w {dilations = [1, 1], filter_block = 8 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x10x10xf32>, tensor<2x4x3x3x8xf32>) -> tensor<1x16x8x8xf32>
  return %0 : tensor<1x16x8x8xf32>
}
