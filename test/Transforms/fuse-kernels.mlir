// RUN: ign-opt %s --ign-fuse-kernels --split-input-file | FileCheck %s
// RUN: ign-opt %s --ign-fuse-kernels=fuse=false --split-input-file | FileCheck %s --check-prefix=NOFUSE

// A matmul carries its epilogue: the bias add and the erf GELU chain, whose
// input the chain reads twice, are one kernel with one result.
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[K:.*]] = ign.kernel %arg0, %arg1, %arg2 : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>):
// CHECK: %[[M:.*]] = ign.matmul %[[X]], %[[W]]
// CHECK-NEXT: %[[T:.*]] = ign.add %[[M]], %[[B]]
// CHECK: ign.div %[[T]]
// CHECK-NEXT: ign.erf
// CHECK: ign.add
// CHECK-NEXT: ign.mul %[[T]]
// CHECK: %[[G:.*]] = ign.mul
// CHECK-NEXT: ign.yield %[[G]] : tensor<4x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[K]]
// NOFUSE-LABEL: func.func @main
// NOFUSE-COUNT-7: ign.kernel
// NOFUSE-NOT: ign.kernel
// NOFUSE: // {{-+}}
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %m = ign.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %t = ign.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %c1 = ign.constant dense<1.41421354> : tensor<f32>
  %d = ign.div %t, %c1 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %e = ign.erf %d : tensor<4x16xf32>
  %c2 = ign.constant dense<1.0> : tensor<f32>
  %p = ign.add %e, %c2 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %q = ign.mul %t, %p : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %c3 = ign.constant dense<0.5> : tensor<f32>
  %g = ign.mul %q, %c3 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  return %g : tensor<4x16xf32>
}

// -----

