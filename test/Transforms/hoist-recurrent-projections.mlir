// RUN: ign-opt %s --ign-hoist-recurrent-projections --split-input-file | FileCheck %s

// A bidirectional GRU with constant weights: one Gemm over the 2 x 3
// steps and both directions (W [2, 15, 3] is [30, 3] as stored: a weight
// of its own, so that later rewrites lay it out), its bias both
// directions' Wb (B's first 15 entries of each row) in a blob of its own;
// the GRU reads the projections [2, 3, 30] and no W.
// CHECK-LABEL: func.func @bidirectional
// CHECK-DAG: %[[WB:.*]] = ign.constant dense_resource<[[WBN:.*]]> : tensor<30xf32>
// CHECK-DAG: %[[X:.*]] = ign.reshape %arg0 {{.*}} -> tensor<6x3xf32>
// CHECK-DAG: %[[W2:.*]] = ign.constant dense_resource<[[W2N:.*]]> : tensor<30x3xf32>
// CHECK: %[[P:.*]] = ign.gemm %[[X]], %[[W2]], %[[WB]] {trans_b = true}
// CHECK: %[[P3:.*]] = ign.reshape %[[P]] {{.*}} -> tensor<2x3x30xf32>
// CHECK: "ign.gru"(%[[P3]], %{{.*}}, %{{.*}}) {{.*}}operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0>, projected_input}
// CHECK: [[W2N]]: "0x04000000{{(0000003F)+}}"
// CHECK: [[WBN]]: "0x0400000000000000000000000000000000000000000000000000803F0000803F0000803F0000803F0000803F000000400000004000000040000000400000004000000000000000000000000000000000000000000000803F0000803F0000803F0000803F0000803F0000004000000040000000400000004000000040"
func.func @bidirectional(%x: tensor<2x3x3xf32>) -> tensor<2x2x3x5xf32> {
  %w = ign.constant dense<0.5> : tensor<2x15x3xf32>
  %r = ign.constant dense<0.25> : tensor<2x15x5xf32>
  %b = ign.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0], [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0]]> : tensor<2x30xf32>
  %y, %y_h = "ign.gru"(%x, %w, %r, %b) {activation_alpha = [], activation_beta = [], activations = ["Sigmoid", "Tanh", "Sigmoid", "Tanh"], direction = "bidirectional", hidden_size = 5 : i64, linear_before_reset = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<2x3x3xf32>, tensor<2x15x3xf32>, tensor<2x15x5xf32>, tensor<2x30xf32>) -> (tensor<2x2x3x5xf32>, tensor<2x3x5xf32>)
  return %y : tensor<2x2x3x5xf32>
}

// -----

