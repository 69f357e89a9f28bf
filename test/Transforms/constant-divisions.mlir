// RUN: ign-opt %s --ign-constant-divisions --split-input-file | FileCheck %s

// HardSwish as exported: x * clip(x + 3, 0, 6) / 6 multiplies by 1/6
// (0x3E2AAAAB); the divisor's constant goes with its last use.
// CHECK-LABEL: func.func @hardswish
// CHECK-NOT: ign.div
// CHECK-NOT: dense<6.0
// CHECK: %[[R:.*]] = ign.constant dense<0.166666672> : tensor<1xf32>
// CHECK: ign.mul %{{.*}}, %[[R]] : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
func.func @hardswish(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %three = ign.constant dense<3.0> : tensor<1xf32>
  %six = ign.constant dense<6.0> : tensor<1xf32>
  %s = ign.add %x, %three : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %c = ign.clip %s {min = 0.0 : f64, max = 6.0 : f64} : tensor<1x4xf32>
  %m = ign.mul %x, %c : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %y = ign.div %m, %six : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}

// -----

// One reciprocal per element of a broadcast divisor; a divisor used
// elsewhere stays for that use.
// CHECK-LABEL: func.func @per_channel
// CHECK-DAG: %[[D:.*]] = ign.constant dense<{{\[\[}}2.000000e+00], [4.000000e+00]]> : tensor<2x1xf32>
// CHECK-DAG: %[[R:.*]] = ign.constant dense<{{\[\[}}5.000000e-01], [2.500000e-01]]> : tensor<2x1xf32>
// CHECK: %[[Y:.*]] = ign.mul %arg0, %[[R]]
// CHECK: ign.add %[[Y]], %[[D]]
func.func @per_channel(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %d = ign.constant dense<[[2.0], [4.0]]> : tensor<2x1xf32>
  %y = ign.div %x, %d : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %z = ign.add %y, %d : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %z : tensor<2x3xf32>
}

// -----

// Zero, a denormal's reciprocal (1 / 1e-39 overflows), a divisor that is
// no constant, and integers keep their divisions.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: ign.div
// CHECK-NOT: ign.mul
func.func @kept(%x: tensor<4xf32>, %v: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %zero = ign.constant dense<[1.0, 0.0, 2.0, 4.0]> : tensor<4xf32>
  %tiny = ign.constant dense<1.0e-39> : tensor<1xf32>
  %two = ign.constant dense<2> : tensor<1xi32>
  %a = ign.div %x, %zero : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = ign.div %x, %tiny : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %c = ign.div %x, %v : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = ign.div %i, %two : (tensor<4xi32>, tensor<1xi32>) -> tensor<4xi32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}
