"""Each reader on real output (tests/fixtures/loss/, source on line 1 or in SOURCES.md).

Formats with no public sample in our fixtures are written from the template of the code that
prints them (named at each test) and say so.
"""

from __future__ import annotations

import json
import math
import random
import struct

import pytest

from trainmedic.triage import triage_paths, triage_text
from trainmedic.triage.loss import LossTracker

from ..conftest import FIXTURES as TRIAGE
from .gen import decline, megatron_log

LOSS = TRIAGE.parent / "loss"
TUI = TRIAGE.parent / "tui"


def read(path, use_grep: bool = True):
    return triage_paths([str(path)], use_grep=use_grep).loss


def test_every_text_fixture_names_its_source_on_line_one():
    for path in LOSS.glob("*.log"):
        assert path.read_text(encoding="utf-8").startswith("# source: https://"), path
    assert (LOSS / "SOURCES.md").is_file()


# -- Megatron family ---------------------------------------------------------------------------
def test_megatron_lm_timestamped_moe_lines(use_grep):
    a = read(LOSS / "megatron_lm_moe_timestamped.log", use_grep)
    assert (a.source, a.framework) == ("megatron", "megatron-lm")
    assert [p[0] for p in a.points] == [15, 16, 17]
    assert a.points[0][1] == pytest.approx(1.957101)  # lm loss, not load_balancing_loss
    assert a.loss_scale_max == 1.0 and a.nan_iterations == 0


def test_megatron_old_format_without_timestamp(use_grep):
    a = read(LOSS / "megatron_llm_old_format.log", use_grep)
    assert a.source == "megatron" and a.count == 4 and (a.first_step, a.last_step) == (122, 125)
    assert a.framework == "megatron"  # no timestamp, no fork marker: the fork is not known


def test_megatron_deepspeed_bigscience_log_interval_10():
    a = read(TUI / "megatron_lm_loss_spike.log")
    assert a.log_interval == 10 and a.count == 8
    assert a.points[3] == (29050, pytest.approx(7.343709))


def test_megatron_deepspeed_markers_name_the_fork():
    a = read(TRIAGE / "megatron_grad_norm_nan.log")
    assert a.framework == "megatron-deepspeed"  # "consumed tokens", "actual seqlen", "TFLOPs"
    assert a.grad_norm_nan_count == 3 and a.nan_runs[0].what == "grad norm"


def test_megatron_vanished_loss_is_one_nan_point():
    a = read(TRIAGE / "megatron_loss_missing_nan.log")
    assert a.count == 2 and a.nan_points == 1 and a.missing_loss_steps == 1
    assert a.nan_runs[0].start == 3385


def test_gpt_neox_lm_loss_lines():
    """GPT-NeoX `training_log`: ` samples/sec: S | iteration N/ M | ... | lm_loss: X |`."""
    lines = [f" samples/sec: 51.200 | iteration {i:8d}/  320000 | elapsed time per iteration "
             f"(ms): 600.0 | learning rate: 1.234E-04 | approx flops per GPU: 150.3TFLOPS | "
             f"lm_loss: {v:.6E} | loss scale: 65536.0 | number of skipped iterations:   0 | "
             f"number of nan iterations:   0 |" for i, v in enumerate(decline(50), 1)]
    a = triage_text("\n".join(lines)).loss
    assert (a.source, a.framework, a.count) == ("gpt-neox", "gpt-neox", 50)


def test_nemo2_iteration_counter_is_per_epoch_global_step_wins():
    """NeMo 2 prints `Training epoch E, iteration i/n | ... | global_step: G |` (NeMo docs)."""
    lines = []
    for g in range(0, 60):
        epoch, it = divmod(g, 20)
        lines.append(f"Training epoch {epoch}, iteration {it}/19 | lr: 1e-05 | global_batch_size: "
                     f"8 | global_step: {g} | reduced_train_loss: {2.0 - g / 100:.4g} | "
                     f"train_step_timing in s: 0.5 | consumed_samples: {8 * (g + 1)}")
    a = triage_text("\n".join(lines)).loss
    assert a.source == "nemo" and a.count == 60 and a.last_step == 59 and a.replayed_points == 0


# -- Hugging Face, DeepSpeed -------------------------------------------------------------------
def test_hf_trainer_4x_dicts_without_bar_are_entry_numbers():
    a = read(LOSS / "hf_trainer_4x_dicts.log")
    assert (a.source, a.framework, a.count) == ("hf-trainer", "hf-trainer", 6)
    assert any("log-entry numbers" in n for n in a.notes)


