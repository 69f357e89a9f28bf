//===- IgnRecurrentOps.td - LSTM, GRU and RNN -----------------------------===//

#ifndef IGN_RECURRENT_OPS_TD
#define IGN_RECURRENT_OPS_TD

include "ign/Dialect/Ign/IR/IgnBase.td"

// Recurrent layers in ONNX's layout 0: X is [seq, batch, input]; Y is
// [seq, num_directions, batch, hidden] and Y_h [num_directions, batch,
// hidden]. The importer transposes layout-1 models into this form and
// spells out the default activations. With `projected_input`, X already
// holds every step's input projection X . W^T + Wb of each direction,
// [seq, batch, num_directions * gates * hidden] (direction 0 first), W is
// absent and B's Wb half is not read (ign-hoist-recurrent-projections
// makes that one Gemm per direction outside the loop over time).
class Ign_RecurrentOp<string mnemonic, dag extraOperands, dag extraAttrs,
                      dag extraResults>
    : Ign_Op<mnemonic, [AttrSizedOperandSegments]> {
  let arguments = !con(
      (ins Ign_FloatTensor:$x, Optional<Ign_Tensor>:$w, Ign_Tensor:$r,
           Optional<Ign_Tensor>:$b, Optional<Ign_IndexTensor>:$sequence_lens,
           Optional<Ign_Tensor>:$initial_h),
      extraOperands,
      (ins Ign_StrEnum<["forward", "reverse", "bidirectional"], "forward">:$direction,
           I64Attr:$hidden_size, StrArrayAttr:$activations,
           DefaultValuedAttr<F32ArrayAttr, "{}">:$activation_alpha,
           DefaultValuedAttr<F32ArrayAttr, "{}">:$activation_beta,
           OptionalAttr<F32Attr>:$clip, UnitAttr:$projected_input),
      extraAttrs);
  let results = !con((outs Ign_Tensor:$y, Ign_Tensor:$y_h), extraResults);
}

def Ign_LSTMOp : Ign_RecurrentOp<"lstm",
    (ins Optional<Ign_Tensor>:$initial_c, Optional<Ign_Tensor>:$peepholes),
    (ins DefaultValuedAttr<BoolAttr, "false">:$input_forget),
    (outs Ign_Tensor:$y_c)> {
  let summary = "long short-term memory layer (gates i, o, f, c)";
}
def Ign_GRUOp : Ign_RecurrentOp<"gru", (ins),
    (ins DefaultValuedAttr<BoolAttr, "false">:$linear_before_reset), (outs)> {
  let summary = "gated recurrent unit layer (gates z, r, h)";
}
def Ign_RNNOp : Ign_RecurrentOp<"rnn", (ins), (ins), (outs)> {
  let summary = "simple recurrent layer";
}

#endif // IGN_RECURRENT_OPS_TD
