"""Lab cases run through the frameworks most people train with: HF Trainer, Accelerate, Lightning and
DeepSpeed, each on the CPU with a tiny model built from code (nothing downloaded).

They wrap the same failures as the bare-PyTorch cases in their own messages, launchers, log prefixes
and summaries, so the captures test the reader's rank attribution on what those frameworks really
print. The multi-rank cases run 3 ranks with rank 1 failing: neither the first nor the last rank, so
neither "the first rank" nor "the last spawned" is right by accident.
"""

from __future__ import annotations

from trainmedic.torch.lab.case import DWF, HANG, Case, Launcher, Verdict, others

_KILLED = r"DataLoader worker \(pid \d+\) is killed by signal: Killed\."
_CAUGHT_KEYERROR = r"KeyError: Caught KeyError in DataLoader worker process 0\."
_GLOO_TIMEOUT = r"Timed out waiting 15000ms for (?:send|recv) operation to complete"
_UNCAUGHT = "unclassified-failure/uncaught-exception"
_SHAPE_ERROR = "tensor-shape-mismatch/incompatible-shapes"  # a linear layer fed the wrong width
_SHAPES = r"RuntimeError: mat1 and mat2 shapes cannot be multiplied \(4x16 and 8x1\)"
WORLD, FAILING = 3, 1

_HF = ("transformers",)
_ACCELERATE = ("accelerate",)
_LIGHTNING = ("lightning",)
_DEEPSPEED = ("deepspeed",)
_DS_ENV = (("DS_ACCELERATOR", "cpu"),)
# DeepSpeed's CPU accelerator compiles its shared-memory all-reduce op (g++, through torch's extension
# loader) the first time a process group starts in a new environment: a minute or more on two cores,
# several on a loaded machine. The warm-up builds it before the run, so the limit is the run's own.
_DS_LIMIT = 180.0
_DS_WARMUP = "from deepspeed.comm.torch import build_shm_op; build_shm_op()"


def _ranked(name: str, description: str, program: str, failure: str, *, launcher: Launcher = "python",
            expected_id: str | None, expect_text: tuple[str, ...], requires: tuple[str, ...],
            expected_verdict: Verdict = "failure", forbid_text: tuple[str, ...] = (),
            env: tuple[tuple[str, str], ...] = (), time_limit: float = 60.0, warmup: str = "",
            notes: str = "") -> Case:
    """A 3-rank case where rank 1 fails (or none does, for a healthy control)."""
    healthy = expected_verdict == "healthy"
    return Case(
        name=name,
        description=description,
        program=program,
        args=("--failure", failure, "--fail-rank", str(FAILING)),
        expected_verdict=expected_verdict,
        expected_id=expected_id,
        expected_rank=None if healthy else FAILING,
        expected_collateral_ranks=frozenset() if healthy else others(WORLD, FAILING),
        expect_text=expect_text,
        forbid_text=forbid_text,
        launcher=launcher,
        nproc=WORLD,
        requires=requires,
        env=env,
        time_limit=time_limit,
        warmup=warmup,
        notes=notes,
    )