def test_hf_trainer_5x_quoted_floats():
    """transformers 5 `ProgressCallback.on_log`: floats written with f"{v:.4g}"."""
    text = ("{'loss': '2.305', 'grad_norm': '1.234', 'learning_rate': '1e-05', 'epoch': '0.01'}\n"
            " 1%|          | 10/1000 [00:05<08:15,  2.00it/s]\n"
            "{'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '1e-05', 'epoch': '0.02'}\n"
            " 2%|▏         | 20/1000 [00:10<08:10,  2.00it/s]\n")
    a = triage_text(text).loss
    assert a.count == 2 and [p[0] for p in a.points] == [10, 20]
    assert a.nan_points == 1 and a.grad_norm_nan_count == 1


def test_hf_logging_steps_gives_steps_without_a_bar():
    text = "logging_steps=50,\n" + "\n".join(
        f"{{'loss': {v:.4f}, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}}"
        for v in decline(20))
    a = triage_text(text).loss
    assert (a.first_step, a.last_step, a.log_interval) == (50, 1000, 50)


def test_deepspeed_overflow_lines_with_the_tqdm_step(use_grep):
    a = read(LOSS / "ds_overflow_burst_tqdm.log", use_grep)
    assert a.overflow_events == 5
    assert a.scale_events[0].kind == "scale-collapse"
    assert (a.scale_events[0].start, a.scale_events[0].scale_to) == (378, 2.0)


def test_deepspeed_step_lines_set_the_skipped_count():
    a = read(LOSS / "deepspeed_step_lines.log")
    assert a.skipped_iterations == 5 and a.count == 0


# -- Lightning / NeMo 1, torchtitan, DLLogger ---------------------------------------------------
def test_lightning_bar_counts_batches_per_epoch_into_a_global_step():
    a = read(LOSS / "lightning_bar.log")
    assert a.source == "lightning" and a.first_step == 10 * 20000 + 18625


def test_nemo1_bar_and_a_glued_watchdog_line(use_grep):
    r = triage_paths([str(LOSS / "nemo1_bar_watchdog.log")], use_grep=use_grep)
    assert r.loss.points[0] == (32040, pytest.approx(2.590))  # reduced_train_loss
    assert "nccl-hang#watchdog-timeout" in [f.link for f in r.findings]


def test_lightning_epochs_without_a_total_add_up():
    bars = [f"Epoch {e}: : {i}it [00:10, 5.00it/s, v_num=1, train_loss_step={2 - e / 10:.3f}]"
            for e in range(3) for i in range(1, 6)]
    a = triage_text("\n".join(bars)).loss
    assert [p[0] for p in a.points] == list(range(1, 16))


def test_torchtitan_step_lines_repeated_by_every_rank(use_grep):
    a = read(LOSS / "torchtitan_steps.log", use_grep)
    assert a.source == "torchtitan" and [p[0] for p in a.points] == [4, 5]
    assert a.replayed_points > 0  # the other ranks' copies of the same step


def test_dllogger_json_lines_with_per_epoch_steps():
    """dllogger's JSONStreamBackend: `DLLL {"timestamp", ..., "step": [epoch, i], "data"}`."""
    recs = []
    for epoch in range(2):
        for i in range(1, 11):
            recs.append({"timestamp": "1614600000.0", "datetime": "2021-03-01 12:00:00",
                         "elapsedtime": "1.0", "type": "LOG", "step": [epoch, i],
                         "data": {"total_loss": 2.0 - (epoch * 10 + i) / 100}})
        recs.append({"timestamp": "1", "datetime": "x", "elapsedtime": "1", "type": "LOG",
                     "step": [epoch], "data": {"train_loss": 1.0}})
    a = triage_text("\n".join("DLLL " + json.dumps(r) for r in recs)).loss
    assert a.source == "dllogger" and [p[0] for p in a.points] == list(range(1, 21))


# -- metrics files -----------------------------------------------------------------------------
DEMO = LOSS / "losslint_demo"


@pytest.mark.parametrize(("name", "fmt", "count"), [
    ("healthy.csv", "csv", 60), ("diverging.csv", "csv", 40), ("nan.jsonl", "jsonl", 40),
    ("spike.jsonl", "jsonl", 30), ("trainer_state.json", "hf-trainer-state", 50),
    ("events.out.tfevents.1700000000.losslint-demo", "tensorboard", 40),
])
def test_losslint_demo_files_are_read(name, fmt, count):
    a = read(DEMO / name)
    assert (a.source, a.count) == (fmt, count)


def test_losslint_demo_events_found():
    assert read(DEMO / "healthy.csv").events() == []
    assert read(DEMO / "trainer_state.json").events() == []
    assert read(DEMO / "spike.jsonl").spikes[0].start == 15
    assert read(DEMO / "nan.jsonl").nan_runs[0].start == 30
    assert read(DEMO / "diverging.csv").divergence is not None


def test_tensorboardx_simple_values_and_tf2_tensors():
    x = read(LOSS / "tensorboard" / "events.out.tfevents.tensorboardx")
    t = read(LOSS / "tensorboard" / "events.out.tfevents.tensors")
    for a in (x, t):
        assert a.source == "tensorboard" and a.count == 200
        assert [s.start for s in a.spikes] == [120] and a.nan_runs[0].start == 150
    assert x.points[0] == (1, pytest.approx(2.0 + 6.0 * math.exp(-1 / 40.0) + 0.01 * 2 / 13))


