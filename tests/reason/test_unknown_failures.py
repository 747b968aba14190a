"""Failures no fingerprint knows: the tail's error-worded lines, and what is left when an entry is removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.catalog import load_library
from trainmedic.evaluate import unknown

STEPS = b"".join(b"step %d loss 2.%d\n" % (i, i) for i in range(1, 6))
# Lines in the formats their printers use: c10's logger, Python logging, NCCL's WARN, the shell.
C10 = b"[rank3]:[E1130 10:00:00.123456789 ProcessGroupNCCL.cpp:2068] [PG ID 0 Rank 3] Frobnicator gave up\n"
LOGGING = b"2026-11-30 10:00:01,123 - trainer - ERROR - could not reach the parameter server, giving up\n"
NCCL = b"node1:27106:27302 [0] include/frob.h:27 NCCL WARN Call to frob_open failed : Invalid argument\n"


def _notable(log: bytes) -> list[tuple[int, int, str]]:
    [scan] = Diagnoser().scan(Named("run.log", log))
    return [(n.severity, n.line.number, n.line.text) for n in scan.notable]


def test_error_and_fatal_words_are_notable_and_warnings_and_metric_names_are_not() -> None:
    log = (STEPS + b"{'eval_loss': 0.4, 'val_error': 0.2, 'error_rate': 0.1}\n"
           + b"[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29400 (errno: 98)\n"
           + b"train.py:10: UserWarning: Detected a thing. Failure to do this will skip a step.\n"
           + b"  warnings.warn(\n"
           + b"Failure to do this will result in PyTorch skipping the first value.\n"  # the warning goes on
           + C10 + NCCL + b"Killed\n")
    found = _notable(log)
    assert [(sev, text) for sev, _, text in found] == [(2, C10.decode().strip()), (2, NCCL.decode().strip()),
                                                       (3, "Killed")]
    assert found[0][1] == 11


def test_a_run_that_stops_on_error_lines_no_signature_knows_is_a_failure() -> None:
    d = Diagnoser().diagnose(Named("run.log", STEPS + C10 + C10.replace(b"rank3", b"rank1") + LOGGING))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/error-lines"
    assert d.primary.rank == 3
    # one line per distinct message: rank 1's copy of rank 3's line is not quoted again
    assert [e.line for e in d.primary.evidence] == [6, 8]
    assert d.primary.missing


def test_error_lines_followed_by_progress_or_a_finished_run_are_not_the_failure() -> None:
    went_on = Diagnoser().diagnose(Named("run.log", STEPS + LOGGING + STEPS))
    assert went_on.verdict == "healthy"
    finished = Diagnoser().diagnose(Named("run.log", STEPS + LOGGING + b"Training completed. Do not forget to share\n"))
    assert finished.verdict == "healthy"


def test_a_known_failure_still_names_its_cause_and_not_the_words_of_its_lines() -> None:
    d = Diagnoser().diagnose(Named("run.log", STEPS + b"RuntimeError: CUDA error: an illegal memory access was "
                                   b"encountered\n" + LOGGING))
    assert d.primary is not None and d.primary.id == "cuda-illegal-memory-access/illegal-address"


def test_removing_an_entry_drops_every_relation_into_it() -> None:
    lib = load_library()
    less = unknown.without(lib, "dataloader-worker-failure")
    assert "dataloader-worker-failure" not in {e.id for e in less}
    gone = {c.full_id for c in lib.entry("dataloader-worker-failure").causes}
    for c in less.causes():
        assert not gone & set(c.competes)
        assert c.in_worker not in gone and c.otherwise not in gone and c.confirmed_as not in gone
    # what the removed entry explained is still a failure, read by what is left
    log = (Path(__file__).parents[1] / "fixtures" / "lab" / "worker-segfault" / "output.log").read_bytes()
    d = Diagnoser(less).diagnose(Named("output.log", log))
    assert d.verdict == "failure" and d.primary is not None
    assert not d.primary.id.startswith("dataloader-worker-failure/")


def test_leave_one_entry_out_scores_the_lab_captures() -> None:
    diagnoser = Diagnoser()
    found = unknown.probes([], Path(__file__).parents[1] / "fixtures" / "lab", diagnoser)
    assert {p.source for p in found} == {"lab"} and len(found) >= 10
    results = unknown.run(found, diagnoser.library)
    figures = unknown.figures(results)
    assert figures.cases == len(found)
    assert 0.0 <= figures.line_top3 <= 1.0 and figures.still_failure > 0.5
    assert all(r.row().count("\t") == 7 for r in results)


def test_an_unknown_exception_quotes_the_error_lines_it_printed_first() -> None:
    """A kernel's assertion (in a format no entry knows) before a traceback: it is quoted before the exception."""
    log = (STEPS + b"frob.cu:88: frobKernel: block: [1,0,0] Assertion `x < n` failed.\n"
           + b"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n    step()\n"
           + b"RuntimeError: frobnication went wrong\n")
    d = Diagnoser().diagnose(Named("run.log", log))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert [e.line for e in d.primary.evidence][:2] == [6, 10]