HF_CASES: tuple[Case, ...] = (
    Case(
        name="hf-worker-killed",
        description="HF Trainer (dataloader_num_workers=2): a DataLoader worker is SIGKILLed mid-epoch",
        program="hf_trainer.py",
        args=("--failure", "worker-kill"),
        expected_id=f"{DWF}/worker-killed",
        expect_text=(_KILLED,),
        requires=_HF,
    ),
    Case(
        name="hf-getitem-exception",
        description="HF Trainer: the dataset raises KeyError in __getitem__ inside a worker",
        program="hf_trainer.py",
        args=("--failure", "getitem"),
        expected_id=f"{DWF}/getitem-exception",
        expect_text=(_CAUGHT_KEYERROR, r"^KeyError: 'input_ids'$"),
        requires=_HF,
    ),
    Case(
        name="hf-nan-loss",
        description="HF Trainer: learning rate 1e6 and no clipping; the run goes on with a NaN gradient norm",
        program="hf_trainer.py",
        args=("--failure", "nan"),
        expected_id="nan-loss/nonfinite-loss",
        expect_text=(r"'grad_norm': 'nan'", r"'train_runtime'"),
        requires=_HF,
        notes="the run exits 0: HF Trainer filters non-finite losses out of the logged loss "
        "(logging_nan_inf_filter), so the logged loss reads 0 and only grad_norm shows the NaN; newer "
        "transformers print each float of the dict as a string ('nan').",
    ),
    Case(
        name="hf-checkpoint-disk-full",
        description="HF Trainer saves a checkpoint every 2 steps to a 300 KiB filesystem: the first fits, the "
        "second does not",
        program="hf_trainer.py",
        args=("--failure", "save-full"),
        expected_id="disk-full/no-space-left",
        expect_text=(r"Saving model checkpoint to \S+/checkpoint-4$", r"No space left on device \(os error 28\)"),
        small_fs="300k",
        requires=_HF,
        notes="the failure strikes while checkpoint-4 is written: the resume point is checkpoint-2.",
    ),
    Case(
        name="hf-nan-after-checkpoint",
        description="HF Trainer saves every step; a learning rate of 1e6 turns the weights NaN after the first",
        program="hf_trainer.py",
        args=("--failure", "nan-after-save"),
        expected_id="nan-loss/nonfinite-loss",
        expect_text=(r"Saving model checkpoint to \S+/checkpoint-1$", r"'grad_norm': 'nan'",
                     r"Saving model checkpoint to \S+/checkpoint-8$"),
        requires=_HF,
        notes="every later checkpoint holds NaN weights: the resume point is the last save before the first "
        "NaN, not the last save.",
    ),
    Case(
        name="hf-resume-shape-mismatch",
        description="HF Trainer resumes from a checkpoint that a model of another width wrote",
        program="hf_trainer.py",
        args=("--failure", "resume-mismatch"),
        expected_id="checkpoint-load-mismatch/state-dict-mismatch",
        expect_text=(r"size mismatch for transformer\.\S+: copying a param with shape torch\.Size",),
        requires=_HF,
    ),
    Case(
        name="hf-model-not-found",
        description="HF: from_pretrained of a Hub id this machine never cached, with no network (HF_HUB_OFFLINE)",
        program="hf_trainer.py",
        args=("--failure", "model-not-found"),
        expected_id="hf-trainer-failure/model-not-found",
        expect_text=(r"We couldn't connect to 'https://huggingface\.co' to load",),
        requires=_HF,
        env=(("HF_HUB_OFFLINE", "1"),),
    ),
    Case(
        name="hf-healthy",
        description="HF Trainer: 8 steps with two DataLoader workers, no failure",
        program="hf_trainer.py",
        args=("--failure", "none"),
        expected_verdict="healthy",
        expect_text=(r"'train_runtime'",),
        forbid_text=(r"Traceback",),
        requires=_HF,
    ),
    _ranked(
        "hf-ddp-getitem-exception",
        "HF Trainer under torchrun, 3 ranks (gloo): rank 1's dataset raises in a worker",
        "hf_trainer.py",
        "getitem",
        launcher="torchrun",
        expected_id=f"{DWF}/getitem-exception",
        expect_text=(rf"\[rank1\]: {_CAUGHT_KEYERROR}", r"Root Cause \(first observed failure\):"),
        requires=_HF,
    ),
)

ACCELERATE_CASES: tuple[Case, ...] = (
    _ranked(
        "accelerate-rank-raises",
        "accelerate launch, 3 CPU ranks (gloo): rank 1's batch has the wrong width at step 3",
        "accelerate_ddp.py",
        "raise",
        launcher="accelerate",
        expected_id=_SHAPE_ERROR,
        expect_text=(rf"\[rank1\]: {_SHAPES}",),
        requires=_ACCELERATE,
        notes="a shape error in the model's own code, on rank 1; the others are collateral.",
    ),
    _ranked(
        "accelerate-worker-killed",
        "accelerate launch, 3 CPU ranks: rank 1's DataLoader worker is SIGKILLed",
        "accelerate_ddp.py",
        "worker-kill",
        launcher="accelerate",
        expected_id=f"{DWF}/worker-killed",
        expect_text=(rf"\[rank1\]: RuntimeError: {_KILLED}",),
        requires=_ACCELERATE,
    ),
    _ranked(
        "accelerate-rank-hang",
        "accelerate launch, 3 CPU ranks (15 s timeout): rank 1 stops at step 3; the others time out",
        "accelerate_ddp.py",
        "hang",
        launcher="accelerate",
        expected_id=HANG,
        expected_verdict="hang",
        expect_text=(_GLOO_TIMEOUT,),
        requires=_ACCELERATE,
        time_limit=75.0,
        notes="torchrun's Root Cause names a rank that timed out; rank 1 printed nothing after step 2.",
    ),
    _ranked(
        "accelerate-healthy",
        "accelerate launch, 3 CPU ranks: 8 steps, no failure",
        "accelerate_ddp.py",
        "none",
        launcher="accelerate",
        expected_id=None,
        expected_verdict="healthy",
        expect_text=(r"^step 7 loss",),
        forbid_text=(r"Traceback",),
        requires=_ACCELERATE,
    ),
)

