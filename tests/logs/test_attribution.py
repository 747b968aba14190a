"""Rank, host and time from the prefixes and file names people really get."""

from __future__ import annotations

import pytest

from trainmedic.logs.attribution import host_from_path, parse_time, rank_from_path, split_prefix


@pytest.mark.parametrize(
    ("line", "rank", "host", "rest"),
    [
        ("[rank3]: RuntimeError: boom", 3, None, "RuntimeError: boom"),  # torch >= 2.2 tracebacks
        ("[default12]:Epoch 1", 12, None, "Epoch 1"),  # torchrun --tee
        ("  3: Traceback (most recent call last):", 3, None, "Traceback (most recent call last):"),  # srun -l
        ("17: step 10", 17, None, "step 10"),
        ("[1,5]<stderr>:RuntimeError: x", 5, None, "RuntimeError: x"),  # mpirun --tag-output
        ("[rank: 1] Epoch 3", 1, None, "Epoch 3"),  # Lightning
        ("[RANK 1] 2026-05-19 10:10:29,701 [ERROR] GPU circuit breaker OPEN", 1, None,
         "2026-05-19 10:10:29,701 [ERROR] GPU circuit breaker OPEN"),  # a project logger's own prefix
        ("node-7: [rank3]: ValueError: v", 3, "node-7", "ValueError: v"),  # pdsh host, then rank
        ("worker-1: [default0]:hello", 0, "worker-1", "hello"),  # DeepSpeed multi-node launcher
        # pdsh names hostfile addresses and the launching node as given: "10.0.0.2: ", "localhost: "
        ("10.0.0.2: [rank4]: FileNotFoundError: f", 4, "10.0.0.2", "FileNotFoundError: f"),
        ("localhost: [rank0]:[E328 00:21:12] x", 0, "localhost", "[E328 00:21:12] x"),
        ("10.0.2: step 3", None, None, "10.0.2: step 3"),  # near miss: not an address
        # exception classes that C-extension modules name in lower case end a traceback, no host prefix;
        # a dotted host name is still one
        ("socket.gaierror: [Errno 11001] getaddrinfo failed", None, None,
         "socket.gaierror: [Errno 11001] getaddrinfo failed"),
        ("cv2.error: OpenCV(4.5.5) resize.cpp:4052: error: (-215:Assertion failed)", None, None,
         "cv2.error: OpenCV(4.5.5) resize.cpp:4052: error: (-215:Assertion failed)"),
        ("socket.timeout: timed out", None, None, "socket.timeout: timed out"),
        ("node1.cluster.local: [rank2]: KeyError: 'x'", 2, "node1.cluster.local", "KeyError: 'x'"),
        ("[default0]:[rank12]:[E817 17:40:34] x", 12, None, "[E817 17:40:34] x"),  # local tee prefix, then the global rank
        (
            "[E1129 16:29:22.217000 4711 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective",
            2, None, "[E1129 16:29:22.217000 4711 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective",
        ),
        ("RuntimeError: DataLoader worker exited", None, None, "RuntimeError: DataLoader worker exited"),
        ("ValueError: Caught ValueError in DataLoader worker process 0.", None, None,
         "ValueError: Caught ValueError in DataLoader worker process 0."),
        ("INFO: starting", None, None, "INFO: starting"),
        ("Rank 3: loss is 0.41", 3, None, "loss is 0.41"),  # a script's own print(f"Rank {rank}: ...")
        # a logging header whose last field is the rank (OLMo), and a call's keyword that is not one
        ("CRITICAL [olmo.util:158, rank=2] Uncaught OLMoThreadError: data thread 3 failed", 2, None,
         "CRITICAL [olmo.util:158, rank=2] Uncaught OLMoThreadError: data thread 3 failed"),
        ("init_process_group(rank=2) [done]", None, None, "init_process_group(rank=2) [done]"),
        # Lightning's "[rank: N] " behind a logging header (the lightning-hydra template's RankedLogger)
        ("[2024-02-24 12:15:22,750][pkg.utils][ERROR] - [rank: 1] boom", 1, None,
         "[2024-02-24 12:15:22,750][pkg.utils][ERROR] - [rank: 1] boom"),
        ("print('[rank: 1] ') failed", None, None, "print('[rank: 1] ') failed"),  # near miss: no header before it
        ("Rank 3 failed to pass monitoredBarrier in 1800000 ms", None, None,
         "Rank 3 failed to pass monitoredBarrier in 1800000 ms"),  # a message about a rank, not its own line
        # Ray's prefix on a remote actor's lines (verl, OpenRLHF), then torchrun's
        ("(WorkerDict pid=2345, ip=10.0.0.2) [rank3]: ValueError: v", 3, "10.0.0.2", "ValueError: v"),
        ("(TaskRunner pid=1234) Training step 3", None, None, "Training step 3"),
        ("(pid=4242, ip=10.0.0.3) Traceback (most recent call last):", None, "10.0.0.3",
         "Traceback (most recent call last):"),  # a Ray task: no name before the pid
        # a carrier's prefix before them: kubectl logs --timestamps, a markdown quote
        ("2024-05-05T21:53:01.022194123Z [rank3]: KeyError: 'x'", 3, None, "KeyError: 'x'"),
        (">   File \"train.py\", line 3, in <module>", None, None, '  File "train.py", line 3, in <module>'),
        ("May 05 21:53:01 node-7 python3[4242]: [rank2]: KeyError: 'x'", 2, "node-7", "KeyError: 'x'"),  # journalctl
        ("[pod/train-worker-1/pytorch] KeyError: 'x'", None, "train-worker-1", "KeyError: 'x'"),  # kubectl --prefix
        ("trainer-1  | KeyError: 'x'", None, "trainer-1", "KeyError: 'x'"),  # docker compose logs
        # a timestamp before every line (moreutils' ts, a logging handler's): the line's time, read from the
        # whole line, and the text behind it
        ("2024-05-05 21:53:43,022 - INFO - step 3", None, None, "INFO - step 3"),
        ("[2024-05-05 21:53:43] Traceback (most recent call last):", None, None, "Traceback (most recent call last):"),
        ("2024-11-20 14:37:16 1000: train loss 0.3", None, None, "1000: train loss 0.3"),  # a step, not srun's rank
        # near miss: a date inside the text is the text's
        ("Saved checkpoint 2024-05-05 21:53:43 to out/", None, None, "Saved checkpoint 2024-05-05 21:53:43 to out/"),
    ],
)
def test_prefixes(line: str, rank: int | None, host: str | None, rest: str) -> None:
    att = split_prefix(line)
    assert (att.rank, att.host, att.rest) == (rank, host, rest)


