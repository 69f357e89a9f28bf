module {
  func.func private @k0_ign_matmul(%arg0: tensor<24x256xf32>, %arg1: tensor<256x200xf32>) -> tensor<24x200xf32> attributes {ign.kernel = ["ign.matmul"]} {
    %0 = ign.matmul %arg0, %arg1 : (tensor<24x256xf32>, tensor<256x200xf32>) -> tensor<24x200xf32>
    return %0 : tensor<24x200xf32>
  }
  func.func @main(%arg0: tensor<24x256xf32> {ign.name = "arg0"}, %arg1: tensor<256x200xf32> {ign.name = "arg1", ign.task_weight}) -> (tensor<24x200xf32> {ign.name = "out0"}) {
    %0 = call @k0_ign_matmul(%arg0, %arg1) : (tensor<24x256xf32>, tensor<256x200xf32>) -> tensor<24x200xf32>
    return %0 : tensor<24x200xf32>
  }
}