def test_a_rank_the_launcher_saw_exit_is_quoted_by_the_launchers_own_line() -> None:
    log = (b"W0811 10:33:49.342481 1405 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 29 "
           b"closing signal SIGTERM\n"
           b"E0811 10:34:02.121527 1405 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -9) "
           b"local_rank: 1 (pid: 2927916) of binary: /usr/bin/python\n")
    d = Diagnoser(unknown.without(load_library(), "host-oom")).diagnose(Named("run.log", log))
    assert d.primary is not None and d.primary.id == "unclassified-failure/process-exited" and d.primary.rank == 1
    assert d.primary.evidence[0].line == 2


def test_an_unknown_exception_takes_the_rank_its_message_names() -> None:
    """monitored_barrier's words (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp) name the faulty rank."""
    log = (b"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    barrier()\n"
           b"RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while waiting for "
           b"send/recv from rank 0. Please check rank 0 logs for faulty rank.\n")
    less = unknown.without(load_library(), "peer-connection-lost")
    d = Diagnoser(less).diagnose(Named("run.log", log))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.rank == 0


def test_an_exception_whose_name_says_nothing_still_ended_the_run() -> None:
    """Python prints any exception class: not every one ends in Error or Exception."""
    log = (STEPS + b"Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\n    main()\n"
           b"frobnicate.StoreLeaseExpired: shard 3\n")
    d = Diagnoser().diagnose(Named("run.log", log))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.evidence[0].line == 9


def test_a_progress_bar_still_at_zero_after_an_error_is_no_progress() -> None:
    """tqdm draws its bar once more while the process exits: "0/6931" after the error is not training."""
    log = (b"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    step()\n"
           b"ValueError: frobnication went wrong\n"
           b"  0%|          | 0/6931 [00:01<?, ?it/s]\n")
    d = Diagnoser().diagnose(Named("run.log", log))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    # nor the step it stopped at, drawn once more as it exits
    stopped = log.replace(b"0/6931 [00:01<?, ?it/s]", b"12/6931 [00:09<1:02:13, 1.8it/s]")
    assert Diagnoser().diagnose(Named("run.log", stopped)).verdict == "failure"
    # a bar that moves on below it is training going on (a logger printed a traceback it caught)
    went_on = stopped + b" 1%|          | 40/6931 [00:24<1:01:02, 1.9it/s]\n"
    assert Diagnoser().diagnose(Named("run.log", went_on)).verdict == "healthy"


WATCHDOG = (b"[rank{r}]:[E1130 10:30:0{r}.000000000 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            b"operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            b"ran for 600001 milliseconds before timing out.\n")