@pytest.mark.parametrize(
    ("path", "rank", "host"),
    [
        ("logs/rank3.log", 3, None),
        ("node-7/rank_3.out", 3, "node-7"),
        ("out/rank-12.txt", 12, None),
        ("torchelastic/run1/attempt_0/2/stderr.log", 2, None),
        ("logs/train.log", None, None),
        ("host12/stdout_4.log", 4, "host12"),
    ],
)
def test_rank_and_host_from_file_names(path: str, rank: int | None, host: str | None) -> None:
    assert rank_from_path(path) == rank
    assert host_from_path(path) == host


def test_timestamps() -> None:
    assert parse_time("2024-06-07 16:29:22,217 INFO x") == pytest.approx(1717777762.217)
    assert parse_time("2024-06-07T16:29:22.5Z x") == pytest.approx(1717777762.5)
    assert parse_time("2024-06-07T18:29:22+02:00 x") == pytest.approx(1717777762.0)
    glog = parse_time("E1129 16:29:22.217000 4711 ProcessGroupNCCL.cpp:616]", year=2026)
    assert glog == pytest.approx(1795969762.217)
    # c10's logger (torch 2.x) writes the month unpadded: June 26 is "626", January 1 "101"
    c10 = "[rank7]:[E626 05:14:36.393067540 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) Rank 7]"
    assert parse_time(c10, year=2025) == pytest.approx(1750914876.393067540)
    assert parse_time("[I101 00:00:01.5 socket.cpp:1]", year=2025) == pytest.approx(1735689601.5)
    assert parse_time("[W1301 00:00:01.5 x.cpp:1]", year=2025) is None  # no 13th month
    assert parse_time("[Sun Nov 29 16:29:22 2026] Out of memory") == pytest.approx(1795969762.0)
    assert parse_time("1732897762.25 step 3") == pytest.approx(1732897762.25)
    assert parse_time("[ 8812.441235] Out of memory: Killed process 1") is None  # uptime, not a clock
    assert parse_time("step 123 loss 0.5") is None


