#!/usr/bin/env python3
"""Kernel facts that arlsim's own CUDA runtime cannot measure, taken with PyTorch on one GPU.

arlsim's calibration times its own kernels (cuBLAS GEMMs, an unfused attention). Inference
engines run fused attention (FlashAttention, cuDNN), and a long prefill holds the tensor cores
busy for minutes, long enough for the power limit to lower the clock. This script measures both,
as kernel-level facts for calib/SOURCES.md:

  sustained   a bf16 GEMM (and a causal attention) run back to back for SECONDS each, the
              throughput and the SM clock, power and throttle reasons read every interval;
  attention   fused attention forward through torch's scaled_dot_product_attention, per backend
              (FlashAttention-2 as torch builds it, cuDNN): causal prefill by length; a prefill
              chunk against a longer cached prefix (the chunk's causal square plus its
              non-causal rectangle against the prefix, the work a chunked-prefill engine does);
              decode (one query a sequence) by batch and context length, as bytes of KV read.

Every figure is the median of timed repeats after warm-ups, with CUDA events. Prints a table and
writes JSON (--out). Usage: python3 tests/bench/torch_kernels.py [--sustain SECONDS] [--out F]
Needs PyTorch with CUDA and a GPU; pynvml (nvidia-ml-py) for the clock readings when present.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

try:
    import pynvml
    pynvml.nvmlInit()
    NVML = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception:  # no NVML: throughput alone
    NVML = None


def gpu_state():
    """The SM clock, power, temperature and the clock-event (throttle) reasons, where NVML
    answers."""
    if NVML is None:
        return {}
    reads = {
        "sm_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(NVML, pynvml.NVML_CLOCK_SM),
        "power_w": lambda: pynvml.nvmlDeviceGetPowerUsage(NVML) / 1000.0,
        "temp_c": lambda: pynvml.nvmlDeviceGetTemperature(NVML, pynvml.NVML_TEMPERATURE_GPU),
        "throttle": lambda: int(getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons",
                                        getattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))(NVML)),
    }
    state = {}
    for key, read in reads.items():
        try:
            state[key] = read()
        except Exception:
            pass
    return state


def timed(fn, repeats=10, warmups=3):
    """Median seconds of one call of fn over repeats, after warmups."""
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times), (max(times) - min(times)) / statistics.median(times)


def sustain(name, fn, flops, seconds, interval=2.0):
    """Runs fn back to back for seconds; per interval: TFLOP/s and the GPU's state at its end."""
    rows = []
    fn()
    torch.cuda.synchronize()
    t_end = time.time() + seconds
    while time.time() < t_end:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        calls = 0
        t0 = time.time()
        start.record()
        while time.time() - t0 < interval:
            for _ in range(8):
                fn()
            calls += 8
            torch.cuda.synchronize() if calls % 64 == 0 else None
        end.record()
        end.synchronize()
        sec = start.elapsed_time(end) / 1e3
        row = {"t_s": round(seconds - (t_end - time.time()), 1), "tflops": flops * calls / sec / 1e12}
        row.update(gpu_state())
        rows.append(row)
        print(f"  {name:28s} t={row['t_s']:5.1f}s {row['tflops']:7.1f} TFLOP/s "
              + " ".join(f"{k}={v}" for k, v in row.items() if k not in ("t_s", "tflops")), flush=True)
    return rows


def attention_flops(b, hq, lq, lkv, d, causal):
    """Forward FLOPs: two matrix products of 2*lq*lkv*d each per head; a causal square keeps
    half (lq == lkv)."""
    pairs = lq * lkv * (0.5 if causal else 1.0)
    return 4.0 * b * hq * pairs * d


