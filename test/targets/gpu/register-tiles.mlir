// RUN: ign-opt --split-input-file --ign-gpu-register-tiles --cse %s | FileCheck %s

// A thread's 2x2 register tile of a matmul (the mapping script tiled the
// reduction out of the thread's op and annotated the loop): the element
// loops unroll, the four outputs are carried through the reduction loop
// (loaded before, stored after it), and each step loads A and B once per
// row and column.
// CHECK-LABEL: func.func @register_tile
// CHECK: gpu.launch
// CHECK-COUNT-4: memref.load %{{.*}} : memref<8x8xf32>
// CHECK: %[[R:.*]]:4 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK-DAG: memref.load %arg0[%{{.*}}, %[[K]]]
// CHECK-DAG: memref.load %arg0[%{{.*}}, %[[K]]]
// CHECK-DAG: memref.load %arg1[%[[K]], %{{.*}}]
// CHECK-DAG: memref.load %arg1[%[[K]], %{{.*}}]
// CHECK-NOT: memref.load
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK-COUNT-4: memref.store %[[R]]#{{[0-3]}}, %arg2
func.func @register_tile(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c4, %sz = %c1) {
    %i0 = arith.muli %ty, %c2 : index
    %j0 = arith.muli %tx, %c2 : index
    scf.for %k = %c0 to %c8 step %c1 {
      scf.for %i = %c0 to %c2 step %c1 {
        scf.for %j = %c0 to %c2 step %c1 {
          %ii = arith.addi %i0, %i : index
          %jj = arith.addi %j0, %j : index
          %0 = memref.load %a[%ii, %k] : memref<8x8xf32>
          %1 = memref.load %b[%k, %jj] : memref<8x8xf32>
          %2 = memref.load %c[%ii, %jj] : memref<8x8xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          memref.store %4, %c[%ii, %jj] : memref<8x8xf32>
        }
      }
    } {ign.gpu_register_tile}
    gpu.terminator
  }
  return
}

// -----

// Without a register tile, a reduction loop innermost still accumulates in
// a register: its output's load and store leave the loop.
// CHECK-LABEL: func.func @accumulator
// CHECK: %[[INIT:.*]] = memref.load %arg1[%{{.*}}]
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK-NOT: memref.store
// CHECK: arith.addf %[[ACC]]
// CHECK: memref.store %[[SUM]], %arg1[%{{.*}}]
func.func @accumulator(%in: memref<4x64xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %0 = memref.load %in[%tx, %k] : memref<4x64xf32>
      %1 = memref.load %out[%tx] : memref<4xf32>
      %2 = arith.addf %1, %0 : f32
      memref.store %2, %out[%tx] : memref<4xf32>
    }
    gpu.terminator
  }
  return
}

// -----

// Left alone: two addresses of one buffer that may be the same element,
// a load after the store, a barrier (unknown effects), a loop that may not
// run, and an address that changes in the loop.
// CHECK-LABEL: func.func @refusals
// CHECK-NOT: iter_args
// CHECK: return
func.func @refusals(%in: memref<64xf32>, %out: memref<8xf32>, %i: index, %j: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // %i and %j may be equal.
    scf.for %k = %c0 to %c64 step %c1 {
      %0 = memref.load %in[%k] : memref<64xf32>
      %1 = memref.load %out[%i] : memref<8xf32>
      %2 = arith.addf %1, %0 : f32
      memref.store %2, %out[%i] : memref<8xf32>
      %3 = memref.load %out[%j] : memref<8xf32>
      %4 = arith.addf %3, %0 : f32
      memref.store %4, %out[%j] : memref<8xf32>
    }
    // A load after the store.
    scf.for %k = %c0 to %c64 step %c1 {
      %0 = memref.load %in[%k] : memref<64xf32>
      %1 = memref.load %out[%i] : memref<8xf32>
      %2 = arith.addf %1, %0 : f32
      memref.store %2, %out[%i] : memref<8xf32>
      %3 = memref.load %out[%i] : memref<8xf32>
      memref.store %3, %in[%k] : memref<64xf32>
    }
    // A barrier.
    scf.for %k = %c0 to %c64 step %c1 {
      %0 = memref.load %in[%k] : memref<64xf32>
      %1 = memref.load %out[%i] : memref<8xf32>
      %2 = arith.addf %1, %0 : f32
      memref.store %2, %out[%i] : memref<8xf32>
      gpu.barrier
    }
    // A trip count unknown at compile time.
    scf.for %k = %c0 to %n step %c1 {
      %0 = memref.load %in[%k] : memref<64xf32>
      %1 = memref.load %out[%i] : memref<8xf32>
      %2 = arith.addf %1, %0 : f32
      memref.store %2, %out[%i] : memref<8xf32>
    }
    // The address changes with the loop.
    scf.for %k = %c0 to %c64 step %c1 {
      %0 = memref.load %in[%k] : memref<64xf32>
      %1 = memref.load %out[%k] : memref<8xf32>
      %2 = arith.addf %1, %0 : f32
      memref.store %2, %out[%k] : memref<8xf32>
    }
    gpu.terminator
  }
  return
}

// -----

// An invariant read of a buffer the loop does not write is loaded once.
// CHECK-LABEL: func.func @invariant_read
// CHECK: %[[S:.*]] = memref.load %arg1[%{{.*}}]
// CHECK: scf.for
// CHECK-NOT: memref.load %arg1
// CHECK: arith.mulf %{{.*}}, %[[S]]
func.func @invariant_read(%in: memref<64xf32>, %scale: memref<4xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %0 = memref.load %in[%k] : memref<64xf32>
      %1 = memref.load %scale[%tx] : memref<4xf32>
      %2 = arith.mulf %0, %1 : f32
      memref.store %2, %out[%k] : memref<64xf32>
    }
    gpu.terminator
  }
  return
}
