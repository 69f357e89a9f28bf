// RUN: ign-opt %s -split-input-file -verify-diagnostics
// Ops whose operands and attributes do not fit together are rejected by
// their type inference; the verifier then reports the failed inference.

func.func @reshape_count(%arg0: tensor<2x3xf32>) -> tensor<5xf32> {
  // expected-error@+2 {{cannot reshape [2x3] (6 elements) to [5] (5 elements)}}
  // expected-error@+1 {{'ign.reshape' op failed to infer returned types}}
  %0 = ign.reshape %arg0 {shape = [5]} : (tensor<2x3xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @reshape_negative(%arg0: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error@+2 {{has a negative dim}}
  // expected-error@+1 {{'ign.reshape' op failed to infer returned types}}
  %0 = ign.reshape %arg0 {shape = [-1]} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @reshape_result_mismatch(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+2 {{inferred type(s) 'tensor<6xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error@+1 {{'ign.reshape' op failed to infer returned types}}
  %0 = ign.reshape %arg0 {shape = [6]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_repeat(%arg0: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error@+2 {{is not a permutation}}
  // expected-error@+1 {{'ign.transpose' op failed to infer returned types}}
  %0 = ign.transpose %arg0 {perm = [0, 0]} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @transpose_out_of_range(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+2 {{is not a permutation}}
  // expected-error@+1 {{'ign.transpose' op failed to infer returned types}}
  %0 = ign.transpose %arg0 {perm = [2, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_rank(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+2 {{perm has 3 entries for rank 2}}
  // expected-error@+1 {{'ign.transpose' op failed to infer returned types}}
  %0 = ign.transpose %arg0 {perm = [1, 0, 2]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @conv_channels(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+2 {{input channels 3, group 1 and weight [4x2x3x3] do not agree}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %arg0, %arg1 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_group(%arg0: tensor<1x4x8x8xf32>, %arg1: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error@+2 {{input channels 4, group 4 and weight [6x2x3x3] do not agree}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %arg0, %arg1 {dilations = [1, 1], group = 4 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @conv_bias(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>, %arg2: tensor<3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+2 {{bias size must equal output channels 4}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %arg0, %arg1, %arg2 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_window_attrs(%arg0: tensor<1x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+2 {{window attributes do not match 2 spatial dims}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %arg0, %arg1 {dilations = [1, 1], pads = [0, 0], strides = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_kernel_too_big(%arg0: tensor<1x3x2x2xf32>, %arg1: tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32> {
  // expected-error@+2 {{kernel [4x3x3x3] does not fit input [1x3x2x2] with its padding}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %arg0, %arg1 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  return %0 : tensor<1x4x1x1xf32>
}

// -----

func.func @matmul_contraction(%arg0: tensor<3x4xf32>, %arg1: tensor<5x6xf32>) -> tensor<3x6xf32> {
  // expected-error@+2 {{contraction dims differ: lhs [3x4] rhs [5x6]}}
  // expected-error@+1 {{'ign.matmul' op failed to infer returned types}}
  %0 = ign.matmul %arg0, %arg1 : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @matmul_batch(%arg0: tensor<2x3x4xf32>, %arg1: tensor<3x4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error@+2 {{batch dims of [2x3x4] and [3x4x5] do not broadcast}}
  // expected-error@+1 {{'ign.matmul' op failed to infer returned types}}
  %0 = ign.matmul %arg0, %arg1 : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @matmul_element_type(%arg0: tensor<3x4xf32>, %arg1: tensor<4x5xf16>) -> tensor<3x5xf32> {
  // expected-error@+2 {{operand element types differ: 'f32' vs 'f16'}}
  // expected-error@+1 {{'ign.matmul' op failed to infer returned types}}
  %0 = ign.matmul %arg0, %arg1 : (tensor<3x4xf32>, tensor<4x5xf16>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Bytes by bytes (and words by words) accumulate in i32; bytes by anything
// else are refused.
func.func @matmul_bytes(%arg0: tensor<3x4xui8>, %arg1: tensor<4x5xi16>) -> tensor<3x5xi32> {
  // expected-error@+2 {{operand element types differ: 'ui8' vs 'i16'}}
  // expected-error@+1 {{'ign.matmul' op failed to infer returned types}}
  %0 = ign.matmul %arg0, %arg1 : (tensor<3x4xui8>, tensor<4x5xi16>) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}

// -----

func.func @matmul_bytes_result(%arg0: tensor<3x4xui8>, %arg1: tensor<4x5xi8>) -> tensor<3x5xi8> {
  // expected-error@+2 {{'ign.matmul' op inferred type(s) 'tensor<3x5xi32>' are incompatible with return type(s) of operation 'tensor<3x5xi8>'}}
  // expected-error@+1 {{'ign.matmul' op failed to infer returned types}}
  %0 = ign.matmul %arg0, %arg1 : (tensor<3x4xui8>, tensor<4x5xi8>) -> tensor<3x5xi8>
  return %0 : tensor<3x5xi8>
}

// -----

func.func @gemm_contraction(%arg0: tensor<3x4xf32>, %arg1: tensor<5x4xf32>) -> tensor<3x4xf32> {
  // expected-error@+2 {{gemm contraction dims differ: 4 vs 5}}
  // expected-error@+1 {{'ign.gemm' op failed to infer returned types}}
  %0 = ign.gemm %arg0, %arg1 : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @concat_mismatch(%arg0: tensor<2x3xf32>, %arg1: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error@+2 {{concat input [3x3] differs from [2x3] outside axis 1}}
  // expected-error@+1 {{'ign.concat' op failed to infer returned types}}
  %0 = ign.concat %arg0, %arg1 {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @concat_rank(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3x1xf32>) -> tensor<4x3xf32> {
  // expected-error@+2 {{concat inputs differ in rank or type}}
  // expected-error@+1 {{'ign.concat' op failed to infer returned types}}
  %0 = ign.concat %arg0, %arg1 {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @concat_axis(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{concat axis 2 out of range for rank 2}}
  // expected-error@+1 {{'ign.concat' op failed to infer returned types}}
  %0 = ign.concat %arg0 {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @pool_window_too_big(%arg0: tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32> {
  // expected-error@+2 {{pooling window 5 does not fit spatial dim 0 of size 4 with its padding}}
  // expected-error@+1 {{'ign.max_pool' op failed to infer returned types}}
  %0 = ign.max_pool %arg0 {dilations = [1, 1], kernel_shape = [5, 5], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  return %0 : tensor<1x2x1x1xf32>
}

// -----

func.func @pool_dilated_window_too_big(%arg0: tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32> {
  // expected-error@+2 {{pooling window 3 does not fit spatial dim 0 of size 4 with its padding}}
  // expected-error@+1 {{'ign.avg_pool' op failed to infer returned types}}
  %0 = ign.avg_pool %arg0 {dilations = [2, 2], kernel_shape = [3, 3], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  return %0 : tensor<1x2x1x1xf32>
}

// -----

func.func @pool_rank(%arg0: tensor<2x4xf32>) -> tensor<2x2xf32> {
  // expected-error@+2 {{pooling input must have rank >= 3, got 2}}
  // expected-error@+1 {{'ign.max_pool' op failed to infer returned types}}
  %0 = ign.max_pool %arg0 {dilations = [1], kernel_shape = [2], pads = [0, 0], strides = [2]} : (tensor<2x4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @add_broadcast(%arg0: tensor<2x3xf32>, %arg1: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{shapes [2x3] and [4] do not broadcast}}
  // expected-error@+1 {{'ign.add' op failed to infer returned types}}
  %0 = ign.add %arg0, %arg1 : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @split_sizes(%arg0: tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>) {
  // expected-error@+2 {{do not add up to dim 6}}
  // expected-error@+1 {{'ign.split' op failed to infer returned types}}
  %0:2 = ign.split %arg0 {axis = 0 : i64, sizes = [2, 3]} : (tensor<6x4xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>)
  return %0#0, %0#1 : tensor<2x4xf32>, tensor<3x4xf32>
}

// -----

func.func @slice_out_of_bounds(%arg0: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error@+2 {{slice dim 0 reads outside [0, 5)}}
  // expected-error@+1 {{'ign.slice' op failed to infer returned types}}
  %0 = ign.slice %arg0 {sizes = [3], starts = [3], steps = [1]} : (tensor<5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @pad_reflect(%arg0: tensor<2x3xf32>) -> tensor<2x9xf32> {
  // expected-error@+2 {{reflect pads on dim 1 must be smaller than its size 3}}
  // expected-error@+1 {{'ign.pad' op failed to infer returned types}}
  %0 = ign.pad %arg0 {mode = "reflect", pads = [0, 3, 0, 3]} : (tensor<2x3xf32>) -> tensor<2x9xf32>
  return %0 : tensor<2x9xf32>
}

// -----

func.func @pad_bad_mode(%arg0: tensor<2x3xf32>) -> tensor<2x5xf32> {
  // expected-error@+1 {{'ign.pad' op attribute 'mode' failed to satisfy constraint: string attribute one of: constant, reflect, edge, wrap}}
  %0 = ign.pad %arg0 {mode = "mirror", pads = [0, 1, 0, 1]} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reduce_axes_unsorted(%arg0: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  // expected-error@+2 {{reduction axes must be sorted, unique and in [0, 3)}}
  // expected-error@+1 {{'ign.reduce_sum' op failed to infer returned types}}
  %0 = ign.reduce_sum %arg0 {axes = [2, 1]} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  return %0 : tensor<2x1x1xf32>
}

// -----

func.func @topk_too_many(%arg0: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  // expected-error@+2 {{topk k=4 exceeds dim size 3}}
  // expected-error@+1 {{'ign.topk' op failed to infer returned types}}
  %values, %indices = ign.topk %arg0 {axis = 1 : i64, k = 4 : i64} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return %values, %indices : tensor<2x4xf32>, tensor<2x4xi64>
}

// -----

func.func @einsum_size_mismatch(%arg0: tensor<3x4xf32>, %arg1: tensor<5x6xf32>) -> tensor<3x6xf32> {
  // expected-error@+2 {{einsum index 'j' has sizes 4 and 5}}
  // expected-error@+1 {{'ign.einsum' op failed to infer returned types}}
  %0 = ign.einsum %arg0, %arg1 {equation = "ij,jk->ik"} : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}

// -----

func.func @batch_norm_params(%arg0: tensor<2x3x4xf32>, %arg1: tensor<4xf32>) -> tensor<2x3x4xf32> {
  // expected-error@+2 {{scale/bias/mean/variance must have shape [3], got [4]}}
  // expected-error@+1 {{'ign.batch_norm' op failed to infer returned types}}
  %0 = ign.batch_norm %arg0, %arg1, %arg1, %arg1, %arg1 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @exp_integer(%arg0: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error@+1 {{'ign.exp' op operand #0 must be statically shaped floating-point tensor, but got 'tensor<2xi32>'}}
  %0 = ign.exp %arg0 : tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @dynamic_shape(%arg0: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error@+1 {{'ign.relu' op operand #0 must be statically shaped tensor, but got 'tensor<?x3xf32>'}}
  %0 = ign.relu %arg0 : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @kernel_arg_mismatch(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ign.kernel' op input type 'tensor<2xf32>' differs from its body argument's 'tensor<3xf32>'}}
  %0 = ign.kernel %arg0 : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<3xf32>):
    %c = ign.constant dense<1.0> : tensor<2xf32>
    ign.yield %c : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @kernel_yield_mismatch(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ign.kernel' op yields 'tensor<2xf32>', 'tensor<2xf32>' but has results 'tensor<2xf32>'}}
  %0 = ign.kernel %arg0 : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>):
    ign.yield %a, %a : tensor<2xf32>, tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @kernel_uses_value_from_above(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  // expected-note@+1 {{required by region isolation constraints}}
  %0 = ign.kernel : () -> tensor<2xf32> {
    // expected-error@+1 {{using value defined outside the region}}
    %r = ign.relu %arg0 : tensor<2xf32>
    ign.yield %r : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @col2im_pixels(%c: tensor<1x8x9xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error@+2 {{col2im input [1x8x9] is not [N, F*4, 12]}}
  // expected-error@+1 {{'ign.col2im' op failed to infer returned types}}
  %0 = ign.col2im %c {dilations = [1, 1], input_shape = [3, 4], kernel_shape = [2, 2], output_shape = [6, 6], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x8x9xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

func.func @col2im_rank(%c: tensor<1x8x9xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error@+2 {{col2im attributes disagree on the number of spatial dims}}
  // expected-error@+1 {{'ign.col2im' op failed to infer returned types}}
  %0 = ign.col2im %c {dilations = [1], input_shape = [3, 3], kernel_shape = [2, 2], output_shape = [6, 6], pads = [0, 0, 0, 0], strides = [2, 2]} : (tensor<1x8x9xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

func.func @col2im_stride(%c: tensor<1x8x9xf32>) -> tensor<1x2x6x6xf32> {
  // expected-error@+2 {{col2im sizes must be positive}}
  // expected-error@+1 {{'ign.col2im' op failed to infer returned types}}
  %0 = ign.col2im %c {dilations = [1, 1], input_shape = [3, 3], kernel_shape = [2, 2], output_shape = [6, 6], pads = [0, 0, 0, 0], strides = [0, 2]} : (tensor<1x8x9xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

func.func @conv_filter_block_group(%x: tensor<1x4x8x8xf32>, %w: tensor<1x2x3x3x4xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+2 {{a filter_block 4 weight must be [F / 4, C, k..., 4] with group 1, got [1x2x3x3x4] with group 2}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %x, %w {dilations = [1, 1], filter_block = 4 : i64, group = 2 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<1x2x3x3x4xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_filter_block_size(%x: tensor<1x4x8x8xf32>, %w: tensor<2x4x3x3x4xf32>) -> tensor<1x16x6x6xf32> {
  // expected-error@+2 {{a filter_block 8 weight must be [F / 8, C, k..., 8] with group 1, got [2x4x3x3x4] with group 1}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %x, %w {dilations = [1, 1], filter_block = 8 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<2x4x3x3x4xf32>) -> tensor<1x16x6x6xf32>
  return %0 : tensor<1x16x6x6xf32>
}

// -----

func.func @conv_filter_block_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x8xf32>) -> tensor<1x8x6x6xf32> {
  // expected-error@+2 {{conv input [1x4x8x8] and weight [4x3x3x8] must be ranks >= 3 and one more}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %x, %w {dilations = [1, 1], filter_block = 8 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x3x3x8xf32>) -> tensor<1x8x6x6xf32>
  return %0 : tensor<1x8x6x6xf32>
}

// -----

func.func @nms_scores_not_per_box(%boxes: tensor<1x5x4xf32>, %scores: tensor<1x2x4xf32>, %k: tensor<i64>, %t: tensor<f32>) -> tensor<1x2x4xi64> {
  // expected-error@+2 {{non_max_suppression needs f32 boxes [B, N, 4], f32 scores [B, C, N], an i64 max_output and f32 thresholds (0-d), got 'tensor<1x5x4xf32>', 'tensor<1x2x4xf32>', 'tensor<i64>', 'tensor<f32>', 'tensor<f32>'}}
  // expected-error@+1 {{'ign.non_max_suppression' op failed to infer returned types}}
  %sel = ign.non_max_suppression %boxes, %scores, %k, %t, %t {width = 4 : i64} : (tensor<1x5x4xf32>, tensor<1x2x4xf32>, tensor<i64>, tensor<f32>, tensor<f32>) -> tensor<1x2x4xi64>
  return %sel : tensor<1x2x4xi64>
}

// -----

func.func @scatter_elements_updates_wider(%d: tensor<2x3xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{scatter_elements updates 'tensor<2x4xf32>' do not fit data 'tensor<2x3xf32>' off axis 0}}
  // expected-error@+1 {{'ign.scatter_elements' op failed to infer returned types}}
  %r = ign.scatter_elements %d, %i, %u {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

func.func @recurrent_projected_with_w(%x: tensor<4x2x16xf32>, %w: tensor<1x16x2xf32>, %r: tensor<1x16x4xf32>) -> tensor<4x1x2x4xf32> {
  // expected-error@+2 {{W must be absent with projected_input}}
  // expected-error@+1 {{'ign.lstm' op failed to infer returned types}}
  %y, %y_h, %y_c = "ign.lstm"(%x, %w, %r) {activations = ["Sigmoid", "Tanh", "Tanh"], direction = "forward", hidden_size = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, projected_input} : (tensor<4x2x16xf32>, tensor<1x16x2xf32>, tensor<1x16x4xf32>) -> (tensor<4x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  return %y : tensor<4x1x2x4xf32>
}

// -----

func.func @recurrent_projected_width(%x: tensor<4x2x12xf32>, %r: tensor<2x12x4xf32>) -> tensor<4x2x2x4xf32> {
  // expected-error@+2 {{projected X must be [seq, batch, 24], got [4x2x12]}}
  // expected-error@+1 {{'ign.gru' op failed to infer returned types}}
  %y, %y_h = "ign.gru"(%x, %r) {activations = ["Sigmoid", "Tanh", "Sigmoid", "Tanh"], direction = "bidirectional", hidden_size = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0>, projected_input} : (tensor<4x2x12xf32>, tensor<2x12x4xf32>) -> (tensor<4x2x2x4xf32>, tensor<2x2x4xf32>)
  return %y : tensor<4x2x2x4xf32>
}

// -----

func.func @recurrent_without_w(%x: tensor<4x2x3xf32>, %r: tensor<1x12x4xf32>) -> tensor<4x1x2x4xf32> {
  // expected-error@+2 {{W must be a statically shaped tensor}}
  // expected-error@+1 {{'ign.gru' op failed to infer returned types}}
  %y, %y_h = "ign.gru"(%x, %r) {activations = ["Sigmoid", "Tanh"], direction = "forward", hidden_size = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0>} : (tensor<4x2x3xf32>, tensor<1x12x4xf32>) -> (tensor<4x1x2x4xf32>, tensor<1x2x4xf32>)
  return %y : tensor<4x1x2x4xf32>
}

// -----

// A convolution's input and weight share an element type, but for bytes.
func.func @conv_element_type(%arg0: tensor<1x4x6x6xui8>, %arg1: tensor<8x4x3x3xf32>) -> tensor<1x8x4x4xi32> {
  // expected-error@+2 {{input and weight element types differ}}
  // expected-error@+1 {{'ign.conv' op failed to infer returned types}}
  %0 = ign.conv %arg0, %arg1 {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xf32>) -> tensor<1x8x4x4xi32>
  return %0 : tensor<1x8x4x4xi32>
}