LIGHTNING_CASES: tuple[Case, ...] = (
    _ranked(
        "lightning-rank-raises",
        "Lightning strategy='ddp', 3 CPU processes: rank 1's training_step gets a batch of the wrong width",
        "lightning_ddp.py",
        "raise",
        expected_id=_SHAPE_ERROR,
        expect_text=(rf"\[rank1\]: {_SHAPES}",),
        requires=_LIGHTNING,
    ),
    _ranked(
        "lightning-worker-killed",
        "Lightning ddp, 3 CPU processes: rank 1's DataLoader worker is SIGKILLed",
        "lightning_ddp.py",
        "worker-kill",
        expected_id=f"{DWF}/worker-killed",
        expect_text=(rf"\[rank1\]: RuntimeError: {_KILLED}",),
        requires=_LIGHTNING,
    ),
    _ranked(
        "lightning-rank-hang",
        "Lightning ddp, 3 CPU processes (15 s timeout): rank 1 stops at batch 3; the others time out",
        "lightning_ddp.py",
        "hang",
        expected_id=HANG,
        expected_verdict="hang",
        expect_text=(_GLOO_TIMEOUT,),
        requires=_LIGHTNING,
        time_limit=75.0,
    ),
    _ranked(
        "lightning-callback-raises",
        "Lightning ddp, 3 CPU processes: a user callback raises on rank 1 at the end of batch 3",
        "lightning_ddp.py",
        "callback",
        expected_id=_UNCAUGHT,
        expect_text=(r"\[rank1\]: ConnectionRefusedError: metrics store at 127\.0\.0\.1:9 refused batch 3",),
        requires=_LIGHTNING,
    ),
    _ranked(
        "lightning-healthy",
        "Lightning ddp, 3 CPU processes: 8 steps, no failure",
        "lightning_ddp.py",
        "none",
        expected_id=None,
        expected_verdict="healthy",
        expect_text=(r"`Trainer\.fit` stopped: `max_steps=8` reached\.",),
        forbid_text=(r"Traceback",),
        requires=_LIGHTNING,
    ),
)

DEEPSPEED_CASES: tuple[Case, ...] = (
    _ranked(
        "deepspeed-worker-killed",
        "deepspeed launcher, 3 CPU ranks (DS_ACCELERATOR=cpu, ZeRO stage 2): rank 1's DataLoader worker is "
        "SIGKILLed",
        "deepspeed_train.py",
        "worker-kill",
        launcher="deepspeed",
        expected_id=f"{DWF}/worker-killed",
        expect_text=(rf"\[rank1\]: RuntimeError: {_KILLED}", r"exits with return code = 1"),
        requires=_DEEPSPEED,
        env=_DS_ENV,
        time_limit=_DS_LIMIT,
        warmup=_DS_WARMUP,
        notes="DeepSpeed's launcher prints the command of the last rank it spawned (--local_rank=2) as the "
        "one that exited: not the failing rank.",
    ),
    Case(
        name="deepspeed-batch-config",
        description="deepspeed launcher, 3 CPU ranks: train_batch_size is not micro batch x world size",
        program="deepspeed_train.py",
        args=("--failure", "batch-config"),
        expected_id="deepspeed-failure/batch-config-mismatch",
        expect_text=(r"Check batch related parameters\. train_batch_size is not equal to",),
        launcher="deepspeed",
        nproc=WORLD,
        every_rank=True,
        requires=_DEEPSPEED,
        env=_DS_ENV,
        time_limit=_DS_LIMIT,
        warmup=_DS_WARMUP,
    ),
    _ranked(
        "deepspeed-healthy",
        "deepspeed launcher, 3 CPU ranks, ZeRO stage 2: 8 steps, no failure",
        "deepspeed_train.py",
        "none",
        launcher="deepspeed",
        expected_id=None,
        expected_verdict="healthy",
        expect_text=(r"^step 7 loss", r"exits successfully"),
        forbid_text=(r"Traceback",),
        requires=_DEEPSPEED,
        env=_DS_ENV,
        time_limit=_DS_LIMIT,
        warmup=_DS_WARMUP,
    ),
)

FRAMEWORK_CASES: tuple[Case, ...] = (*HF_CASES, *ACCELERATE_CASES, *LIGHTNING_CASES, *DEEPSPEED_CASES)