def test_a_glog_stamp_with_no_year_is_never_in_the_future() -> None:
    """glog prints no year: a month and day still to come this year were last year's."""
    import calendar
    import time

    now = time.gmtime()
    ahead = time.gmtime(time.time() + 3 * 86_400)  # three days on (next year's, at the end of December)
    t = parse_time(f"E{ahead.tm_mon:02d}{ahead.tm_mday:02d} 12:00:00.0 x.cpp:1]")
    assert t is not None and t <= time.time()
    assert time.gmtime(t).tm_year == (now.tm_year - 1 if ahead.tm_year == now.tm_year else now.tm_year)
    today = parse_time(f"E{now.tm_mon:02d}{now.tm_mday:02d} 00:00:00.0 x.cpp:1]")
    assert today == calendar.timegm((now.tm_year, now.tm_mon, now.tm_mday, 0, 0, 0, 0, 0, 0))


def test_ranks_named_by_launchers_and_messages() -> None:
    from trainmedic.logs.attribution import launcher_rank, rank_in_text

    agent = ("E0811 10:34:02.121527 140541741963072 torch/distributed/elastic/multiprocessing/api.py:833] failed "
             "(exitcode: -9) local_rank: 1 (pid: 2927916) of binary: /usr/bin/python")
    assert launcher_rank(agent) == rank_in_text(agent) == 1
    assert launcher_rank("Exception: process 3 terminated with signal SIGKILL") == 3
    mpi = "mpirun noticed that process rank 5 with PID 0 on node node1 exited on signal 9 (Killed)."
    assert launcher_rank(mpi) == 5
    # DeepSpeed's and the legacy launcher's lines print the LAST spawned worker's command (deepspeed/
    # launcher/launch.py sigkill_handler reuses the spawn loop's `cmd`): its --local_rank names no one.
    ds = "['/usr/bin/python', '-u', 'main.py', '--local_rank=1', '--zero_stage', '0'] exits with return code = 1"
    assert launcher_rank(ds) is None
    legacy = ("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=7']' "
              "returned non-zero exit status -11.")
    assert launcher_rank(legacy) is None
    assert launcher_rank("Parameter indices which did not receive grad for rank 2: 362 363") is None
    assert rank_in_text("Parameter indices which did not receive grad for rank 2: 362 363") == 2
    assert rank_in_text("RuntimeError: [2]: params[4] in this process with sizes [243, 256] appears not to match") == 2
    assert rank_in_text("step 200 loss 0.5 rank-wise balanced") is None
    # an exception that opens with the rank that raised it (Megatron's grad-norm check); a rank as a value is not one
    nan = "AssertionError: Rank 11: found NaN in local grad norm in backward pass before data-parallel communication"
    assert rank_in_text(nan) == 11
    assert rank_in_text("ValueError: rank 3 is larger than the world size 2") is None
    # NCCL's proxy thread names its own rank; mpirun's first failed process is the last number
    proxy = "node1:22337:22453 [6] proxy.cc:1097 NCCL WARN [Proxy Service 14] Failed to execute operation Connect"
    assert rank_in_text(proxy) == 14
    assert launcher_rank("  Process name: [[50371,1],3]") == 3
    assert launcher_rank("  Process name: worker-3") is None


def test_a_timestamp_before_the_rank_prefix() -> None:
    att = split_prefix("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of memory.")
    assert att.rank == 3 and att.rest.startswith("torch.OutOfMemoryError")
    assert split_prefix("2024-11-20 14:37:16 INFO step 3").rank is None


def test_a_tail_of_progress_lines_is_read_once_per_line_and_its_finish_is_seen() -> None:
    """A line two progress patterns nominate ("epoch" and "step") adds its metric figures once; a
    finished run is seen however many progress lines follow its last word."""
    from trainmedic.api import Diagnoser, Named

    lines = b"".join(b"epoch 1 step %d data_time: 0.5 time: 1.0 loss: 0.9\n" % i for i in range(40))
    [scan] = Diagnoser().scan(Named("run.log", lines))
    p = scan.progress[None]
    # (the run's first timed record, step 0 of epoch 1, is its start-up and left out of the times)
    assert (p.timed, p.losses, p.step) == (39, 40, 39) and p.data_time == 19.5
    done = b"Training completed.\n" + b"".join(b"step %d loss 0.5\n" % i for i in range(1000))
    [scan] = Diagnoser().scan(Named("run.log", done))
    assert scan.done and scan.progress[None].step == 999