def sdpa(q, k, v, causal, backend):
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def qkv(b, hq, hkv, lq, lkv, d, dev):
    # K and V expanded to the query heads: every backend takes that layout; a GQA kernel reads
    # each KV head once per group instead, which matters for decode (bytes) and not for prefill.
    q = torch.randn(b, hq, lq, d, device=dev, dtype=torch.bfloat16)
    k = torch.randn(b, hkv, lkv, d, device=dev, dtype=torch.bfloat16).repeat_interleave(hq // hkv, 1)
    v = torch.randn(b, hkv, lkv, d, device=dev, dtype=torch.bfloat16).repeat_interleave(hq // hkv, 1)
    return q, k, v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sustain", type=float, default=30.0, help="seconds of each sustained run")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "sm_count": props.multi_processor_count,
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version(), "idle": gpu_state()}
    if NVML is not None:
        try:
            result["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(NVML) / 1000.0
            result["max_sm_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(NVML, pynvml.NVML_CLOCK_SM)
        except Exception:
            pass
    print(json.dumps(result), flush=True)

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    d, hq, hkv = 128, 40, 8  # Qwen3-14B's attention: 40 query heads, 8 KV heads of 128

    # Causal prefill of one sequence by length.
    prefill = []
    for name, be in backends.items():
        for length in (1024, 2048, 4096, 8192, 16384, 32768):
            q, k, v = qkv(1, hq, hkv, length, length, d, dev)
            try:
                sec, jitter = timed(lambda: sdpa(q, k, v, True, be))
            except RuntimeError as e:
                print(f"prefill {name} {length}: {str(e).splitlines()[0]}")
                continue
            tf = attention_flops(1, hq, length, length, d, True) / sec / 1e12
            prefill.append({"backend": name, "seq_len": length, "seconds": sec, "jitter": jitter,
                            "tflops": tf})
            print(f"prefill  {name:5s} L={length:6d} {sec*1e3:8.3f} ms {tf:6.1f} TFLOP/s jitter {jitter:.1%}",
                  flush=True)
            del q, k, v
    result["prefill"] = prefill

    # A prefill chunk of C tokens at offset P: causal C x C plus the C x P rectangle.
    chunks = []
    chunk = 8192
    for name, be in backends.items():
        for prefix in (0, 8192, 16384, 24576):
            q, k, v = qkv(1, hq, hkv, chunk, chunk, d, dev)
            parts = [(q, k, v, True)]
            if prefix:
                kp, vp = qkv(1, hq, hkv, 1, prefix, d, dev)[1:]
                parts.append((q, kp, vp, False))
            try:
                sec, jitter = timed(lambda: [sdpa(a, b_, c, cz, be) for a, b_, c, cz in parts])
            except RuntimeError as e:
                print(f"chunk {name} {prefix}: {str(e).splitlines()[0]}")
                continue
            flops = attention_flops(1, hq, chunk, chunk, d, True) + attention_flops(1, hq, chunk, prefix, d, False)
            chunks.append({"backend": name, "chunk": chunk, "prefix": prefix, "seconds": sec,
                           "jitter": jitter, "tflops": flops / sec / 1e12})
            print(f"chunk    {name:5s} C={chunk} P={prefix:6d} {sec*1e3:8.3f} ms {flops/sec/1e12:6.1f} TFLOP/s",
                  flush=True)
            del q, k, v, parts
    result["chunks"] = chunks

    # Decode: one query per sequence against its KV; the GQA heads expanded, so the bytes a GQA
    # kernel reads are the unexpanded ones (hkv heads): reported both ways.
    decode = []
    for name, be in backends.items():
        for batch, context in ((8, 32768), (32, 8192), (64, 4096), (128, 2048), (256, 1024), (64, 16384)):
            q, k, v = qkv(batch, hq, hkv, 1, context, d, dev)
            try:
                sec, jitter = timed(lambda: sdpa(q, k, v, False, be), repeats=20)
            except RuntimeError as e:
                print(f"decode {name} {batch}x{context}: {str(e).splitlines()[0]}")
                continue
            read = 2 * batch * hq * context * d * 2  # K and V, bf16, as expanded
            decode.append({"backend": name, "batch": batch, "context": context, "seconds": sec,
                           "jitter": jitter, "gb_per_s_expanded": read / sec / 1e9})
            print(f"decode   {name:5s} B={batch:4d} ctx={context:6d} {sec*1e6:9.1f} us "
                  f"{read/sec/1e9:7.0f} GB/s of expanded KV", flush=True)
            del q, k, v
    result["decode"] = decode

    # Sustained: a large bf16 GEMM and a 32K causal attention, back to back.
    m = n = k_ = 8192
    a = torch.randn(m, k_, device=dev, dtype=torch.bfloat16)
    b = torch.randn(k_, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
    result["sustained_gemm"] = sustain("gemm 8192^3 bf16", lambda: torch.matmul(a, b, out=c),
                                       2.0 * m * n * k_, args.sustain)
    del a, b, c
    q, k, v = qkv(1, hq, hkv, 32768, 32768, d, dev)
    best = max((r for r in prefill if r["seq_len"] == 32768), key=lambda r: r["tflops"], default=None)
    if best is not None:
        be = backends[best["backend"]]
        result["sustained_attention"] = {
            "backend": best["backend"],
            "rows": sustain(f"attention 32K causal {best['backend']}", lambda: sdpa(q, k, v, True, be),
                            attention_flops(1, hq, 32768, 32768, d, True), args.sustain / 2)}
    result["after"] = gpu_state()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
