// RUN: ign-opt %s --convert-ign-to-linalg | FileCheck %s

// NonMaxSuppression's selection is scalar loops per batch and class: one
// pass clears the row and lists the candidates over the score threshold,
// then each step scans the listed ones for the best not taken, and checks
// it against the boxes kept so far (a loop up to their count), with no
// table of all pairs. The kept table is as wide as the most kept per class
// (width).
// CHECK-LABEL: func.func @nms
// CHECK: tensor.extract %arg2[] : tensor<i64>
// CHECK: scf.for %[[B:.*]] = {{.*}} iter_args
// CHECK: scf.for %[[C:.*]] = {{.*}} iter_args
// CHECK: scf.for {{.*}} -> (tensor<2x3x10xi64>, tensor<50xi64>, tensor<50xf32>, index)
// CHECK: arith.cmpf ogt
// CHECK: scf.for {{.*}} to %[[LISTED:.*]] step {{.*}} iter_args({{.*}}) -> (tensor<2x3x10xi64>, tensor<50xf32>, index, i1)
// CHECK: scf.if
// CHECK: scf.for {{.*}} -> (i64, f32)
// CHECK: scf.if
// CHECK: arith.divf
// CHECK-NOT: tensor<2x3x50x50
func.func @nms(%boxes: tensor<2x50x4xf32>, %scores: tensor<2x3x50xf32>, %k: tensor<i64>, %t: tensor<f32>, %f: tensor<f32>) -> tensor<2x3x10xi64> {
  %sel = ign.non_max_suppression %boxes, %scores, %k, %t, %f {width = 10 : i64} : (tensor<2x50x4xf32>, tensor<2x3x50xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<2x3x10xi64>
  return %sel : tensor<2x3x10xi64>
}
