// RUN: ign-opt %s --ign-outline-kernels --verify-diagnostics

// Outlining needs the model's entry function.
// expected-error@below {{the module has no @main function}}
module {
  func.func @other() {
    return
  }
}
