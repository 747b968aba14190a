#!/usr/bin/env python3
"""Generate a realistic multi-rank torchrun log of a given size, with planted failures at its end.

Seeded and streaming: the same --seed, --size and --ranks give the same bytes, in bounded memory.
Lines come from pre-rendered format templates joined into multi-megabyte chunks, so 1 GiB takes
seconds. The story: `--ranks` ranks on one node train for a long time (tqdm bars, per-step lines,
NCCL INFO chatter, the usual warnings), then a DataLoader worker of one rank dies of a bus error
(/dev/shm exhausted), every other rank's NCCL watchdog times out ten minutes later, and torchrun
tears the job down with SIGTERMs and a failure summary whose "Root Cause" names the wrong rank.

    python benchmarks/gen_log.py --size 1GiB --ranks 8 --seed 7 --out /tmp/bench.log [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HOST = "node-1"
AGENT_PID = 4702
FIRST_PID = 4712  # rank r runs as pid FIRST_PID + r
WORKER_PID = 5871  # the DataLoader worker that dies
START = 1732870800.0  # 2024-11-29 09:00:00 UTC
STEP_SECONDS = 0.35
STEP_US = 350_000
TQDM_TOTAL = 1000
CHUNK_BYTES = 4 << 20
SITE = "/usr/local/lib/python3.11/site-packages"
TORCH = f"{SITE}/torch"
PRIMARY_ID = "dataloader-worker-failure/shm-exhausted"

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)(b?)\s*$", re.IGNORECASE)
_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """'1GiB', '50MiB', '1G' (binary), '500MB' (decimal) or a byte count -> bytes."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; write e.g. 1GiB, 50MiB, 500MB or 1048576")
    number, unit, binary, b = m.groups()
    base = 1000 if (unit and b and not binary) else 1024
    return int(float(number) * base ** _POW[unit.lower()])


def format_size(n: int) -> str:
    """Bytes -> '1GiB', '50MiB', '1.5GiB' or a plain count."""
    for unit, power in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << power:
            value = n / (1 << power)
            return f"{value:g}{unit}" if value == round(value, 2) else f"{n}B"
    return f"{n}B"


def glog_time(t: float) -> str:
    """Epoch seconds -> the glog/c10 stamp without its level letter: '1129 16:29:22.217000'."""
    tm = time.gmtime(t)
    us = round((t - math.floor(t)) * 1e6) % 1_000_000
    return f"{tm.tm_mon:02d}{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}.{us:06d}"


def iso_time(t: float) -> str:
    """Epoch seconds -> Python logging's '2024-11-29 16:29:22,217'."""
    tm = time.gmtime(t)
    ms = int((t - math.floor(t)) * 1000)
    return time.strftime("%Y-%m-%d %H:%M:%S", tm) + f",{ms:03d}"


def torchrun_time(t: float) -> str:
    """torchrun's failure-summary stamp: '2024-11-29_16:29:22'."""
    return time.strftime("%Y-%m-%d_%H:%M:%S", time.gmtime(t))


# sub-second parts of the clock, by microsecond value: '.217000' (glog) and ',217' (logging)
_US = {u: f"{u:06d}" for u in range(0, 1_000_000, 50_000)}
_MS = {u: f",{u // 1000:03d}" for u in _US}


