// RUN: ign-opt %s --ign-outline-kernels --split-input-file | FileCheck %s

// Each compute op becomes a private kernel function called from @main.
// Inline constants are cloned into the kernel that uses them; reshapes of
// computed values stay in @main as views.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[S:.*]] = call @k0_ign_add(%[[A]], %[[B]])
// CHECK-NEXT: %[[R:.*]] = ign.reshape %[[S]]
// CHECK-NEXT: %[[M:.*]] = call @k1_ign_mul(%[[R]])
// CHECK-NEXT: return %[[M]], %[[S]]
// CHECK: func.func private @k0_ign_add(%{{.*}}: tensor<2x3xf32>, %{{.*}}: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {ign.kernel = ["ign.add"]}
// CHECK: func.func private @k1_ign_mul(%[[X:.*]]: tensor<6xf32>) -> tensor<6xf32>
// CHECK-NEXT: %[[C:.*]] = ign.constant dense<2.0
// CHECK-NEXT: ign.mul %[[X]], %[[C]]
func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<2x3xf32>) {
  %s = ign.add %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = ign.reshape %s {shape = [6]} : (tensor<2x3xf32>) -> tensor<6xf32>
  %c = ign.constant dense<2.0> : tensor<6xf32>
  %m = ign.mul %r, %c : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %m, %s : tensor<6xf32>, tensor<2x3xf32>
}

// -----

// A returned constant has no buffer: it gets a kernel that materializes it.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[K:.*]] = call @k0_ign_constant()
// CHECK-NEXT: return %[[K]]
func.func @main() -> tensor<2xi64> {
  %c = ign.constant dense<[3, 4]> : tensor<2xi64>
  return %c : tensor<2xi64>
}

// -----

// Identical kernels (here two relus of the same shape) are one function
// launched twice; a relu of another shape is a kernel of its own.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[R0:.*]] = call @k0_ign_relu(%arg0)
// CHECK-NEXT: %[[R1:.*]] = call @k0_ign_relu(%[[R0]])
// CHECK-NEXT: %[[R2:.*]] = call @k2_ign_relu(%arg1)
// CHECK-COUNT-2: func.func private @k
// CHECK-NOT: func.func
func.func @main(%a: tensor<4xf32>, %b: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %0 = ign.relu %a : tensor<4xf32>
  %1 = ign.relu %0 : tensor<4xf32>
  %2 = ign.relu %b : tensor<8xf32>
  return %1, %2 : tensor<4xf32>, tensor<8xf32>
}