def test_a_truncated_event_file_ends_quietly(tmp_path):
    data = (LOSS / "tensorboard" / "events.out.tfevents.tensorboardx").read_bytes()
    cut = tmp_path / "events.out.tfevents.cut"
    cut.write_bytes(data[: len(data) // 2 + 7])
    a = read(cut)
    assert 0 < a.count < 200


def test_text_after_an_event_file_or_garbage_under_its_name_is_no_traceback(tmp_path):
    """A length read from text (8 bytes of ASCII: exabytes) or a message cut inside a field
    used to raise MemoryError or OverflowError out of the reader."""
    data = (LOSS / "tensorboard" / "events.out.tfevents.tensorboardx").read_bytes()
    appended = tmp_path / "events.out.tfevents.appended"
    appended.write_bytes(data + b"appended text line one\nsecond line of text\n")
    a = read(appended)
    assert a.count == 200 and [s.start for s in a.spikes] == [120]
    noise = random.Random(7)
    for n in range(20):
        junk = tmp_path / f"events.out.tfevents.junk{n}"
        junk.write_bytes(bytes(noise.randrange(256) for _ in range(4000)))
        read(junk)  # whatever it reads, it returns
    # a record whose length fits but whose message stops inside a varint
    record = struct.pack("<Q", 3) + b"\0" * 4 + b"\x10\xff\xff" + b"\0" * 4
    cut = tmp_path / "events.out.tfevents.cutfield"
    cut.write_bytes(data + record)
    assert read(cut).count == 200


def test_wandb_chart_export(tmp_path):
    """W&B chart export: `Step` and `<run> - <metric>` with `__MIN`/`__MAX` bands."""
    rows = ['"Step","brisk-pond-1 - train/loss","brisk-pond-1 - train/loss__MIN",'
            '"brisk-pond-1 - train/loss__MAX"']
    for i, v in enumerate(decline(100), 1):
        v = v * 4 if i == 70 else v
        rows.append(f'"{i}","{v}","{v}","{v}"')
    path = tmp_path / "wandb_export_2025-01-01.csv"
    path.write_text("\n".join(rows) + "\n")
    a = read(path)
    assert (a.source, a.count) == ("csv", 100) and a.spikes[0].start == 70


def test_csv_with_a_run_history_header(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("_step,_runtime,train/loss,train/grad_norm\n" + "\n".join(
        f"{i},{i * 2},{v},{50.0 if i == 80 else 1.0}" for i, v in enumerate(decline(100), 1)))
    a = read(path)
    assert a.count == 100 and [g.step for g in a.grad_explosions] == [80]


def test_several_metrics_files_are_separate_runs():
    r = triage_paths([str(DEMO)])
    assert len(triage_paths([str(DEMO)]).files) == 6
    sources = {f.summary.split(":")[0].rsplit("/", 1)[-1] for f in r.findings}
    assert {"spike.jsonl", "nan.jsonl"} & sources or r.findings[0].details.get("also")


def test_metrics_sniffing_is_by_content_not_name(tmp_path):
    path = tmp_path / "metrics.txt"
    path.write_text("step,loss\n" + "\n".join(f"{i},{v}" for i, v in enumerate(decline(30))))
    assert read(path).source == "csv"
    log = tmp_path / "train.csv"
    log.write_text(megatron_log(decline(30)))
    assert read(log).source == "megatron"


def test_tracker_api_reads_lines_one_by_one():
    t = LossTracker()
    assert t.feed("Step   1560 | Loss: 0.5275 | LR: 3.00e-04 | GradNorm: 2.29", 1)
    assert t.feed("Iter 1570: Train loss 1.593, Learning Rate 7.000e-05, It/sec 0.999", 2)
    assert not t.feed("{'eval_loss': 2.0, 'eval_runtime': 3.1, 'epoch': 0.2}", 3)
    a = t.finish()
    assert a.count == 2 and a.last_step == 1570 and a.source == "plain"


def test_mmengine_epoch_lines_give_global_steps_and_the_grad_explosion():
    """OpenMMLab mmengine `Epoch(train) [E][ i/n] ... grad_norm: G  loss: X` (a real case of
    the public corpus): epoch 2's batches 50 and 100 of 788 are global steps 838 and 888."""
    case = (TRIAGE.parents[1] / "corpus" / "cases" / "loss-spike"
            / "mmengine_grad_norm_31m_loss_cls_spike_mmdet_11708.log")
    report = triage_paths([str(case)])
    a = report.loss
    assert a.source == "mmengine"
    assert [s for s, _x in a.points] == [838, 888]
    assert [g.step for g in a.grad_explosions] == [888]
    assert report.findings[0].link == "loss-spike#grad-norm-explosion"