def test_the_odd_rank_out_printed_an_error_of_its_own_while_the_others_timed_out() -> None:
    steps = b"".join(b"[rank%d]: step 4 loss 1.0\n" % r for r in range(4))
    own = b"[rank2]: 2026-11-30 10:20:00,000 ERROR frobnicator lost its shard lease, giving up\n"
    timeouts = b"".join(WATCHDOG.replace(b"{r}", b"%d" % r) for r in (0, 1, 3))
    d = Diagnoser().diagnose(Named("all.log", steps + own + timeouts))
    assert d.primary is not None and d.primary.id == "unclassified-failure/error-lines"
    assert d.primary.rank == 2 and d.primary.evidence[0].line == 5
    assert {c.rank for c in d.collateral} == {0, 1, 3}
    # every rank saying the same thing: no rank is the odd one out
    same = b"".join(own.replace(b"rank2", b"rank%d" % r) for r in range(4))
    d = Diagnoser().diagnose(Named("all.log", steps + same + timeouts))
    assert d.primary is not None and d.primary.id != "unclassified-failure/error-lines"
    assert "printed no error" not in d.primary.why  # it did print them, as every rank did


# Metric lines as their printers write them: pytorch/examples' AverageMeter, HF Trainer's log dict.
METER = "Epoch: [1][{i:4d}/1500]\tTime  0.512 ( 0.520)\tData  0.012 ( 0.015)\tLoss {loss} ({loss})\n"
HF = "{{'loss': {loss}, 'grad_norm': {norm}, 'learning_rate': 4.9e-05, 'epoch': 0.{i}}}\n"


def _meters(losses: list[str]) -> bytes:
    return "".join(METER.format(i=100 * i, loss=x) for i, x in enumerate(losses)).encode()


def test_a_loss_that_turns_nan_and_stays_so_is_a_failure_with_or_without_its_entry() -> None:
    log = _meters(["6.93", "5.10", "4.87", "nan", "nan", "nan"])
    d = Diagnoser().diagnose(Named("run.log", log))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    assert d.primary.evidence[0].line == 4
    # no entry knows NaN: the reasoner's own metric reading still calls it, at the same line
    d = Diagnoser(unknown.without(load_library(), "nan-loss")).diagnose(Named("run.log", log))
    assert d.primary is not None and d.primary.id == "unclassified-failure/metric-anomaly"
    assert d.primary.evidence[0].line == 4


def test_a_nan_the_metrics_recover_from_is_not_a_failure() -> None:
    """One bad batch (an fp16 overflow the scaler skipped) and the loss goes on: not this failure."""
    log = _meters(["6.93", "5.10", "nan", "4.87", "4.51"])
    less = unknown.without(load_library(), "nan-loss")
    assert Diagnoser(less).diagnose(Named("run.log", log)).verdict == "healthy"
    hf = "".join(HF.format(loss=x, norm=n, i=i) for i, (x, n) in enumerate(
        [("2.31", "7.3"), ("2.2", "inf"), ("2.1", "6.8")])).encode()
    assert Diagnoser(less).diagnose(Named("run.log", hf)).verdict == "healthy"


# detectron2's CommonMetricPrinter ("total_loss" first, then each term, "{:.4g}"), a script printing the
# loss tensor itself, and one printing "Loss = ...": the same reading, whatever the printer.
D2 = "[11/30 10:02:{i:02d} d2.utils.events]:  eta: 1:02:11  iter: {i}  total_loss: {loss}  loss_cls: {loss}  lr: 0.0004\n"
TENSOR = "iter {i}: loss: tensor({loss}, device='cuda:0', grad_fn=<AddBackward0>)\n"
EQUALS = "step {i} Loss = {loss}\n"


@pytest.mark.parametrize("line", [D2, TENSOR, EQUALS])
def test_nan_in_the_metric_lines_of_other_printers_is_read_too(line: str) -> None:
    less = unknown.without(load_library(), "nan-loss")
    losses = ["2.113", "1.95", "1.71", "nan", "nan", "nan"]
    d = Diagnoser(less).diagnose(Named("run.log", "".join(line.format(i=i, loss=x) for i, x in enumerate(losses)).encode()))
    assert d.primary is not None and d.primary.id == "unclassified-failure/metric-anomaly"
    assert d.primary.evidence[0].line == 4


def test_a_nan_in_one_term_or_in_the_evaluation_alone_is_not_the_training_loss() -> None:
    """"loss_cls: nan" next to a finite total, or "val_loss: nan": neither is the loss the run trains on."""
    less = unknown.without(load_library(), "nan-loss")
    terms = "".join(f"iter: {i}  total_loss: {2.1 - i / 10:.3f}  loss_mask: nan  val_loss: nan\n" for i in range(6))
    assert Diagnoser(less).diagnose(Named("run.log", terms.encode())).verdict == "healthy"


