//! Turn-detector throughput against two baselines measured in the same run.
//!
//! Results land in `target/criterion/<group>/<input>/`: group `detector` (the `generic` preset;
//! `tui-claude` is the `claude` preset on the same bytes as `tui`; `*-screen` renders the live
//! screen after every chunk, as the tap does when it is never behind; the others leave it to
//! render once at the end, as under a flood), `vte` (a bare escape parser)
//! and `memchr` (counting line feeds). `cargo xtask bench` turns them into ratios.
//!
//! Kept short on purpose — 10 flat samples, 2 s of measurement per benchmark — so the whole bench
//! runs in about a minute; `-- --quick` shortens it further.

use std::hint::black_box;
use std::time::Duration;

use clippy_benches::{
    INPUT_BYTES, ascii_text, corpus_dir, detect, detect_rendering, newline_baseline, tui_output,
    utf8_text, vte_baseline,
};
use clippy_turn::Preset;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

fn preset(name: &str) -> Preset {
    Preset::named(name).expect("a shipped preset")
}

fn benches(c: &mut Criterion) {
    let tui = tui_output(&corpus_dir(), INPUT_BYTES).expect("the recorded corpus");
    let inputs = [
        ("ascii", ascii_text(INPUT_BYTES)),
        ("tui", tui),
        ("utf8", utf8_text(INPUT_BYTES)),
    ];
    let generic = preset("generic");
    let claude = preset("claude");

    let mut group = c.benchmark_group("detector");
    group.sampling_mode(SamplingMode::Flat);
    for (name, bytes) in &inputs {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(*name, |b| b.iter(|| detect(&generic, black_box(bytes))));
        group.bench_function(format!("{name}-screen"), |b| {
            b.iter(|| detect_rendering(&generic, black_box(bytes)))
        });
        if *name == "tui" {
            group.bench_function("tui-claude", |b| {
                b.iter(|| detect(&claude, black_box(bytes)))
            });
            group.bench_function("tui-claude-screen", |b| {
                b.iter(|| detect_rendering(&claude, black_box(bytes)))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("vte");
    group.sampling_mode(SamplingMode::Flat);
    for (name, bytes) in &inputs {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(*name, |b| b.iter(|| vte_baseline(black_box(bytes))));
    }
    group.finish();

    let mut group = c.benchmark_group("memchr");
    group.sampling_mode(SamplingMode::Flat);
    for (name, bytes) in &inputs {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(*name, |b| b.iter(|| newline_baseline(black_box(bytes))));
    }
    group.finish();
}

criterion_group! {
    name = detector;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(detector);
