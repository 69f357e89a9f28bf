// RUN: ign-opt %s --ign-sink-reshapes --split-input-file | FileCheck %s

// A convolution computed as a matmul over [N, F, P] and reshaped back:
// the residual add and the relu move above the reshape and read the
// matmul's result directly; the residual is seen as [N, F, P] (a view).
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[E:.*]] = ign.exp %arg0
// CHECK-NEXT: %[[R:.*]] = ign.reshape %arg1 {shape = [1, 8, 64]}
// CHECK-NEXT: %[[A:.*]] = ign.add %[[E]], %[[R]] : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
// CHECK-NEXT: %[[Y:.*]] = ign.relu %[[A]] : tensor<1x8x64xf32>
// CHECK-NEXT: %[[O:.*]] = ign.reshape %[[Y]] {shape = [1, 8, 8, 8]}
// CHECK-NEXT: return %[[O]]
func.func @main(%m: tensor<1x8x64xf32>, %res: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %e = ign.exp %m : tensor<1x8x64xf32>
  %v = ign.reshape %e {shape = [1, 8, 8, 8]} : (tensor<1x8x64xf32>) -> tensor<1x8x8x8xf32>
  %a = ign.add %v, %res : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %y = ign.relu %a : tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// -----

// Operands broadcast along whole groups of merged dims map to the source
// layout: a per-channel scale [8, 1, 1] becomes [1, 8, 1].
// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = ign.reshape %arg1 {shape = [1, 8, 1]} : (tensor<8x1x1xf32>) -> tensor<1x8x1xf32>
// CHECK: ign.mul %{{.*}}, %[[S]] : (tensor<1x8x64xf32>, tensor<1x8x1xf32>) -> tensor<1x8x64xf32>
func.func @main(%x: tensor<1x8x64xf32>, %s: tensor<8x1x1xf32>) -> tensor<1x8x8x8xf32> {
  %e = ign.exp %x : tensor<1x8x64xf32>
  %v = ign.reshape %e {shape = [1, 8, 8, 8]} : (tensor<1x8x64xf32>) -> tensor<1x8x8x8xf32>
  %m = ign.mul %v, %s : (tensor<1x8x8x8xf32>, tensor<8x1x1xf32>) -> tensor<1x8x8x8xf32>
  return %m : tensor<1x8x8x8xf32>
}

// -----

// Nothing moves when it would only trade which computed operand goes
// through a reshape, nor when an operand does not map (broadcast along
// part of a merged group).
// CHECK-LABEL: func.func @main
// CHECK: %[[V:.*]] = ign.reshape %{{.*}} {shape = [1, 8, 8, 8]}
// CHECK-NEXT: ign.add %[[V]], %{{.*}} : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>)
// CHECK-NEXT: ign.mul %[[V]], %arg2 : (tensor<1x8x8x8xf32>, tensor<1x1x8x1xf32>)
func.func @main(%x: tensor<1x8x64xf32>, %y: tensor<1x8x8x8xf32>, %z: tensor<1x1x8x1xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  %e = ign.exp %x : tensor<1x8x64xf32>
  %f = ign.exp %y : tensor<1x8x8x8xf32>
  %v = ign.reshape %e {shape = [1, 8, 8, 8]} : (tensor<1x8x64xf32>) -> tensor<1x8x8x8xf32>
  %a = ign.add %v, %f : (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %b = ign.mul %v, %z : (tensor<1x8x8x8xf32>, tensor<1x1x8x1xf32>) -> tensor<1x8x8x8xf32>
  return %a, %b : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>
}