def test_a_gradient_norm_that_stays_nan_is_a_failure_even_with_a_finite_loss() -> None:
    """HF Trainer filters NaN losses out of its average: `'loss': 0.0` with `'grad_norm': nan` is the sign."""
    hf = "".join(HF.format(loss=x, norm=n, i=i) for i, (x, n) in enumerate(
        [("2.31", "7.3"), ("63.4", "nan"), ("0.0", "nan"), ("0.0", "nan")])).encode()
    d = Diagnoser(unknown.without(load_library(), "nan-loss")).diagnose(Named("run.log", hf))
    assert d.primary is not None and d.primary.id == "unclassified-failure/metric-anomaly"
    assert d.primary.evidence[0].line == 2


def test_a_run_stopped_from_outside_is_a_failure_no_entry_needs_to_know() -> None:
    """torch elastic's words when the agent itself is signalled (torch/distributed/elastic/agent/server/api.py)."""
    log = STEPS + (b"W1130 12:13:49.388000 124326 torch/distributed/elastic/agent/server/api.py:723] Received 15 death "
                   b"signal, shutting down workers\n"
                   b"W1130 12:13:49.389000 124326 torch/distributed/elastic/multiprocessing/api.py:900] Sending "
                   b"process 124533 closing signal SIGTERM\n")
    less = unknown.without(unknown.without(load_library(), "launcher-teardown"), "scheduler-termination")
    d = Diagnoser(less).diagnose(Named("run.log", log))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "unclassified-failure/error-lines"
    assert d.primary.evidence[0].line == 6


def test_the_flight_recorder_names_the_rank_whose_timeout_came_first() -> None:
    """ProcessGroupNCCL's getNCCLWatchdogTimeoutErrorMsg (torch 2.3+): "from  rank N" on the others,
    "from this local rank" on that rank itself."""
    msg = ("[rank{r}]:[E723 01:58:45.667329643 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
           "Received a dump signal due to a collective timeout from {src} and we will try our best to dump the debug "
           "info. Last enqueued NCCL work: 92, last completed NCCL work: 91.\n")
    log = "".join(msg.format(r=r, src="this local rank" if r == 2 else " rank 2") for r in (1, 3, 2)).encode()
    d = Diagnoser().diagnose(Named("all.log", STEPS + log))
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout" and d.primary.rank == 2
    assert "first detected on rank 2" in d.primary.why


def test_rank_0_is_named_as_the_likeliest_only_when_it_did_not_report_waiting() -> None:
    steps = b"".join(b"[rank%d]: step 4 loss 1.0\n" % r for r in range(4))
    others = b"".join(WATCHDOG.replace(b"{r}", b"%d" % r) for r in (1, 2))  # ranks 1, 2 report; 0 and 3 silent
    d = Diagnoser().diagnose(Named("all.log", steps + others))
    assert d.primary is not None and d.primary.rank == 0 and "look there first" in d.primary.why
    assert d.primary.confidence > 0.5  # a lead, not a finding: the cause's own calibrated confidence
    # rank 0 timed out waiting like the others: nothing points at it
    waited = b"".join(WATCHDOG.replace(b"{r}", b"%d" % r) for r in (0, 1))
    d = Diagnoser().diagnose(Named("all.log", steps + waited))
    assert d.primary is not None and d.primary.rank != 0


TB = (b"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    dist.barrier()\n"
      b"  File \"/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py\", line 2420, in barrier\n"
      b"    work = default_pg.barrier(opts=opts)\n")