def test_a_c10d_message_glued_to_a_progress_bar_keeps_its_rank() -> None:
    bar = "train: Scanning '../coco/labels/train' images and labels...43718 found:  97%|##9| 43830/45049 [01:07<00:18, 66.12it/s]"
    glued = bar + "[E ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(...)"
    assert split_prefix(glued).rank == 1
    # A rank a long message names deep inside its own text is not the line's rank.
    named = "x" * 200 + " waiting for [Rank 1] to join"
    assert split_prefix(named).rank is None


def test_sagemakers_mpi_prefix_names_the_rank() -> None:
    """SageMaker's MPI launcher: "[1,mpirank:3,algo-1]<stderr>:" is rank 3 (algo-1 is the instance)."""
    att = split_prefix("[1,mpirank:3,algo-1]<stderr>:RuntimeError: CUDA out of memory.")
    assert att.rank == 3 and att.rest == "RuntimeError: CUDA out of memory."
    att = split_prefix("2024-02-01 10:00:00 [1,mpirank:5,algo-2]<stdout>:step 3")
    assert att.rank == 5 and att.rest == "step 3"
    assert split_prefix("[1,mpirank:x,algo-1]<stderr>: step").rank is None  # near-miss: no rank number


def test_a_sagemaker_prefixed_traceback_quoted_from_its_first_frame_is_read() -> None:
    from trainmedic.api import Diagnoser, Named

    log = ('[1,mpirank:2,algo-1]<stderr>:  File "train.py", line 40, in <module>\n'
           "[1,mpirank:2,algo-1]<stderr>:    main()\n"
           '[1,mpirank:2,algo-1]<stderr>:  File "train.py", line 33, in main\n'
           "[1,mpirank:2,algo-1]<stderr>:    loss = model(x)\n"
           "[1,mpirank:2,algo-1]<stderr>:ZeroDivisionError: division by zero\n")
    [scan] = Diagnoser(parallel=False).scan(Named("a.log", log.encode()))
    assert len(scan.tracebacks) == 1 and scan.tracebacks[0].rank == 2


def test_a_traceback_under_rays_actor_prefix_is_read_frame_by_frame() -> None:
    from trainmedic.logs.tracebacks import assemble_traceback

    ray = "(WorkerDict pid=2345, ip=10.0.0.2) "
    lines = [ray + "Traceback (most recent call last):",
             ray + '  File "/app/verl/workers/fsdp_workers.py", line 512, in update_actor',
             ray + "    metrics = self.actor.update_policy(data=data)",
             ray + "ValueError: something no entry knows about"]
    tb = assemble_traceback([ln.encode() for ln in lines], "run.log", 1, None)
    assert tb is not None and tb.exceptions == ("ValueError: something no entry knows about",)
    assert len(tb.frames) == 2


def test_a_loss_figure_in_capital_exponent_form_or_padded_without_a_colon_is_read() -> None:
    """Megatron-LM prints "lm loss: 1.768794E+01" (the exponent is part of the figure), and pytorch/examples'
    word language model pads it to its width with no colon ("| loss   nan | ppl      nan")."""
    from trainmedic.api import Diagnoser, Named

    megatron = b"".join(b" iteration %8d/    1000 | consumed samples: %12d | lm loss: %s | loss scale: 12.0 |\n"
                        % (i, i * 1024, v) for i, v in enumerate((b"1.244238E+01", b"4.424266E+01", b"2.043871E+01"), 1))
    [scan] = Diagnoser().scan(Named("run.log", megatron))
    p = scan.progress[None]
    assert p.loss_min == pytest.approx(12.44238) and p.loss_last == pytest.approx(20.43871)
    word_lm = b"".join(b"| epoch   %d |   200/ 2983 batches | lr 20.00 | ms/batch 11.41 | loss   %s | ppl      %s\n"
                       % (e, v, v) for e, v in ((1, b"6.21"), (2, b"nan"), (3, b"nan")))
    [scan] = Diagnoser().scan(Named("run.log", word_lm))
    p = scan.progress[None]
    assert p.loss_min == pytest.approx(6.21) and p.nonfinite is not None


@pytest.mark.parametrize(("line", "host"), [
    ("train.py: error: unrecognized arguments: --local_rank=0", None),  # argparse's "prog: error:"
    ("train.sh: line 12: 4242 Killed python train.py", None),  # bash names its script
    ("node-7.cluster: RuntimeError: CUDA error: out of memory", "node-7.cluster"),  # pdsh's host prefix
])
def test_a_script_s_name_before_a_colon_is_no_host(line: str, host: str | None) -> None:
    assert split_prefix(line).host == host