// Attention as torch exports it: the scaled, transposed operands, the score
// matmul, the mask, the softmax and the NaN guard after it, the matmul with
// the values and the transpose back are one kernel. The mask is computed
// once, in a kernel of its own: it feeds two layers.
// CHECK-LABEL: func.func @main
// CHECK: %[[MASK:.*]] = ign.kernel %arg3 :
// CHECK: ign.select
// CHECK: ign.yield
// CHECK: %[[A1:.*]] = ign.kernel %arg0, %arg1, %arg2, %[[MASK]] :
// CHECK-COUNT-3: ign.transpose
// CHECK: ign.mul
// CHECK: ign.mul
// CHECK: ign.matmul
// CHECK-NEXT: ign.add
// CHECK-NEXT: ign.softmax
// CHECK-NEXT: ign.is_nan
// CHECK: ign.select
// CHECK-NEXT: ign.matmul
// CHECK-NEXT: %[[O:.*]] = ign.transpose
// CHECK-NEXT: ign.yield %[[O]]
// CHECK: %[[A2:.*]] = ign.kernel %arg0, %arg1, %arg2, %[[MASK]] :
// CHECK: return %[[A1]], %[[A2]]
func.func @main(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>, %m: tensor<1x1x8x8xi1>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %zero = ign.constant dense<0.0> : tensor<1xf32>
  %ninf = ign.constant dense<-3.0e+38> : tensor<1xf32>
  %scale = ign.constant dense<0.7> : tensor<f32>
  %mask = ign.select %m, %zero, %ninf : (tensor<1x1x8x8xi1>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x8x8xf32>
  %qt1 = ign.transpose %q {perm = [0, 2, 1, 3]} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
  %kt1 = ign.transpose %k {perm = [0, 2, 3, 1]} : (tensor<1x8x2x4xf32>) -> tensor<1x2x4x8xf32>
  %vt1 = ign.transpose %v {perm = [0, 2, 1, 3]} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
  %qs1 = ign.mul %qt1, %scale : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %ks1 = ign.mul %kt1, %scale : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %s1 = ign.matmul %qs1, %ks1 : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %sm1 = ign.add %s1, %mask : (tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p1 = ign.softmax %sm1 {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %n1 = ign.is_nan %p1 : tensor<1x2x8x8xf32>
  %pz1 = ign.select %n1, %zero, %p1 : (tensor<1x2x8x8xi1>, tensor<1xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %a1 = ign.matmul %pz1, %vt1 : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %o1 = ign.transpose %a1 {perm = [0, 2, 1, 3]} : (tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
  %qt2 = ign.transpose %q {perm = [0, 2, 1, 3]} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
  %kt2 = ign.transpose %k {perm = [0, 2, 3, 1]} : (tensor<1x8x2x4xf32>) -> tensor<1x2x4x8xf32>
  %vt2 = ign.transpose %v {perm = [0, 2, 1, 3]} : (tensor<1x8x2x4xf32>) -> tensor<1x2x8x4xf32>
  %qs2 = ign.mul %qt2, %scale : (tensor<1x2x8x4xf32>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %ks2 = ign.mul %kt2, %scale : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
  %s2 = ign.matmul %qs2, %ks2 : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
  %sm2 = ign.add %s2, %mask : (tensor<1x2x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p2 = ign.softmax %sm2 {axis = 3 : i64} : tensor<1x2x8x8xf32>
  %n2 = ign.is_nan %p2 : tensor<1x2x8x8xf32>
  %pz2 = ign.select %n2, %zero, %p2 : (tensor<1x2x8x8xi1>, tensor<1xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %a2 = ign.matmul %pz2, %vt2 : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %o2 = ign.transpose %a2 {perm = [0, 2, 1, 3]} : (tensor<1x2x8x4xf32>) -> tensor<1x8x2x4xf32>
  return %o1, %o2 : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}

// -----

// Kernels never form a cycle: the add reads the matmul's result and a
// gather of it, so it cannot join the matmul's kernel (the gather, not a
// pointwise op, is a kernel of its own between them).
// CHECK-LABEL: func.func @main
// CHECK: %[[M:.*]] = ign.kernel %arg0, %arg1
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.matmul
// CHECK-NEXT: ign.yield
// CHECK: %[[G:.*]] = ign.kernel %[[M]]
// CHECK: ign.gather
// CHECK: %[[A:.*]] = ign.kernel %[[M]], %[[G]]
// CHECK: ign.add
// CHECK: return %[[A]]
func.func @main(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = ign.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %i = ign.constant dense<[3, 2, 1, 0]> : tensor<4xi64>
  %g = ign.gather %m, %i {axis = 0 : i64} : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<4x4xf32>
  %a = ign.add %m, %g : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %a : tensor<4x4xf32>
}

// -----

// A pointwise producer that feeds only the matmul is computed in its
// kernel; one that is also returned stays a kernel of its own, and so does
// a value read through a reshape (a view between kernels).
// CHECK-LABEL: func.func @main
// CHECK: %[[K:.*]] = ign.kernel %arg0, %arg1 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.constant
// CHECK-NEXT: ign.mul
// CHECK-NEXT: ign.matmul
// CHECK-NEXT: ign.yield
// CHECK: %[[R:.*]] = ign.kernel %arg0 :
// CHECK: ign.relu
// CHECK: %[[K2:.*]] = ign.kernel %[[R]], %arg1 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.matmul
// CHECK-NEXT: ign.yield
// CHECK: %[[V:.*]] = ign.reshape %[[K2]]
// CHECK: %[[E:.*]] = ign.kernel %[[V]] :
// CHECK: ign.exp
// CHECK: return %[[K]], %[[R]], %[[E]]
func.func @main(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>) {
  %c = ign.constant dense<2.0> : tensor<f32>
  %s = ign.mul %x, %c : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %m = ign.matmul %s, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = ign.relu %x : tensor<4x4xf32>
  %m2 = ign.matmul %r, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %v = ign.reshape %m2 {shape = [16]} : (tensor<4x4xf32>) -> tensor<16xf32>
  %e = ign.exp %v : tensor<16xf32>
  return %m, %r, %e : tensor<4x4xf32>, tensor<4x4xf32>, tensor<16xf32>
}

// -----

// im2col columns join the matmul's kernel when its 1024 pixels are enough
// to split it by pixels alone (32 vectors of 16 or more); the 64 pixels of
// the second convolution are not, and its columns are a kernel of their
// own (computed once, not in every workgroup of output channels).
// CHECK-LABEL: func.func @main
// CHECK: ign.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.im2col
// CHECK-NEXT: ign.matmul
// CHECK-NEXT: ign.yield
// CHECK: %[[C:.*]] = ign.kernel
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.im2col
// CHECK-NEXT: ign.yield
// CHECK: ign.kernel %{{.*}}, %[[C]]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.matmul
// CHECK-NEXT: ign.yield
func.func @main(%x: tensor<1x4x32x32xf32>, %w: tensor<8x36xf32>, %y: tensor<1x4x8x8xf32>) -> (tensor<1x8x1024xf32>, tensor<1x8x64xf32>) {
  %c = ign.im2col %x {dilations = [1, 1], kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x4x32x32xf32>) -> tensor<1x36x1024xf32>
  %m = ign.matmul %w, %c : (tensor<8x36xf32>, tensor<1x36x1024xf32>) -> tensor<1x8x1024xf32>
  %d = ign.im2col %y {dilations = [1, 1], kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1]} : (tensor<1x4x8x8xf32>) -> tensor<1x36x64xf32>
  %n = ign.matmul %w, %d : (tensor<8x36xf32>, tensor<1x36x64xf32>) -> tensor<1x8x64xf32>
  return %m, %n : tensor<1x8x1024xf32>, tensor<1x8x64xf32>
}

// -----

// A depthwise convolution takes in the padding of its input (its
// workgroups pad their own slices); an ordinary convolution's padding stays
// a kernel of its own (each workgroup of filters would pad all of it).
// CHECK-LABEL: func.func @main
// CHECK: ign.kernel %arg0, %arg1 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.pad
// CHECK-NEXT: ign.conv {{.*}}group = 4
// CHECK-NEXT: ign.yield
// CHECK: %[[P:.*]] = ign.kernel %arg0 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.pad
// CHECK-NEXT: ign.yield
// CHECK: ign.kernel %[[P]], %arg2 :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ign.conv
// CHECK-NOT: ign.pad
// CHECK: ign.yield
func.func @main(%x: tensor<1x4x8x8xf32>, %dw: tensor<4x1x3x3xf32>, %w: tensor<8x4x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x8x8x8xf32>) {
  %p = ign.pad %x {pads = [0, 0, 1, 1, 0, 0, 1, 1]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32>
  %d = ign.conv %p, %dw {dilations = [1, 1], group = 4, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x10x10xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %q = ign.pad %x {pads = [0, 0, 1, 1, 0, 0, 1, 1]} : (tensor<1x4x8x8xf32>) -> tensor<1x4x10x10xf32>
  %c = ign.conv %q, %w {dilations = [1, 1], pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x8x8xf32>
  return %d, %c : tensor<1x4x8x8xf32>, tensor<1x8x8x8xf32>
}
