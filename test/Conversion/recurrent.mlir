// RUN: ign-opt %s --convert-ign-to-linalg | FileCheck %s

// The input projections of all five time steps are one contraction before
// the loop over time ([5, 2] x W^T, W [12, 2] as stored), and each step only
// multiplies the hidden state ([1, 3]) by R^T, R [12, 3] as stored: both
// read the weights' rows along the reduction (dot products), nothing is
// transposed.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @lstm
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[ROWS]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<5x2xf32>, tensor<12x2xf32>) outs(%{{.*}} : tensor<5x12xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: scf.for
// CHECK-NOT: tensor<5x2xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[ROWS]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x3xf32>, tensor<12x3xf32>) outs(%{{.*}} : tensor<1x12xf32>)
// CHECK: scf.yield
func.func @lstm(%x: tensor<5x1x2xf32>, %w: tensor<1x12x2xf32>, %r: tensor<1x12x3xf32>) -> tensor<5x1x1x3xf32> {
  %y, %y_h, %y_c = "ign.lstm"(%x, %w, %r) {activation_alpha = [], activation_beta = [], activations = ["Sigmoid", "Tanh", "Tanh"], direction = "forward", hidden_size = 3 : i64, input_forget = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<5x1x2xf32>, tensor<1x12x2xf32>, tensor<1x12x3xf32>) -> (tensor<5x1x1x3xf32>, tensor<1x1x3xf32>, tensor<1x1x3xf32>)
  return %y : tensor<5x1x1x3xf32>
}

// GRU: the same projection, and each gate's part of R ([3, 3] rows of it).
// CHECK-LABEL: func.func @gru
// CHECK-NOT: linalg.transpose
// CHECK: ins(%{{.*}}, %{{.*}} : tensor<5x2xf32>, tensor<9x2xf32>) outs(%{{.*}} : tensor<5x9xf32>)
// CHECK-COUNT-3: tensor.extract_slice %{{.*}}[{{.*}}] [3, 3] [1, 1] : tensor<9x3xf32> to tensor<3x3xf32>
// CHECK-NOT: linalg.transpose
// CHECK: scf.for
func.func @gru(%x: tensor<5x1x2xf32>, %w: tensor<1x9x2xf32>, %r: tensor<1x9x3xf32>) -> tensor<5x1x1x3xf32> {
  %y, %y_h = "ign.gru"(%x, %w, %r) {activation_alpha = [], activation_beta = [], activations = ["Sigmoid", "Tanh"], direction = "forward", hidden_size = 3 : i64, linear_before_reset = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<5x1x2xf32>, tensor<1x9x2xf32>, tensor<1x9x3xf32>) -> (tensor<5x1x1x3xf32>, tensor<1x1x3xf32>)
  return %y : tensor<5x1x1x3xf32>
}