def test_an_unknown_error_that_failed_waiting_points_at_rank_0_unless_rank_0_printed_it() -> None:
    """A timeout or a closed peer is where a process stopped, not why; nothing names the peer here."""
    less = unknown.without(unknown.without(load_library(), "nccl-timeout"), "peer-connection-lost")
    d = Diagnoser(less).diagnose(Named("run.log", STEPS + TB + b"RuntimeError: Socket Timeout\n"))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.rank == 0 and "waiting on another process" in d.primary.why
    # near miss: an error in words of its own (not waiting) stays unranked
    d = Diagnoser(less).diagnose(Named("run.log", STEPS + TB + b"RuntimeError: frobnication went wrong\n"))
    assert d.primary is not None and d.primary.rank is None
    # near miss: one process (no rank, no distributed frame) whose connection was reset names no rank
    alone = b"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    fetch()\n"
    d = Diagnoser(less).diagnose(Named("run.log", STEPS + alone + b"ConnectionResetError: [Errno 104] "
                                       b"Connection reset by peer\n"))
    assert d.primary is not None and d.primary.rank is None


def test_unknown_error_lines_that_name_the_rank_others_waited_for_give_it() -> None:
    """The flight recorder's words, with no entry that knows them: the rank they name is the suspect."""
    msg = (b"[rank5]:[E723 01:58:45.667329643 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 5] "
           b"Received a dump signal due to a collective timeout from  rank 2 and we will try our best to dump the "
           b"debug info.\n")
    d = Diagnoser(unknown.without(load_library(), "nccl-timeout")).diagnose(Named("run.log", STEPS + msg))
    assert d.primary is not None and d.primary.id == "unclassified-failure/error-lines" and d.primary.rank == 2


def test_a_silent_rank_beside_an_unclaimed_exception_is_the_suspect() -> None:
    """Ranks 1-3 print one error no entry knows (their rank inside the message), rank 0 nothing, and a
    traceback no rank claims ends the log: rank 0 is the one they waited for."""
    same = b"".join(b"[E ProcessGroupNCCL.cpp:737] [Rank %d] Frobnicator gave up waiting for its peers\n" % r
                    for r in (3, 2, 1))
    d = Diagnoser().diagnose(Named("run.log", same + TB + b"frobnicate.LeaseLost: shard 3\n"))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.rank == 0


def test_the_shells_epitaph_for_any_fatal_signal_ends_the_run() -> None:
    """bash's strsignal words, alone or in its job report, for signals no entry is about."""
    for last in (b"Floating point exception (core dumped)\n",
                 b"run.sh: line 12: 48121 Terminated              python train.py\n"):
        d = Diagnoser().diagnose(Named("run.log", STEPS + last))
        assert d.verdict == "failure" and d.primary is not None, last
        assert d.primary.evidence[0].line == 6
    calm = Diagnoser().diagnose(Named("run.log", STEPS + b"Terminated workers are restarted by the agent (max 3)\n"))
    assert calm.verdict == "healthy"


def test_error_lines_that_all_waited_point_at_rank_0_unless_rank_0_printed_one() -> None:
    """Without its entry a collective timeout is error lines in words no fingerprint knows; their own words
    say the rank that printed them was waiting."""
    less = unknown.without(load_library(), "nccl-timeout")
    steps = b"".join(b"[rank%d]: step 4 loss 1.0\n" % r for r in range(4))
    waited = WATCHDOG.replace(b"{r}", b"2")
    d = Diagnoser(less).diagnose(Named("all.log", steps + waited))
    assert d.primary is not None and d.primary.id == "unclassified-failure/error-lines"
    assert d.primary.rank == 0 and "waiting on another" in d.primary.why
    # near miss: an error in words of its own stays with the rank that printed it
    own = b"[rank2]: 2026-11-30 10:20:00,000 ERROR frobnicator lost its shard lease, giving up\n"
    d = Diagnoser(less).diagnose(Named("all.log", steps + own))
    assert d.primary is not None and d.primary.rank == 2


def test_a_message_glued_to_a_progress_bar_is_the_same_message() -> None:
    """tqdm draws without a newline: rank 1's timeout after rank 0's bar is still the one ranks 2-3 printed."""
    from trainmedic.reason import notable
    bar = "Class  Images  mAP@.5:  75% 24/32 [01:09<00:22,  2.83s/it]"
    msg = "[E ProcessGroupNCCL.cpp:566] [Rank {}] Frobnicator gave up after 60000 ms"
    assert notable.template(bar + msg.format(1)) == notable.template(msg.format(2))
    assert notable.template("24/32 [01:09<00:22,  2.83s/it]") != notable.template(msg.format(2))  # a bar alone


