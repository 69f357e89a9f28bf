// RUN: ign-opt %s --convert-ign-to-linalg | FileCheck %s

// ign.suppress (the greedy pass of NonMaxSuppression) is a loop over the
// candidates carrying the keep mask: each step takes candidate i's row of
// the overlap mask and its validity, both for every class at once, and
// writes keep[:, i]; nothing is quadratic per step.
// CHECK-LABEL: func.func @suppress
// CHECK: linalg.fill {{.*}} outs(%{{.*}} : tensor<2x5xf32>)
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[KEEP:.*]] = %{{.*}}) -> (tensor<2x5xf32>)
// CHECK: tensor.extract_slice %arg0[0, %[[I]], 0] [2, 1, 5] [1, 1, 1] : tensor<2x5x5xf32> to tensor<2x5xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: tensor.extract_slice %arg1[0, %[[I]]] [2, 1] [1, 1] : tensor<2x5xf32> to tensor<2xf32>
// CHECK: tensor.insert_slice %{{.*}} into %[[KEEP]][0, %[[I]]] [2, 1] [1, 1] : tensor<2xf32> into tensor<2x5xf32>
// CHECK: scf.yield
func.func @suppress(%overlap: tensor<2x5x5xf32>, %valid: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %keep = ign.suppress %overlap, %valid : (tensor<2x5x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  return %keep : tensor<2x5xf32>
}
