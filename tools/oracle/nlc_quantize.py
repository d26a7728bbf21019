#!/usr/bin/env python3
"""llama.cpp's own quantizer (llama_model_quantize) run through node-llama-cpp's prebuilt libllama.

    nlc_quantize.py IN.gguf OUT.gguf FTYPE [pure]

FTYPE is a llama_ftype number (7 Q8_0, 15 Q4_K_M, 17 Q5_K_M, 38 MXFP4_MOE, ...). Used to check
that make_synthetic_model.py's mixes choose the tensor types llama-quantize chooses (compare the
two files' tensor tables with gguf_dump.py) and, for ggml's reference encoders (MXFP4), the bytes.
The library is looked up in $NLC_DIR (default /work/oracle); the struct below is
llama_model_quantize_params of the bundled llama.cpp (include/llama.h).
"""
import ctypes
import glob
import os
import sys

nlc = os.environ.get("NLC_DIR", "/work/oracle")
bins = glob.glob(os.path.join(nlc, "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/"))
if not bins:
    sys.exit("no prebuilt node-llama-cpp linux-x64 library under " + nlc)
B = bins[0]
for n in ("libggml-base.so", "libggml.v0.4.0.so"):
    ctypes.CDLL(B + n, mode=ctypes.RTLD_GLOBAL)
L = ctypes.CDLL(B + "libllama.v0.4.0.so", mode=ctypes.RTLD_GLOBAL)


class Params(ctypes.Structure):
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    L.llama_model_quantize_default_params.restype = Params
    L.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(Params)]
    L.llama_model_quantize.restype = ctypes.c_uint32
    L.llama_backend_init()
    p = L.llama_model_quantize_default_params()
    p.ftype = int(sys.argv[3])
    p.nthread = 1
    p.pure = len(sys.argv) == 5 and sys.argv[4] == "pure"
    rc = L.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p))
    sys.exit(rc)


if __name__ == "__main__":
    main()
