func.func @long(%x: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %y = ign.cumsum %x {axis = 1 : i64} : tensor<2x40xf32>
  return %y : tensor<2x40xf32>
}
func.func @short(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = ign.cumsum %x {axis = 1 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