def _esc(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _pid(rank: int) -> int:
    return FIRST_PID + rank


def _prefix(rng: random.Random, rank: int) -> str:
    x = rng.random()
    if x < 0.45:
        return f"[rank{rank}]:"
    if x < 0.70:
        return f"[default{rank}]:"
    return ""


# ---------------------------------------------------------------------------------------------
# tqdm


def _tqdm_clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _tqdm_bar(n: int, total: int, width: int = 10) -> str:
    full, part = divmod(int(n / total * width * 8), 8)
    if full >= width:
        return "█" * width
    return "█" * full + " ▏▎▍▌▋▊▉"[part] + " " * (width - full - 1)


def tqdm_updates(rng: random.Random, total: int) -> list[str]:
    """One epoch of tqdm updates as tqdm writes them to a file.

    Each is '\\r 12%|█▏        | 120/1000 [00:41<05:02,  2.91it/s]', without a newline.
    """
    out = [f"\r  0%|          | 0/{total} [00:00<?, ?it/s]"]
    base = rng.uniform(2.6, 3.1)
    for n in range(1, total + 1):
        rate = base * rng.uniform(0.97, 1.03)
        elapsed = n / base
        left = (total - n) / rate
        pct = n * 100 // total
        out.append(
            f"\r{pct:3d}%|{_tqdm_bar(n, total)}| {n}/{total} "
            f"[{_tqdm_clock(elapsed)}<{_tqdm_clock(left)}, {rate:5.2f}it/s]"
        )
    return out


# ---------------------------------------------------------------------------------------------
# step lines: format templates over positional fields
# 0 step, 1 lr '3.0e-4', 2 tqdm text (rank 0 only), 3 epoch '0.52', 4 iso time, 5 lr repr '2e-05',
# 6 grad norm, 7 tokens/s, 8 glog time, 9.. loss of rank r at 9 + r

_STEP_FORMS = (
    (0.5, "step {{0}} loss {{{L}}} lr {{1}}"),
    (0.25, "{{{{'loss': {{{L}}}, 'grad_norm': {{6}}, 'learning_rate': {{5}}, 'epoch': {{3}}}}}}"),
    (0.25, "{{4}} - INFO - __main__ - step {{0}} | loss {{{L}}} | lr {{1}} | {{7}} tok/s"),
)


@dataclass(frozen=True)
class StepTemplate:
    """One training step's lines (a subset of ranks) as one format string."""

    text: str
    has_rank0: bool


def step_templates(rng: random.Random, ranks: int, count: int = 96) -> list[StepTemplate]:
    """Random subsets/orders of ranks, prefix styles and line forms for one step each."""
    weights = [w for w, _ in _STEP_FORMS]
    out = []
    for _ in range(count):
        form = rng.choices([f for _, f in _STEP_FORMS], weights)[0]
        chosen = [r for r in range(ranks) if rng.random() < (0.25 if r == 0 else 0.45)]
        if not chosen:
            chosen = [rng.randrange(1, ranks)]
        rng.shuffle(chosen)
        parts = []
        for r in chosen:
            body = form.format(L=9 + r)
            tq = "{2}" if r == 0 else ""
            sep = "" if rng.random() < 0.003 else "\n"  # two ranks' writes joined mid-line
            parts.append(f"{_prefix(rng, r)}{tq}{body}{sep}")
        text = "".join(parts)
        if not text.endswith("\n"):
            text += "\n"
        out.append(StepTemplate(text, 0 in chosen))
    return out


# ---------------------------------------------------------------------------------------------
# noise: format templates over 0 glog time, 1 iso time, 2 step


def _nccl_messages(rng: random.Random, rank: int, ranks: int) -> list[str]:
    nxt, prv = (rank + 1) % ranks, (rank - 1) % ranks
    comm = rng.getrandbits(40)
    return [
        f"Channel {rng.randrange(2):02d}/02 : {rank}[{rank}] -> {nxt}[{nxt}] via P2P/IPC",
        f"Channel {rng.randrange(2):02d}/0 : {prv}[{prv}] -> {rank}[{rank}] via P2P/IPC/read",
        f"Trees [0] {nxt}/-1/-1->{rank}->{prv} [1] {nxt}/-1/-1->{rank}->{prv}",
        "Connected all rings",
        "Connected all trees",
        "threadThresholds 8/8/64 | 64/8/64 | 512 | 512",
        "2 coll channels, 0 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p channels per peer",
        "P2P Chunksize set to 524288",
        f"comm 0x{comm:x} rank {rank} nranks {ranks} cudaDev {rank} nvmlDev {rank} busId "
        f"{0x18000 + rank * 0x11000:x} commId 0x{rng.getrandbits(60):x} - Init COMPLETE",
        f"Setting affinity for GPU {rank} to ffff,ffffffff",
        "NVLS multicast support is not available on dev " + str(rank),
        "Using network Socket",
        "NET/Plugin: No plugin found (libnccl-net.so)",
        "NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: "
        "No such file or directory : when loading libnccl-net.so",
        "NET/IB : No device found.",
        "NET/Socket : Using [0]eth0:10.128.0.17<0>",
        "NCCL_SOCKET_IFNAME set by environment to eth0",
        "cudaDriverVersion 12040",
        "Bootstrap : Using eth0:10.128.0.17<0>",
        f"ncclCommInitRank comm 0x{comm:x} rank {rank} nranks {ranks} cudaDev {rank} nvmlDev {rank} "
        f"busId {0x18000 + rank * 0x11000:x} commId 0x{rng.getrandbits(60):x} - Init START",
        f"init.cc:{rng.choice([1480, 1520])} Cuda Host Alloc Size 4 pointer 0x7f3e{rng.getrandbits(24):06x}",
    ]


_WARNINGS = (
    f"{TORCH}/utils/data/dataloader.py:557: UserWarning: This DataLoader will create 16 worker processes "
    "in total. Our suggested max number of worker in current system is 8, which is smaller than what this "
    "DataLoader is going to create. Please be aware that excessive worker creation might get DataLoader "
    "running slow or even freeze, lower the worker number to avoid potential slowness/freeze if necessary.\n"
    "  warnings.warn(_create_warning_msg(",
    f"{TORCH}/cuda/amp/grad_scaler.py:120: FutureWarning: `torch.cuda.amp.GradScaler(args...)` is "
    "deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.\n"
    "  warnings.warn(",
    f"{SITE}/transformers/utils/generic.py:441: FutureWarning: `torch.utils._pytree._register_pytree_node` "
    "is deprecated. Please use `torch.utils._pytree.register_pytree_node` instead.\n"
    "  _torch_pytree._register_pytree_node(",
    f"{SITE}/huggingface_hub/file_download.py:1132: FutureWarning: `resume_download` is deprecated and will "
    "be removed in version 1.0.0. Downloads always resume when possible. If you want to force a new "
    "download, use `force_download=True`.\n  warnings.warn(",
    f"{TORCH}/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter "
    "should be passed explicitly. In version 2.5 we will raise an exception if use_reentrant is not "
    "passed. use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences "
    "between the two variants.\n  return fn(*args, **kwargs)",
    f"{TORCH}/optim/lr_scheduler.py:143: UserWarning: Detected call of `lr_scheduler.step()` before "
    "`optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping "
    "the first value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate\n"
    '  warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "',
    f"{TORCH}/nn/modules/module.py:1747: DeprecationWarning: `torch.nn.functional.sigmoid` is deprecated. "
    "Use `torch.sigmoid` instead.\n  return forward_call(*args, **kwargs)",
)

_DDP_WARNING = (
    "reducer.cpp:1400] Warning: find_unused_parameters=True was specified in DDP constructor, but did not "
    "find any unused parameters in the forward pass. This flag results in an extra traversal of the "
    "autograd graph every iteration,  which can adversely affect performance. If your model indeed never "
    "has any unused parameters in the forward pass, consider turning this flag off. Note that this "
    "warning may be a false positive if your model has flow control causing later iterations to have "
    "unused parameters. (function operator())"
)

_PRINTS = (
    "Saving checkpoint to /checkpoints/run-42/step_{2}.pt",
    "Checkpoint saved in 4.82s (2.1 GB)",
    "eval: step {2} accuracy 0.7312 ppl 12.44 (took 38.2s)",
    "Validation loss: 2.1043 | best: 2.0981",
    "Throughput: 1247.5 samples/s, 319360 tokens/s, MFU 41.2%",
    "grad norm 12.8 exceeds max_norm 1.0; clipped",
    "skipped 0 corrupt samples in shard 00042 (retry ok)",
    "wandb: WARNING Step only supports monotonically increasing values, use define_metric to set a custom x axis.",
    "Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after a timeout "
    "on the metrics upload; continuing",
    "NOTE: error bars in the eval plot use a 95% interval",
    "Memory: allocated 31.42 GiB, reserved 36.00 GiB, max allocated 33.10 GiB",
    "Loaded 1281167 training samples from /data/imagenet/train (16 shards)",
)


# Noise per training step, and which kinds: `sparse` is a quiet run; `dense` is a verbose one
# (NCCL_DEBUG=INFO on every rank, framework warnings repeated each step, glog chatter), where most
# lines carry a keyword some fingerprint starts with.
PROFILES = {
    "sparse": ((0, 0, 1, 1, 1, 2, 3), (34, 2, 3, 1, 8, 32, 15)),
    "dense": ((4, 6, 8, 10, 12), (55, 4, 12, 4, 18, 4, 3)),
}


def noise_templates(rng: random.Random, ranks: int, count: int = 3000, profile: str = "sparse") -> list[str]:
    """Pre-rendered noise lines (format fields: 0 glog time, 1 iso time, 2 step), weighted by kind."""
    nccl = [_nccl_messages(rng, r, ranks) for r in range(ranks)]
    kinds = ("nccl", "nccl_warn", "warning", "ddp", "glog", "print", "logging")
    weights = PROFILES[profile][1]
    out = []
    for kind in rng.choices(kinds, weights, k=count):
        r = rng.randrange(ranks)
        p = _prefix(rng, r)
        tid = _pid(r) + 78 + rng.randrange(4)
        if kind == "nccl":
            msg = rng.choice(nccl[r])
            line = _esc(f"{p}{HOST}:{_pid(r)}:{tid} [{r}] NCCL INFO {msg}")
        elif kind == "nccl_warn":
            # The network plugins' benign warning (the run goes on without the NIC's PCI position); the same
            # words about a GPU's /sys/class/pci_bus path are NCCL's topology failing init, no chatter.
            dev = rng.choice(["ib0", "ib1", "eth0"])
            line = _esc(f"{p}{HOST}:{_pid(r)}:{tid} [{r}] NCCL WARN Could not find real path of "
                        f"/sys/class/net/{dev}/device")
        elif kind == "warning":
            text = rng.choice(_WARNINGS)
            line = _esc("\n".join(p + part for part in text.split("\n")))
        elif kind == "ddp":
            line = f"[rank{r}]:[W{{0}} {_pid(r)} torch/csrc/distributed/c10d/" + _esc(_DDP_WARNING)
        elif kind == "glog":
            line = rng.choice(
                [
                    f"[rank{r}]:[I{{0}} {_pid(r)} ProcessGroupNCCL.cpp:2169] [PG {rng.randrange(1, 4)} "
                    f"Rank {r}] ProcessGroupNCCL created ncclComm_ 0x{rng.getrandbits(40):x} on CUDA "
                    f"device: {r}",
                    f"[rank{r}]:[W{{0}} {_pid(r)} Utils.hpp:164] Warning: Environment variable "
                    "NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING instead "
                    "(function operator())",
                    f"[rank{r}]:[W{{0}} {_pid(r)} CUDAAllocatorConfig.h:28] Warning: expandable_segments "
                    "not supported on this platform (function operator())",
                    f"I{{0}} {AGENT_PID} torch/distributed/elastic/agent/server/api.py:879] [default] "
                    "worker group still running; heartbeat ok",
                ]
            )
        elif kind == "print":
            line = p + rng.choice(_PRINTS)
        else:
            line = p + rng.choice(
                [
                    "{1} - INFO - trainer - Saving model checkpoint to /checkpoints/run-42/checkpoint-{2}",
                    "{1} - WARNING - trainer - Grad overflow on step {2}; skipping update, reducing loss "
                    "scale to 32768.0",
                    "{1} - INFO - data - prefetch queue depth 14/16, worker wait 0.8 ms",
                    "{1} - INFO - __main__ - epoch boundary reached, shuffling with seed 1234",
                ]
            )
        out.append(line + "\n")
    return out


# ---------------------------------------------------------------------------------------------
# the run


def header(ranks: int) -> list[str]:
    """torchrun's start-up banner, rendezvous, NCCL init and the first warnings."""
    t = START
    g = glog_time(t)
    run = f"{AGENT_PID} torch/distributed/run.py:793]"
    lines = [
        f"W{g} {run} ",
        f"W{g} {run} *****************************************",
        f"W{g} {run} Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
        "to avoid your system being overloaded, please further tune the variable for optimal performance "
        "in your application as needed. ",
        f"W{g} {run} *****************************************",
    ]
    g = glog_time(t + 0.2)
    api = f"{AGENT_PID} torch/distributed/launcher/api.py:188]"
    lines.append(f"I{g} {api} Starting elastic_operator with launch configs:")
    for key, value in (
        ("entrypoint", "train.py"),
        ("min_nodes", "1"),
        ("max_nodes", "1"),
        ("nproc_per_node", str(ranks)),
        ("run_id", "none"),
        ("rdzv_backend", "static"),
        ("rdzv_endpoint", "127.0.0.1:29500"),
        ("rdzv_configs", "{'rank': 0, 'timeout': 900}"),
        ("max_restarts", "0"),
        ("monitor_interval", "0.1"),
        ("log_dir", "/tmp/torchelastic_k2x9q1c8"),
        ("metrics_cfg", "{}"),
    ):
        lines.append(f"I{g} {api}   {key:<17}: {value}")
    g = glog_time(t + 0.9)
    agent = f"{AGENT_PID} torch/distributed/elastic/agent/server/api.py"
    lines += [
        f"I{g} {agent}:864] [default] starting workers for entrypoint: python3",
        f"I{g} {agent}:662] [default] Rendezvous'ing worker group",
        f"I{g} {agent}:525] [default] Rendezvous complete for workers. Result:",
        f"I{g} {agent}:525]   restart_count=0",
        f"I{g} {agent}:525]   master_addr=127.0.0.1",
        f"I{g} {agent}:525]   master_port=29500",
        f"I{g} {agent}:525]   group_rank=0",
        f"I{g} {agent}:525]   group_world_size=1",
        f"I{g} {agent}:525]   local_ranks={list(range(ranks))}",
        f"I{g} {agent}:525]   role_ranks={list(range(ranks))}",
        f"I{g} {agent}:525]   global_ranks={list(range(ranks))}",
        f"I{g} {agent}:525]   role_world_sizes={[ranks] * ranks}",
        f"I{g} {agent}:525]   global_world_sizes={[ranks] * ranks}",
        f"I{g} {agent}:670] [default] Starting worker group",
    ]
    g = glog_time(t + 6.5)
    for r in range(ranks):
        lines.append(
            f"[rank{r}]:[W{g} {_pid(r)} Utils.hpp:164] Warning: Environment variable "
            "NCCL_ASYNC_ERROR_HANDLING is deprecated; use TORCH_NCCL_ASYNC_ERROR_HANDLING "
            "instead (function operator())"
        )
    lines.append(f"{HOST}:{_pid(0)}:{_pid(0)} [0] NCCL INFO Bootstrap : Using eth0:10.128.0.17<0>")
    lines.append(f"{HOST}:{_pid(0)}:{_pid(0)} [0] NCCL INFO NCCL version 2.21.5+cuda12.4")
    rng = random.Random(ranks)
    for r in range(ranks):
        for msg in _nccl_messages(rng, r, ranks):
            lines.append(f"{HOST}:{_pid(r)}:{_pid(r) + 80} [{r}] NCCL INFO {msg}")
    for r in range(ranks):
        for part in _WARNINGS[0].split("\n"):
            lines.append(f"[default{r}]:{part}")
    g = glog_time(t + 41.0)
    for r in range(ranks):
        lines.append(f"[rank{r}]:[W{g} {_pid(r)} torch/csrc/distributed/c10d/{_DDP_WARNING}")
    return [line + "\n" for line in lines]


@dataclass
class Planted:
    """One planted line: where it is and what it is."""

    line: int
    rank: int | None
    kind: str
    text: str


@dataclass
class Truth:
    """What a correct diagnosis of the generated log says, with the planted lines."""

    seed: int
    size: int
    ranks: int
    generator: str = ""  # hash of this file: a kept log is reused only by the same generator
    lines: int = 0
    failing_rank: int = 0
    expected: dict[str, object] = field(default_factory=dict)
    planted: list[Planted] = field(default_factory=list)


class Body:
    """Training-time output, rendered chunk by chunk from templates with monotonic steps and clock."""

    def __init__(self, rng: random.Random, ranks: int, profile: str = "sparse") -> None:
        self.rng = rng
        self.ranks = ranks
        self.templates = step_templates(rng, ranks)
        self.noise = noise_templates(rng, ranks, profile=profile)
        self.noise_per_step = PROFILES[profile][0]
        self.bars = [tqdm_updates(rng, TQDM_TOTAL) for _ in range(3)]
        self.bar = self.bars[0]
        self.step = 0
        self.epoch = 0
        self.it = 0
        self.tq: list[str] = []
        self.tq_flush = 6
        self.tq_prefix = "[default0]:"
        self.t0 = START + 60.0
        self.frac = [f"{i / TQDM_TOTAL:.2f}"[1:] for i in range(TQDM_TOTAL + 1)]

    def now(self) -> float:
        """The clock at the current step."""
        return self.t0 + self.step * STEP_SECONDS

    def lr(self) -> tuple[str, str]:
        """The learning rate now (cosine decay), as '3.0e-4' and as Python's repr '0.0003'."""
        lr = 3e-4 * (0.1 + 0.9 * (1 + math.cos(min(self.step / 4e6, 1.0) * math.pi)) / 2)
        mant, _, exp = f"{lr:.1e}".partition("e")
        return f"{mant}e{int(exp)}", repr(float(f"{lr:.5g}"))

    def loss(self) -> float:
        """The mean loss now."""
        return 0.9 + 2.4 * math.exp(-self.step / 250_000)

    def chunk(self, nbytes: int) -> str:
        """About `nbytes` of log (UTF-8 bytes), whole lines."""
        rng = self.rng
        lr_s, lr_repr = self.lr()
        base = self.loss()
        losses = [f"{max(0.01, base + rng.gauss(0, 0.06)):.4f}" for _ in range(509)]
        gnorms = [f"{rng.uniform(0.2, 1.6):.3f}" for _ in range(61)]
        toks = [f"{rng.uniform(300_000, 330_000):.0f}" for _ in range(37)]
        templates, noise, ranks = self.templates, self.noise, self.ranks
        n_steps = max(1, nbytes // 360)
        picks = rng.choices(templates, k=n_steps)
        noise_counts = rng.choices(self.noise_per_step, k=n_steps)
        noise_lines = iter(rng.choices(noise, k=sum(noise_counts)))
        offsets = rng.choices(range(509 - ranks), k=n_steps)
        out: list[str] = []
        add = out.append
        step, it, epoch, bar, tqbuf = self.step, self.it, self.epoch, self.bar, self.tq
        ep, frac = str(epoch), self.frac
        t0_us = round(self.t0 * 1e6)
        last_sec = -1
        gbase = ibase = ""
        for tmpl, n_noise, off in zip(picks, noise_counts, offsets, strict=True):
            step += 1
            it += 1
            sec, us = divmod(t0_us + step * STEP_US, 1_000_000)
            if sec != last_sec:
                last_sec = sec
                gbase, ibase = glog_time(sec)[:-6], iso_time(sec)[:-4]
            g = gbase + _US[us]
            iso = ibase + _MS[us]
            tqbuf.append(bar[it])
            if tmpl.has_rank0:
                tq = "".join(tqbuf)
                tqbuf.clear()
            else:
                tq = ""
                if len(tqbuf) >= self.tq_flush:
                    add(self.tq_prefix + "".join(tqbuf) + "\n")
                    tqbuf.clear()
                    self.tq_flush = rng.randint(1, 12)
                    self.tq_prefix = _prefix(rng, 0)
            add(
                tmpl.text.format(
                    step,
                    lr_s,
                    tq,
                    ep + frac[it],
                    iso,
                    lr_repr,
                    gnorms[step % 61],
                    toks[step % 37],
                    g,
                    *losses[off : off + ranks],
                )
            )
            for _ in range(n_noise):
                add(next(noise_lines).format(g, iso, step))
            if it == TQDM_TOTAL:
                if tqbuf:
                    add(self.tq_prefix + "".join(tqbuf) + "\n")
                    tqbuf.clear()
                epoch += 1
                ep = str(epoch)
                it = 0
                bar = self.bars[epoch % 3]
        self.step, self.it, self.epoch, self.bar = step, it, epoch, bar
        return "".join(out)


def _traceback_lines(rank: int) -> list[str]:
    """The failing rank's chained traceback, as torch's excepthook prints it (blank lines unprefixed)."""
    dl = f"{TORCH}/utils/data/dataloader.py"
    mp = "/usr/lib/python3.11/multiprocessing"
    text = f"""Traceback (most recent call last):
  File "{dl}", line 1251, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{mp}/queues.py", line 113, in get
    if not self._poll(timeout):
           ^^^^^^^^^^^^^^^^^^^^
  File "{mp}/connection.py", line 257, in poll
    return self._poll(timeout)
           ^^^^^^^^^^^^^^^^^^^
  File "{mp}/connection.py", line 440, in _poll
    r = wait([self], timeout)
        ^^^^^^^^^^^^^^^^^^^^^
  File "{mp}/connection.py", line 948, in wait
    ready = selector.select(timeout)
            ^^^^^^^^^^^^^^^^^^^^^^^^
  File "/usr/lib/python3.11/selectors.py", line 415, in select
    fd_event_list = self._selector.poll(timeout)
                    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{TORCH}/utils/data/_utils/signal_handling.py", line 73, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid {WORKER_PID}) is killed by signal: Bus error. It is possible that \
dataloader's workers are out of shared memory. Please try to raise your shared memory limit.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/workspace/train.py", line 212, in <module>
    main()
  File "/workspace/train.py", line 181, in main
    for step, batch in enumerate(loader):
  File "{dl}", line 701, in __next__
    data = self._next_data()
           ^^^^^^^^^^^^^^^^^
  File "{dl}", line 1448, in _next_data
    idx, data = self._get_data()
                ^^^^^^^^^^^^^^^^
  File "{dl}", line 1412, in _get_data
    success, data = self._try_get_data()
                    ^^^^^^^^^^^^^^^^^^^^
  File "{dl}", line 1264, in _try_get_data
    raise RuntimeError(f"DataLoader worker (pid(s) {{pids_str}}) exited unexpectedly") from e
RuntimeError: DataLoader worker (pid(s) {WORKER_PID}) exited unexpectedly"""
    return [f"[rank{rank}]: {s}" if s else "" for s in text.split("\n")]


def tail(body: Body, ranks: int) -> tuple[list[str], list[tuple[int, int | None, str]]]:
    """The failure: lines (each ending in one newline) and (index, rank, kind) of the planted ones."""
    fail = min(5, ranks - 1)
    others = [r for r in range(ranks) if r != fail]
    first = others[min(2, len(others) - 1)]  # the rank whose watchdog aborts first
    t_fail = body.now() + 0.2
    step = body.step + 1
    lr, loss = body.lr()[0], body.loss()
    lines: list[str] = []
    marks: list[tuple[int, int | None, str]] = []

    def add(text: str, rank: int | None = None, kind: str | None = None) -> None:
        if kind:
            marks.append((len(lines), rank, kind))
        lines.append(text + "\n")

    # The last normal step: everyone but the failing rank logs it, then blocks in the allreduce.
    for r in others[:3]:
        add(f"[rank{r}]:step {step} loss {loss + 0.011 * r:.4f} lr {lr}")
    add(
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        fail,
        "worker-bus-error",
    )
    # The handler writes sizeof(msg), so a NUL follows the newline and joins the next line.
    add(f"\0[rank{others[3 % len(others)]}]:step {step} loss {loss - 0.0137:.4f} lr {lr}")
    tb = _traceback_lines(fail)
    cut = 7
    for s in tb[:cut]:
        add(s)
    add(f"[default{others[-1]}]:step {step} loss {loss + 0.0219:.4f} lr {lr}")  # another rank, mid-traceback
    add(f"\r 42%|████▏     | {step % TQDM_TOTAL}/{TQDM_TOTAL} [02:24<03:19,  2.91it/s]")
    for s in tb[cut:]:
        kind = None
        if "is killed by signal: Bus error" in s:
            kind = "dataloader-bus-error"
        elif "exited unexpectedly" in s and s.startswith(f"[rank{fail}]: RuntimeError"):
            kind = "dataloader-exited-unexpectedly"
        add(s, fail if kind else None, kind)
    for r in others[4:]:
        add(f"[rank{r}]:step {step} loss {loss - 0.007 * r:.4f} lr {lr}")

    # Ten minutes of silence, then every other rank's watchdog fires.
    t_wd = t_fail + 0.4 + 600.064
    seq = 3 * step + 2  # three gradient buckets per step, plus the two start-up collectives
    work = f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, Timeout(ms)=600000)"
    order = [first] + [r for r in others if r != first]
    for i, r in enumerate(order):
        g = glog_time(t_wd + 0.003 * i)
        pre = f"[rank{r}]:[E{g} {_pid(r)} ProcessGroupNCCL.cpp"
        add(
            f"{pre}:616] [Rank {r}] Watchdog caught collective operation timeout: {work} ran for "
            f"{600064 + 3 * i} milliseconds before timing out.",
            r,
            "nccl-watchdog-timeout",
        )
        add(
            f"{pre}:1785] [PG 0 (default_pg) Rank {r}] Exception (either an error or timeout) detected by "
            f"watchdog at work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: "
            f"{seq - 1}."
        )
        add(
            f"{pre}:630] [Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous "
            "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data."
        )
        add(f"{pre}:636] [Rank {r}] To avoid data inconsistency, we are taking the entire process down.")
    g = glog_time(t_wd + 0.05)
    add(
        f"[rank{first}]:[E{g} {_pid(first)} ProcessGroupNCCL.cpp:1595] [PG 0 (default_pg) Rank {first}] "
        f"Process group watchdog thread terminated with exception: [Rank {first}] Watchdog caught "
        f"collective operation timeout: {work} ran for 600064 milliseconds before timing out."
    )
    add(
        f"[rank{first}]:Exception raised from checkTimeout at "
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):"
    )
    for i, (sym, lib) in enumerate(
        [
            ("c10::Error::Error(c10::SourceLocation, std::string) + 0x96", "libc10.so"),
            (
                "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
                "std::ratio<1l, 1000l> > >) + 0x1d2",
                "libtorch_cuda.so",
            ),
            ("c10d::ProcessGroupNCCL::watchdogHandler() + 0x233", "libtorch_cuda.so"),
            ("c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d", "libtorch_cuda.so"),
            ("<unknown function> + 0x145c0", "libtorch.so"),
            ("<unknown function> + 0x94ac3", "/lib/x86_64-linux-gnu/libc.so.6"),
            ("<unknown function> + 0x126850", "/lib/x86_64-linux-gnu/libc.so.6"),
        ]
    ):
        where = lib if lib.startswith("/") else f"{TORCH}/lib/{lib}"
        add(f"[rank{first}]:frame #{i}: {sym} (0x7f3e{0x1000 * (i + 3):08x} in {where})")
    add(f"[rank{first}]:")

    # torchrun sees the first rank die, SIGTERMs the rest and prints its summary.
    t_term = t_wd + 1.3
    g = glog_time(t_term)
    mp_api = f"{AGENT_PID} torch/distributed/elastic/multiprocessing/api.py"
    for r in range(ranks):
        if r == first:
            continue
        add(f"W{g} {mp_api}:897] Sending process {_pid(r)} closing signal SIGTERM", r, "sigterm")
    add(
        f"E{glog_time(t_term + 0.6)} {mp_api}:869] failed (exitcode: -6) local_rank: {first} "
        f"(pid: {_pid(first)}) of binary: /usr/bin/python3",
        first,
        "torchrun-failed",
    )
    add("Traceback (most recent call last):")
    for s in (
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "             ^^^^^^",
        f'  File "{TORCH}/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper',
        "    return f(*args, **kwargs)",
        "           ^^^^^^^^^^^^^^^^^^",
        f'  File "{TORCH}/distributed/run.py", line 919, in main',
        "    run(args)",
        f'  File "{TORCH}/distributed/run.py", line 910, in run',
        "    elastic_launch(",
        f'  File "{TORCH}/distributed/launcher/api.py", line 138, in __call__',
        "    return launch_agent(self._config, self._entrypoint, list(args))",
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f'  File "{TORCH}/distributed/launcher/api.py", line 269, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
    ):
        add(s)
    when = torchrun_time(t_term + 0.6)
    for i, r in enumerate([r for r in range(ranks) if r != first], start=1):
        add(f"[{i}]:")
        for s in (
            f"  time      : {when}",
            f"  host      : {HOST}",
            f"  rank      : {r} (local_rank: {r})",
            f"  exitcode  : -15 (pid: {_pid(r)})",
            "  error_file: <N/A>",
            f"  traceback : Signal 15 (SIGTERM) received by PID {_pid(r)}",
        ):
            add(s)
    add("------------------------------------------------------------")
    add("Root Cause (first observed failure):", first, "torchrun-root-cause")
    add("[0]:")
    for s in (
        f"  time      : {torchrun_time(t_wd)}",
        f"  host      : {HOST}",
        f"  rank      : {first} (local_rank: {first})",
        f"  exitcode  : -6 (pid: {_pid(first)})",
        "  error_file: <N/A>",
        f"  traceback : Signal 6 (SIGABRT) received by PID {_pid(first)}",
        "============================================================",
    ):
        add(s)
    return lines, marks


