// RUN: ign-opt %s | ign-opt | FileCheck %s
// Ops print in their custom forms (attributes equal to their defaults are
// elided) and parse back to the same IR; ops without a custom form (the
// recurrent ones) round-trip in generic form with their defaults filled in.
func.func @elementwise(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xf32>) {
  %0 = ign.add %arg0, %arg1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = ign.less %arg0, %arg1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = ign.select %arg2, %0, %arg0 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = ign.cast %2 : tensor<2x3xf32> to i32
  %4 = ign.clip %arg0 {min = 0.000000e+00 : f64} : tensor<2x3xf32>
  %5 = ign.leaky_relu %4 {alpha = 2.000000e-01 : f32} : tensor<2x3xf32>
  %6 = ign.hard_sigmoid %5 {alpha = 2.000000e-01 : f32} : tensor<2x3xf32>
  %7 = ign.mod %0, %5 {fmod = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = ign.sub %6, %7 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %8, %1, %3, %2 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xf32>
}

func.func @contraction(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>, %arg2: tensor<4xf32>, %arg3: tensor<3x4xf32>, %arg4: tensor<5x4xf32>) -> (tensor<1x4x8x8xf32>, tensor<3x5xf32>, tensor<4x3xf32>) {
  %0 = ign.conv %arg0, %arg1, %arg2 {dilations = [1, 1], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %1 = ign.gemm %arg3, %arg4 {alpha = 5.000000e-01 : f32, trans_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  %2 = ign.einsum %arg3 {equation = "ij->ji"} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return %0, %1, %2 : tensor<1x4x8x8xf32>, tensor<3x5xf32>, tensor<4x3xf32>
}

func.func @data_movement(%arg0: tensor<6x4xf32>) -> (tensor<4x6xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<24xf32>, tensor<3x4xf32>, tensor<8x6xf32>) {
  %0 = ign.transpose %arg0 {perm = [1, 0]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %1:2 = ign.split %arg0 {axis = 0 : i64, sizes = [2, 4]} : (tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>)
  %2 = ign.reshape %arg0 {shape = [24]} : (tensor<6x4xf32>) -> tensor<24xf32>
  %3 = ign.slice %arg0 {sizes = [3, 4], starts = [5, 0], steps = [-2, 1]} : (tensor<6x4xf32>) -> tensor<3x4xf32>
  %4 = ign.pad %0 {mode = "edge", pads = [2, 0, 2, 0]} : (tensor<4x6xf32>) -> tensor<8x6xf32>
  return %0, %1#0, %1#1, %2, %3, %4 : tensor<4x6xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<24xf32>, tensor<3x4xf32>, tensor<8x6xf32>
}

func.func @reductions(%arg0: tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<2x3x4xf32>, tensor<2x1x4xi64>) {
  %0 = ign.reduce_sum %arg0 {axes = [1], keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %values, %indices = ign.topk %arg0 {axis = 2 : i64, k = 2 : i64, largest = false} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
  %1 = ign.softmax %arg0 {axis = 1 : i64} : tensor<2x3x4xf32>
  %2 = ign.arg_max %arg0 {axis = 1 : i64, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  return %0, %values, %indices, %1, %2 : tensor<2x4xf32>, tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<2x3x4xf32>, tensor<2x1x4xi64>
}

func.func @pooling_and_norm(%arg0: tensor<1x2x6x6xf32>, %arg1: tensor<2xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>) {
  %0 = ign.max_pool %arg0 {ceil_mode = true, dilations = [1, 1], kernel_shape = [3, 3], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %1 = ign.batch_norm %arg0, %arg1, %arg1, %arg1, %arg1 {epsilon = 1.000000e-03 : f32} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  return %0, %1 : tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>
}

func.func @constants() -> (tensor<2xi64>, tensor<2x2xf32>) {
  %0 = ign.constant dense<[3, 4]> : tensor<2xi64>
  %1 = ign.constant dense<1.500000e+00> : tensor<2x2xf32>
  return %0, %1 : tensor<2xi64>, tensor<2x2xf32>
}

func.func @recurrent(%arg0: tensor<5x2x3xf32>, %arg1: tensor<1x12x3xf32>, %arg2: tensor<1x12x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>) {
  %y, %y_h = "ign.gru"(%arg0, %arg1, %arg2) {activations = ["Sigmoid", "Tanh"], hidden_size = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  return %y, %y_h : tensor<5x1x2x4xf32>, tensor<1x2x4xf32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK: %0 = ign.add %arg0, %arg1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %1 = ign.less %arg0, %arg1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: %2 = ign.select %arg2, %0, %arg0 : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %3 = ign.cast %2 : tensor<2x3xf32> to i32
// CHECK-NEXT: %4 = ign.clip %arg0 {min = 0.000000e+00 : f64} : tensor<2x3xf32>
// CHECK-NEXT: %5 = ign.leaky_relu %4 {alpha = 2.000000e-01 : f32} : tensor<2x3xf32>
// CHECK-NEXT: %6 = ign.hard_sigmoid %5 : tensor<2x3xf32>
// CHECK-NEXT: %7 = ign.mod %0, %5 {fmod = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %8 = ign.sub %6, %7 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %8, %1, %3, %2 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>, tensor<2x3xf32>
// CHECK-LABEL: func.func @contraction
// CHECK: %0 = ign.conv %arg0, %arg1, %arg2 {dilations = [1, 1], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: %1 = ign.gemm %arg3, %arg4 {alpha = 5.000000e-01 : f32, trans_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %2 = ign.einsum %arg3 {equation = "ij->ji"} : (tensor<3x4xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: return %0, %1, %2 : tensor<1x4x8x8xf32>, tensor<3x5xf32>, tensor<4x3xf32>
// CHECK-LABEL: func.func @data_movement
// CHECK: %0 = ign.transpose %arg0 {perm = [1, 0]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT: %1:2 = ign.split %arg0 {axis = 0 : i64, sizes = [2, 4]} : (tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT: %2 = ign.reshape %arg0 {shape = [24]} : (tensor<6x4xf32>) -> tensor<24xf32>
// CHECK-NEXT: %3 = ign.slice %arg0 {sizes = [3, 4], starts = [5, 0], steps = [-2, 1]} : (tensor<6x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %4 = ign.pad %0 {mode = "edge", pads = [2, 0, 2, 0]} : (tensor<4x6xf32>) -> tensor<8x6xf32>
// CHECK-NEXT: return %0, %1#0, %1#1, %2, %3, %4 : tensor<4x6xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<24xf32>, tensor<3x4xf32>, tensor<8x6xf32>
// CHECK-LABEL: func.func @reductions
// CHECK: %0 = ign.reduce_sum %arg0 {axes = [1], keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %values, %indices = ign.topk %arg0 {axis = 2 : i64, k = 2 : i64, largest = false} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>)
// CHECK-NEXT: %1 = ign.softmax %arg0 {axis = 1 : i64} : tensor<2x3x4xf32>
// CHECK-NEXT: %2 = ign.arg_max %arg0 {axis = 1 : i64, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT: return %0, %values, %indices, %1, %2 : tensor<2x4xf32>, tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<2x3x4xf32>, tensor<2x1x4xi64>
// CHECK-LABEL: func.func @pooling_and_norm
// CHECK: %0 = ign.max_pool %arg0 {ceil_mode = true, dilations = [1, 1], kernel_shape = [3, 3], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT: %1 = ign.batch_norm %arg0, %arg1, %arg1, %arg1, %arg1 {epsilon = 1.000000e-03 : f32} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT: return %0, %1 : tensor<1x2x3x3xf32>, tensor<1x2x6x6xf32>
// CHECK-LABEL: func.func @constants
// CHECK: %0 = ign.constant dense<[3, 4]> : tensor<2xi64>
// CHECK-NEXT: %1 = ign.constant dense<1.500000e+00> : tensor<2x2xf32>
// CHECK-NEXT: return %0, %1 : tensor<2xi64>, tensor<2x2xf32>
// CHECK-LABEL: func.func @recurrent
// CHECK: %y, %y_h = "ign.gru"(%arg0, %arg1, %arg2) {activation_alpha = [], activation_beta = [], activations = ["Sigmoid", "Tanh"], direction = "forward", hidden_size = 4 : i64, linear_before_reset = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
// CHECK-NEXT: return %y, %y_h : tensor<5x1x2x4xf32>, tensor<1x2x4xf32>

// A fused kernel and im2col columns print and parse back.
// CHECK-LABEL: func.func @kernel
// CHECK: %[[K:.*]] = ign.kernel %arg0 : (tensor<1x2x3x3xf32>) -> tensor<1x8x4xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<1x2x3x3xf32>):
// CHECK-NEXT: %[[C:.*]] = ign.im2col %[[X]] {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x3x3xf32>) -> tensor<1x8x4xf32>
// CHECK-NEXT: ign.yield %[[C]] : tensor<1x8x4xf32>
// CHECK-NEXT: }
func.func @kernel(%x: tensor<1x2x3x3xf32>) -> tensor<1x8x4xf32> {
  %0 = ign.kernel %x : (tensor<1x2x3x3xf32>) -> tensor<1x8x4xf32> {
  ^bb0(%a: tensor<1x2x3x3xf32>):
    %c = ign.im2col %a {dilations = [1, 1], kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x3x3xf32>) -> tensor<1x8x4xf32>
    ign.yield %c : tensor<1x8x4xf32>
  }
  return %0 : tensor<1x8x4xf32>
}

// Unsigned input bytes by signed filter bytes accumulate in i32 (a
// quantized convolution, IntegerMatmuls.cpp).
func.func @conv_bytes(%arg0: tensor<1x4x6x6xui8>, %arg1: tensor<8x4x3x3xi8>) -> tensor<1x8x4x4xi32> {
  %0 = ign.conv %arg0, %arg1 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>) -> tensor<1x8x4x4xi32>
  return %0 : tensor<1x8x4x4xi32>
}
// CHECK-LABEL: func.func @conv_bytes
// CHECK: ign.conv %arg0, %arg1 {{.*}} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>) -> tensor<1x8x4x4xi32>