// Weights given at run time: the same Gemm of the reshaped W; the bias is
// the Wb half of B sliced (the first 4 * 4 entries of each direction).
// CHECK-LABEL: func.func @weight_inputs
// CHECK: %[[S:.*]] = ign.slice %arg2 {{.*}}sizes = [1, 16]{{.*}}starts = [0, 0]
// CHECK: %[[WB:.*]] = ign.reshape %[[S]] {{.*}} -> tensor<16xf32>
// CHECK: ign.gemm %{{.*}}, %{{.*}}, %[[WB]] {trans_b = true} : (tensor<8x2xf32>, tensor<16x2xf32>, tensor<16xf32>) -> tensor<8x16xf32>
// CHECK: "ign.lstm"
// CHECK-SAME: projected_input
func.func @weight_inputs(%x: tensor<4x2x2xf32>, %w: tensor<1x16x2xf32>, %b: tensor<1x32xf32>) -> tensor<4x1x2x4xf32> {
  %r = ign.constant dense<0.25> : tensor<1x16x4xf32>
  %y, %y_h, %y_c = "ign.lstm"(%x, %w, %r, %b) {activation_alpha = [], activation_beta = [], activations = ["Sigmoid", "Tanh", "Tanh"], direction = "forward", hidden_size = 4 : i64, input_forget = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>} : (tensor<4x2x2xf32>, tensor<1x16x2xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>) -> (tensor<4x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  return %y : tensor<4x1x2x4xf32>
}

// -----

// One step: nothing to hoist.
// CHECK-LABEL: func.func @one_step
// CHECK-NOT: ign.gemm
// CHECK: "ign.rnn"(%arg0, %arg1, %arg2)
func.func @one_step(%x: tensor<1x2x2xf32>, %w: tensor<1x4x2xf32>, %r: tensor<1x4x4xf32>) -> tensor<1x1x2x4xf32> {
  %y, %y_h = "ign.rnn"(%x, %w, %r) {activation_alpha = [], activation_beta = [], activations = ["Tanh"], direction = "forward", hidden_size = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<1x2x2xf32>, tensor<1x4x2xf32>, tensor<1x4x4xf32>) -> (tensor<1x1x2x4xf32>, tensor<1x2x4xf32>)
  return %y : tensor<1x1x2x4xf32>
}

// -----

// A cell unrolled in the graph (torch's LSTMCell in a loop): every step's
// Gemm of gather(x, t) with the same W and bias is one Gemm over x [3, 2,
// 4] as [6, 4], each step's product a gather of its rows; the recurrent
// Gemm (of the state, not of x) stays.
// CHECK-LABEL: func.func @unrolled_cell
// CHECK: %[[X:.*]] = ign.reshape %arg0 {{.*}} -> tensor<6x4xf32>
// CHECK: %[[P:.*]] = ign.gemm %[[X]], %[[W:.*]], %[[B:.*]] {trans_b = true} : (tensor<6x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<6x5xf32>
// CHECK: %[[P3:.*]] = ign.reshape %[[P]] {{.*}} -> tensor<3x2x5xf32>
// CHECK: ign.gather %[[P3]], %arg1 {axis = 0 : i64} : (tensor<3x2x5xf32>, tensor<i64>) -> tensor<2x5xf32>
// CHECK: ign.gemm %{{.*}}, %{{.*}} {trans_b = true} : (tensor<2x5xf32>, tensor<5x5xf32>) -> tensor<2x5xf32>
// CHECK: ign.gather %[[P3]], %arg2 {axis = 0 : i64}
// CHECK: ign.gather %[[P3]], %arg3 {axis = 0 : i64}
// CHECK-NOT: ign.gemm %{{.*}} : (tensor<2x4xf32>
func.func @unrolled_cell(%x: tensor<3x2x4xf32>, %t0: tensor<i64>, %t1: tensor<i64>, %t2: tensor<i64>) -> tensor<2x5xf32> {
  %w = ign.constant dense<0.5> : tensor<5x4xf32>
  %b = ign.constant dense<1.0> : tensor<5xf32>
  %r = ign.constant dense<0.25> : tensor<5x5xf32>
  %x0 = ign.gather %x, %t0 {axis = 0 : i64} : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %p0 = ign.gemm %x0, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %h0 = ign.tanh %p0 : tensor<2x5xf32>
  %q1 = ign.gemm %h0, %r {trans_b = true} : (tensor<2x5xf32>, tensor<5x5xf32>) -> tensor<2x5xf32>
  %x1 = ign.gather %x, %t1 {axis = 0 : i64} : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %p1 = ign.gemm %x1, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %s1 = ign.add %p1, %q1 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %x2 = ign.gather %x, %t2 {axis = 0 : i64} : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %p2 = ign.gemm %x2, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %s2 = ign.add %p2, %s1 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  return %s2 : tensor<2x5xf32>
}

// -----

// One step of three taken (less than half): the matrix-vector product stays.
// CHECK-LABEL: func.func @one_unrolled_step
// CHECK-NOT: ign.reshape
// CHECK: ign.gemm %{{.*}} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
func.func @one_unrolled_step(%x: tensor<3x2x4xf32>, %t0: tensor<i64>) -> tensor<2x5xf32> {
  %w = ign.constant dense<0.5> : tensor<5x4xf32>
  %b = ign.constant dense<1.0> : tensor<5xf32>
  %x0 = ign.gather %x, %t0 {axis = 0 : i64} : (tensor<3x2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  %p0 = ign.gemm %x0, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  return %p0 : tensor<2x5xf32>
}