def test_a_rank_cut_off_inside_a_collective_was_waiting_there() -> None:
    """Its traceback ends in torch.distributed's frames, with no exception line: it waited for the others."""
    cut = (b"[rank3]: Traceback (most recent call last):\n"
           b"[rank3]:   File \"train.py\", line 9, in <module>\n[rank3]:     dist.barrier()\n"
           b"[rank3]:   File \"/usr/lib/python3/site-packages/torch/distributed/c10d_logger.py\", line 79, in wrapper\n"
           b"[rank3]:     return func(*args, **kwargs)\n")
    steps = b"".join(b"[rank%d]: step 4 loss 1.0\n" % r for r in range(4))
    d = Diagnoser(unknown.without(load_library(), "nccl-timeout")).diagnose(Named("all.log", steps + cut))
    assert d.primary is not None and d.primary.id == "unclassified-failure/uncaught-exception"
    assert d.primary.rank == 0
    # near miss: cut off in its own code, it stays the rank that printed it
    own = cut.replace(b"torch/distributed/c10d_logger.py", b"frob/io.py")
    d = Diagnoser(unknown.without(load_library(), "nccl-timeout")).diagnose(Named("all.log", steps + own))
    assert d.primary is not None and d.primary.rank == 3


def test_an_unknown_failure_takes_the_rank_the_launcher_saw_exit() -> None:
    """Open MPI's "mpirun noticed that process rank 7 ... exited on signal 9 (Killed)" with the entry
    that knows the kill removed (leave one entry out, a dev case): still a failure, on rank 7, the rank
    the launcher names. Near-miss: a teardown SIGTERM names no rank."""
    from tests.reason.test_real_rules import _case
    from trainmedic.catalog import load_library
    from trainmedic.evaluate.unknown import without

    log = _case("more14b-dist-horovod-keras-rank7-sigkill").log.encode()
    d = Diagnoser(without(load_library(), "host-oom"), parallel=False).diagnose(log)
    assert d.verdict == "failure" and d.primary is not None and d.primary.rank == 7
    term = b"mpirun noticed that process rank 2 with PID 0 on node node1 exited on signal 15 (Terminated).\n"
    d = Diagnoser().diagnose(b"step 3\nERROR: something unexpected happened\n" + term)
    assert d.verdict == "failure" and d.primary is not None and d.primary.rank is None


CLOSE_OUT = (
    " 88%|████████▊ | 1000/1136 [22:35<02:54,  1.29s/it]epoch 0 iter  1000, loss: 1.071\n"
    "100%|█████████▉| 1135/1136 [25:31<00:01,  1.11s/it]Traceback (most recent call last):\n"
    '  File "train.py", line 134, in main\n'
    "    loss = criterion(outputs, labels)\n"
    "ValueError: something no entry knows\n"
    "100%|█████████▉| {step}/1136 [25:32<00:01,  1.35s/it]\n"
)


