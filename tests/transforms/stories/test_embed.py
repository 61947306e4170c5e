"""The real embedders: batch independence (bit for bit, fp32 and int8), int8 fidelity to fp32, sense on known pairs,
and the choice of arithmetic on the CPU the tests run on (never a path slower than fp32).

Loads the packaged all-MiniLM-L6-v2 (a few seconds); the int8 layer is also checked against nn.Linear on its own.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from transforms.stories.embed import cpu, embed  # noqa: E402
from transforms.stories.embed.int8 import RowInt8Linear, quantize_linears  # noqa: E402

TEXTS = [
    "Magnitude 6.1 earthquake strikes off the coast of northern California. The quake hit at 3 a.m. local time.",
    "Strong quake shakes northern California coast, no tsunami warning issued",
    "Apple unveils new iPhone with faster chip and better camera at Cupertino event",
    "Manchester United beat Liverpool 2-1 at Old Trafford",
    "Central bank raises interest rates by a quarter point to fight inflation. Markets fell on the news.",
    "Fed lifts rates again as inflation stays stubbornly high",
    "Short",
    "",
    "A very long lede " + "that keeps going with more words " * 40,
]


# many texts of few lengths: groups larger than a block, so batchings split them into blocks differently
MANY = (
    [f"{t} {w}" for t in TEXTS[:6] for w in ("update", "live report", "analysis of the day", "x", "video")]
    + TEXTS
    + ["Brief", "Quake", "Fed"]
)


@pytest.fixture(scope="module", params=["minilm-int8", "minilm-fp32"])
def embedder(request):
    return embed.get_embedder(request.param)


def test_a_vector_does_not_depend_on_the_rest_of_its_batch(embedder):
    texts = TEXTS if embedder.quantized else MANY  # int8 is ~20x slower than fp32 on an AVX2-only CPU
    whole = embedder.encode(texts)
    assert whole.shape == (len(texts), 384) and whole.dtype == np.float32
    one_by_one = np.vstack([embedder.encode([t]) for t in texts])
    reordered = embedder.encode(texts[::-1])[::-1]
    doubled = embedder.encode(texts + texts[:4])[: len(texts)]
    threes = np.vstack([embedder.encode(texts[i : i + 3]) for i in range(0, len(texts), 3)])
    # fixed-shape blocks of equal length on single-threaded workers: bit for bit in fp32 as in int8
    for other in (one_by_one, reordered, doubled, threes):
        assert np.array_equal(whole, other)
    np.testing.assert_allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)


def test_a_vector_does_not_depend_on_the_number_of_workers():
    one = embed.SentenceTransformerEmbedder(quantize=False, workers=1)
    many = embed.get_embedder("minilm-fp32")
    assert many.workers == cpu.available_cores()
    try:
        assert np.array_equal(one.encode(MANY), many.encode(MANY[::-1])[::-1])
    finally:
        one.close()


def test_same_event_is_nearer_than_a_different_one(embedder):
    v = embedder.encode(TEXTS)
    sim = v @ v.T
    assert sim[0, 1] > 0.6 and sim[4, 5] > 0.4
    assert sim[0, 1] > max(sim[0, 2], sim[0, 3], sim[0, 4]) + 0.3
    assert sim[4, 5] > max(sim[4, 2], sim[4, 3], sim[4, 0]) + 0.2


def test_int8_stays_close_to_fp32_and_fp32_matches_sentence_transformers():
    fp32, int8 = embed.get_embedder("minilm-fp32"), embed.get_embedder("minilm-int8")
    a, b = fp32.encode(TEXTS), int8.encode(TEXTS)
    cos = (a * b).sum(axis=1)[[i for i, t in enumerate(TEXTS) if t]]  # the empty text is [CLS][SEP] only
    assert cos.min() > 0.99, cos
    reference = fp32.model.encode([t.strip() for t in TEXTS], normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(a, reference, atol=2e-5)


def test_row_int8_linear_matches_linear_per_row():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 48)
    q = RowInt8Linear(lin)
    x = torch.randn(5, 7, 64) * torch.logspace(-2, 2, 7)[None, :, None]  # rows of very different magnitudes
    with torch.no_grad():
        want, got = lin(x), q(x)
    assert got.shape == want.shape
    rel = (got - want).norm(dim=-1) / want.norm(dim=-1)
    assert rel.max() < 0.02, rel.max()
    with torch.no_grad():  # a row's output is the same alone or with others
        assert torch.equal(q(x[2:3, 4:5]), got[2:3, 4:5])


def test_quantize_linears_replaces_every_linear():
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 4)))
    assert quantize_linears(m) == 2
    assert not any(isinstance(x, torch.nn.Linear) for x in m.modules())


def test_unknown_embedder_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown embedder"):
        embed.create_embedder("minilm-fp16")


def test_siblings_share_a_quantised_input_only_while_it_is_unchanged():
    torch.manual_seed(1)
    parent = torch.nn.Module()
    parent.a, parent.b = torch.nn.Linear(16, 8), torch.nn.Linear(16, 8)
    ref_b = torch.nn.Linear(16, 8)
    ref_b.load_state_dict(parent.b.state_dict())
    quantize_linears(parent)
    x = torch.randn(3, 16)
    with torch.no_grad():
        parent.a(x)
        shared = parent.b(x)
        alone = RowInt8Linear(ref_b)(x)
        assert torch.equal(shared, alone)
        x.mul_(100.0)  # same object, new contents: must be quantised again
        assert torch.equal(parent.b(x), RowInt8Linear(ref_b)(x))


# ---------------------------------------------------------------------------------------------------------------
# The arithmetic on the CPU the tests run on


def test_choice_rule():
    assert cpu.decide(set(), 3.0)[0] == "fp32"  # no VNNI/AMX/dot-product flag: never int8, however it measured
    assert cpu.decide({"avx2", "avx512_vnni"}, 2.0)[0] == "int8"
    # with the flags, timing does not decide (it swung 0.13x-7.4x under load): one machine, one arithmetic
    assert cpu.decide({"avx2", "avx_vnni"}, 0.13)[0] == cpu.decide({"avx2", "avx_vnni"}, 7.4)[0] == "int8"
    assert "noisy" in cpu.decide({"avx2", "avx_vnni"}, 0.13)[1]
    assert cpu.decide({"avx2", "amx_int8"}, None)[0] == "int8"
    assert cpu.decide({"avx512_vnni"}, 0.13, pinned="fp32")[0] == "fp32"
    assert cpu.decide(set(), 0.05, pinned="int8") == ("int8", "pinned by NEWSROOM_EMBED_PATH=int8")
    with pytest.raises(ValueError, match="NEWSROOM_EMBED_PATH"):
        cpu.decide(set(), 1.0, pinned="fp16")


def test_the_default_embedder_runs_the_path_the_rule_chose_from_this_cpu():
    """Which path is faster is a benchmark's question (benchmarks/stories_bench.py); here the rule: the default
    embedder runs what ``cpu.decide`` made of this CPU's flags and measured speedup, and says why. A measured
    speedup below 1.0 does not switch to fp32 on a CPU with the int8 instructions (one timing on a loaded machine
    does not decide); asserting otherwise failed this test whenever CI's load slowed the int8 product."""
    info = cpu.choose_path()
    assert info is not cpu.choose_path() and info == cpu.choose_path()  # measured once, cached per process
    assert (
        info["fp32_ms"] > 0
        and info["int8_ms"] > 0
        and info["int8_flags"] == sorted(f for f in cpu.INT8_FLAGS if f in cpu.cpu_flags())
    )
    assert info["path"] == cpu.decide(cpu.cpu_flags(), info["int8_speedup"])[0]
    default = embed.get_embedder("minilm")
    assert default.path_info["path"] == info["path"] and default.quantized == (info["path"] == "int8")
    assert embed.loaded_paths()["minilm"]["reason"] == info["reason"]


def test_pinning_the_arithmetic(monkeypatch):
    monkeypatch.setenv(cpu.ENV, "fp32")
    saved = cpu._CHOICE
    cpu.reset()
    try:
        info = cpu.choose_path(measure=False)
        assert info["path"] == "fp32" and info["reason"].startswith("pinned")
    finally:
        cpu._CHOICE = saved  # the process's real choice, which the embedders already created were built with


def test_the_backfill_manifest_records_the_arithmetic_and_why(tmp_path):
    import json

    from pipelines.backfill import run

    inp = tmp_path / "in.jsonl"
    rows = [{"id": f"a{i}", "language": "en", "title": t, "text": ""} for i, t in enumerate(TEXTS[:6])]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run([f"--input={inp}", f"--output={tmp_path / 'out'}", "--embedder=minilm", "--exact_index"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    got = manifest["embedder_paths"]["minilm"]
    want = cpu.choose_path()
    assert got["path"] == want["path"] and got["reason"] == want["reason"]
    assert got["int8_speedup"] == want["int8_speedup"] and got["workers"] == cpu.available_cores()