def _open(path: Path, use_gzip: bool) -> io.BufferedIOBase:
    if use_gzip:
        return gzip.GzipFile(filename="", mode="wb", fileobj=path.open("wb"), compresslevel=1, mtime=0)
    return path.open("wb")


def generator_id() -> str:
    """A short hash of this generator's source: different code, different bytes."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def generate(out: Path, size: int, ranks: int = 8, seed: int = 7, use_gzip: bool = False,
             profile: str = "sparse") -> Truth:
    """Write the log (exactly `size` bytes before compression) to `out`; return its ground truth."""
    if ranks < 2:
        raise ValueError("--ranks must be at least 2")
    rng = random.Random(seed)
    body = Body(rng, ranks, profile)
    head = "".join(header(ranks)).encode()
    # The tail depends on the final step and clock, so its size is estimated with a stand-in first.
    probe_lines, _ = tail(Body(random.Random(seed), ranks, profile), ranks)
    tail_budget = len("".join(probe_lines).encode()) + 256
    body_budget = size - len(head) - tail_budget
    if body_budget < 0:
        raise ValueError(f"--size must be at least {len(head) + tail_budget} bytes for {ranks} ranks")
    truth = Truth(seed=seed, size=size, ranks=ranks, generator=generator_id())
    newlines = 0
    written = 0
    fh = _open(out, use_gzip)
    # gzip.GzipFile does not close the file object it was given; keep a handle to close it.
    raw = getattr(fh, "fileobj", None)
    try:
        fh.write(head)
        written += len(head)
        newlines += head.count(b"\n")
        while written < len(head) + body_budget:
            left = len(head) + body_budget - written
            # near the end, ask for half of what is left, so the steps thrown away by the cut are few
            data = body.chunk(min(CHUNK_BYTES, max(16384, left // 2))).encode()
            if len(data) > left:
                data = data[: data.rfind(b"\n", 0, left) + 1]
                if not data:
                    break
            fh.write(data)
            written += len(data)
            newlines += data.count(b"\n")
        lines, marks = tail(body, ranks)
        tail_bytes = "".join(lines).encode()
        gap = size - written - len(tail_bytes)
        if gap > 0:  # tqdm clears its line with spaces; pad with one such line to hit the size exactly
            pad = b"\r" + b" " * (gap - 2) + b"\n" if gap >= 2 else b"\n"
            fh.write(pad)
            written += len(pad)
            newlines += 1
        first_tail_line = newlines + 1
        fh.write(tail_bytes)
        written += len(tail_bytes)
        newlines += tail_bytes.count(b"\n")
    finally:
        fh.close()
        if raw is not None:
            raw.close()
    fail = min(5, ranks - 1)
    truth.lines = newlines
    truth.failing_rank = fail
    truth.planted = [Planted(first_tail_line + i, rank, kind, lines[i].rstrip("\n")) for i, rank, kind in marks]
    watchdog = [p.rank for p in truth.planted if p.kind == "nccl-watchdog-timeout" and p.rank is not None]
    aborted = watchdog[0]  # its watchdog fires first; torchrun's summary blames it
    truth.expected = {
        "verdict": "failure",
        "primary": PRIMARY_ID,
        "rank": fail,
        "host": HOST,
        "collateral_nccl_timeout_ranks": sorted(watchdog),
        "teardown_sigterm_pids": [_pid(r) for r in range(ranks) if r != aborted],
        "trap": f"torchrun's 'Root Cause (first observed failure)' names rank {aborted} (SIGABRT after its "
        f"watchdog timeout); the initiating failure is rank {fail}'s DataLoader worker bus error, "
        "about 600 s earlier",
    }
    return truth


def write_truth(truth: Truth, path: Path) -> None:
    """Save the ground truth as JSON."""
    path.write_text(json.dumps(asdict(truth), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--size", type=parse_size, default=parse_size("1GiB"), help="e.g. 1GiB, 50MiB")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gzip", action="store_true", help="gzip the output (the size is before compression)")
    ap.add_argument("--truth", type=Path, help="also write the ground truth (planted lines) as JSON here")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="sparse",
                    help="how chatty the run is: sparse (default) or dense (NCCL INFO and warnings every step)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    try:
        truth = generate(args.out, args.size, args.ranks, args.seed, args.gzip, args.profile)
    except ValueError as exc:
        print(f"gen_log: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    if args.truth:
        write_truth(truth, args.truth)
    print(
        f"wrote {args.out}: {format_size(args.size)} ({args.size} bytes before compression), "
        f"{truth.lines} lines, {args.ranks} ranks, seed {args.seed}, in {elapsed:.1f}s",
        file=sys.stderr,
    )
    for p in truth.planted:
        if p.kind in ("dataloader-bus-error", "worker-bus-error"):
            print(f"  planted line {p.line} (rank {p.rank}): {p.text!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