def test_a_bar_printed_once_more_below_the_traceback_is_no_progress() -> None:
    """tqdm prints its last state again as the process exits: the same step below the traceback (whose
    header was glued to the bar) is the close-out, not training going on; a higher step would be."""
    d = Diagnoser().diagnose(Named("run.log", CLOSE_OUT.format(step=1135).encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception" and d.primary.evidence[0].line == 5
    # near miss: the step rose after it, so the process went on (a logger printed a caught traceback)
    assert Diagnoser().diagnose(Named("run.log", CLOSE_OUT.format(step=1136).encode())).verdict == "healthy"


# tqdm over an iterable with no length, a postfix before it: "{desc}: {n}it [{elapsed}, {rate}]"
NO_TOTAL = (
    "Traceback (most recent call last):\n"
    '  File "gp.py", line 24, in <module>\n'
    "    model.train()\n"
    "RuntimeError: Invalid index in gather at /tmp/aten/src/TH/generic/THTensorEvenMoreMath.cpp:472\n"
    "loss: 57158.71 noise: 0.56: : {n}it [00:08, ?it/s]\n"
)


def test_a_bar_with_no_total_still_at_zero_below_the_traceback_is_no_progress() -> None:
    """The close-out of a bar that never counted an item ("0it [00:08, ?it/s]") is neither the exception's
    message nor training going on; a bar that counted on after the exception would be."""
    d = Diagnoser().diagnose(Named("run.log", NO_TOTAL.format(n=0).encode()))
    assert d.verdict == "failure" and d.primary is not None
    assert d.primary.id == "unclassified-failure/uncaught-exception" and d.primary.evidence[-1].line == 4
    went_on = NO_TOTAL.format(n=0) + "loss: 412.7 noise: 0.51: : 35it [00:12, 8.75it/s]\n"
    assert Diagnoser().diagnose(Named("run.log", went_on.encode())).verdict == "healthy"
    # a bare bar with no total and no loss word is progress too (the scanner's sign and the reader's parse agree)
    went_on = NO_TOTAL.format(n=0) + "Generating: 35it [00:12, 8.75it/s]\n"
    assert Diagnoser().diagnose(Named("run.log", went_on.encode())).verdict == "healthy"


def test_the_rank_alone_in_another_collective_is_the_suspect_even_unnamed() -> None:
    """Rank 0 timed out in an ALLREDUCE while ranks 1-4 and 7 waited in a BROADCAST: with no entry
    for desynchronised ranks, the timeout still names rank 0, the one that took another path."""
    from tests.reason.test_real_rules import _case

    log = _case("more22a-accelerate-epoch-end-rank0-allreduce-others-broadcast").log
    less = unknown.without(load_library(), "rank-desync")
    d = Diagnoser(less).diagnose(Named("run.log", log.encode()))
    assert d.primary is not None and d.primary.id == "nccl-timeout/watchdog-timeout" and d.primary.rank == 0
    assert "another collective" in d.primary.why
    # near miss: every rank in the same collective leaves no odd one out
    same = log.replace("OpType=ALLREDUCE", "OpType=BROADCAST")
    d = Diagnoser(less).diagnose(Named("run.log", same.encode()))
    assert d.primary is not None and "another collective" not in d.primary.why


def test_an_error_the_run_already_trained_on_after_does_not_stop_it_at_the_end() -> None:
    # (a tracker's failed upload, printed between progress lines and once more as the last line)
    err = LOGGING.replace(b"could not reach the parameter server, giving up", b"upload failed, will retry")
    d = Diagnoser().diagnose(Named("run.log", STEPS + err + STEPS.replace(b"step ", b"step 1") + err))
    assert d.verdict == "healthy", d.primary
    # Near miss: a new error at the end, or a crash line (each ends its process; a log may hold two runs).
    assert Diagnoser().diagnose(Named("run.log", STEPS + err + STEPS.replace(b"step ", b"step 1") + C10)
                                ).verdict == "failure"
    crash = b"Frobnicator trap (core dumped)\n"
    assert Diagnoser().diagnose(Named("run.log", STEPS + crash + STEPS + crash)).verdict == "failure"


def test_an_exception_or_argparse_error_right_below_a_warning_is_its_own_record() -> None:
    # (the two lines after a warning may be its message going on; an exception's or argparse's are not)
    warn = (b"[W reducer.cpp:1300] Warning: find_unused_parameters=True was specified in DDP constructor, but did "
            b"not find any unused parameters in the forward pass. (function operator())\n")
    for err in (b"train.py: error: argument -d/--dataset: invalid choice: 'x' (choose from 'a', 'b')\n",
                b"FrobnicatorError: could not reach the parameter server\n"):
        d = Diagnoser().diagnose(Named("run.log", STEPS + warn + err))
        assert d.verdict == "failure", err
    # Near miss: the words a warning's message goes on with stay part of it.
    goes_on = b"Failure to do this will result in PyTorch skipping the first value of the schedule.\n"
    assert Diagnoser().diagnose(Named("run.log", STEPS + warn + goes_on)).verdict == "healthy"


@pytest.mark.parametrize("crash", [
    # Abseil's handler (Ray's workers, TensorFlow, JAX), then its frames
    b"(RayTrainWorker pid=7315) *** SIGABRT received at time=1734086759 ***\n"
    b"(RayTrainWorker pid=7315) PC: @        0x19ea96600  (unknown)  __pthread_kill\n",
    # glog's handler
    b'*** Aborted at 1734086759 (unix time) try "date -d @1734086759" if you are using GNU date ***\n'
    b"*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f3b2c7fe700) from PID 0; stack trace: ***\n",
    # PALS mpiexec on a rank's death
    b"rank 0 died from signal 11 and dumped core\n",
    # the shell's epitaph right after a progress line the terminal left unfinished
    b"165376/296960 [===============>..............] - ETA: 365s - loss: 2.1371Killed\n",
])
def test_a_crash_handlers_report_is_a_failure_without_the_native_crash_entries(crash: bytes) -> None:
    less = unknown.without(unknown.without(load_library(), "native-crash"), "host-oom")
    d = Diagnoser(less).diagnose(Named("run.log", STEPS + crash))
    assert d.verdict == "failure" and d.primary is not None, d.notes
    assert d.primary.id == "unclassified-failure/error-lines", d.primary


# Ultralytics' training row (trainer.py: "%11s" * 2 + "%11.4g" * (2 + losses)): epoch, GPU memory, each loss term.
YOLO = "{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}: 100%|##########| 8/8 [00:02<00:00,  3.02it/s]\n"


def test_a_yolo_row_whose_loss_columns_read_nan_is_the_nan_failure() -> None:
    rows = [YOLO.format(f"{e}/10", "3.71G", *(x, x, x), 24, 640) for e, x in
            enumerate(["1.234", "1.102", "nan", "nan", "nan"], 1)]
    d = Diagnoser().diagnose(Named("train.log", "".join(rows).encode()))
    assert d.verdict == "failure" and d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
    finite = [YOLO.format(f"{e}/10", "3.71G", x, x, x, 24, 640) for e, x in enumerate(["1.234", "1.102", "0.98"], 1)]
    assert Diagnoser().diagnose(Named("train.log", "".join(finite).encode())).verdict == "healthy"


# IPython 8's traceback (Jupyter, Colab): the header names the class, each frame is "File path:line, in f" and
# its source around the line that ran, numbered, that line marked with an arrow.
IPYTHON = """---------------------------------------------------------------------------
AssertionError                            Traceback (most recent call last)
Cell In[6], line 3
      1 import torch
----> 3 print(torch.cuda.get_device_capability())

File c:\\Users\\user\\anaconda3\\Lib\\site-packages\\torch\\cuda\\__init__.py:310, in _lazy_init()
    304 if is_in_bad_fork():
    305     raise RuntimeError(
    306         "Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
    307         "multiprocessing, you must use the 'spawn' start method"
    308     )
    309 if not hasattr(torch._C, "_cuda_getDeviceCount"):
--> 310     raise AssertionError("Torch not compiled with CUDA enabled")

AssertionError: Torch not compiled with CUDA enabled
"""


def test_the_source_ipython_prints_around_a_frame_is_code_not_the_failure() -> None:
    """The library's check for a forked process, quoted as source above the line that ran, is not a fork
    error; the statement that ran (the arrow's line) and the exception are the failure."""
    d = Diagnoser().diagnose(Named("cell.txt", IPYTHON.encode()))
    assert d.primary is not None and d.primary.id == "missing-cuda-libraries/cpu-only-build"
    assert all(a.id != "dataloader-worker-failure/cuda-in-forked-worker" for a in d.alternatives)
    # near miss: a script's own numbered rows ("500 loss = nan") are the log's words, not source
    rows = "".join(f"{i * 100} loss = {x}\n" for i, x in enumerate(["2.31", "2.07", "nan", "nan", "nan"], 1))
    d = Diagnoser().diagnose(Named("train.log", rows.encode()))
    assert d.primary is not None and d.primary.id == "nan-loss/nonfinite-loss"
