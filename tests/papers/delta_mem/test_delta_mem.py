"""delta_mem: oracles for the scan, the wrapper, the episode runner and the readers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from neurips26.common.models.llm import tiny_causal_lm
from neurips26.papers.delta_mem import (
    FAMILIES,
    DeltaMemConfig,
    DeltaMemReader,
    Dialogue,
    EpisodeRunner,
    FrozenReader,
    InContextReader,
    LoRAReader,
    MemoryTokensReader,
    RetrievalReader,
    WordTokenizer,
    all_texts,
    attach_delta_mem,
    candidate_ids,
    delta_mem_modules,
    delta_mem_parameters,
    delta_rule_scan,
    detach_delta_mem,
    evaluate_episodes,
    fit_reader,
    lexical_retrieve,
    lora_rank_for,
    make_dialogues,
    num_memory_parameters,
    reset_delta_mem,
    state_floats,
    write_mask,
)
from neurips26.papers.delta_mem.tasks import VALUES


def loop_scan(S, q, k, v, beta, keep=None, mask=None):
    """The update and read equations, token by token, in float64 numpy."""
    S = S.astype(np.float64).copy()
    B, T, r = q.shape
    keep = 1.0 - beta if keep is None else keep
    reads = np.zeros((B, T, r))
    for b in range(B):
        for t in range(T):
            reads[b, t] = S[b] @ q[b, t]
            if mask is not None and mask[b, t] == 0:
                continue
            new = np.diag(keep[b, t]) @ S[b]
            new -= np.diag(beta[b, t]) @ np.outer(S[b] @ k[b, t], k[b, t])
            new += np.diag(beta[b, t]) @ np.outer(v[b, t], k[b, t])
            S[b] = new
    return S, reads


def _rand(rng, *shape):
    return rng.normal(size=shape)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("custom_keep", [False, True])
def test_scan_equals_the_token_loop(masked, custom_keep):
    rng = np.random.default_rng(0)
    B, T, r = 3, 9, 5
    S0, q, k, v = _rand(rng, B, r, r), _rand(rng, B, T, r), _rand(rng, B, T, r), _rand(rng, B, T, r)
    beta = rng.uniform(size=(B, T, r))
    keep = rng.uniform(size=(B, T, r)) if custom_keep else None
    mask = (rng.uniform(size=(B, T)) < 0.6).astype(float) if masked else None
    want_S, want_r = loop_scan(S0, q, k, v, beta, keep, mask)
    t = lambda a: None if a is None else torch.as_tensor(a)  # noqa: E731
    S, reads = delta_rule_scan(t(S0), t(q), t(k), t(v), t(beta), keep=t(keep), mask=t(mask))
    np.testing.assert_allclose(S.numpy(), want_S, atol=1e-10)
    np.testing.assert_allclose(reads.numpy(), want_r, atol=1e-10)


def test_masked_tokens_leave_the_state_unchanged():
    rng = np.random.default_rng(1)
    S0 = torch.as_tensor(_rand(rng, 2, 4, 4))
    q, k, v = (torch.as_tensor(_rand(rng, 2, 6, 4)) for _ in range(3))
    beta = torch.full((2, 6, 4), 0.7, dtype=torch.float64)
    S, _ = delta_rule_scan(S0, q, k, v, beta, mask=torch.zeros(2, 6))
    assert torch.equal(S, S0)


def test_classic_delta_rule_recall_overwrite_and_orthogonality():
    r = 4
    eye = torch.eye(r)
    ones = torch.ones(1, 1, r)
    S = torch.zeros(1, r, r)
    v1, v2, w = torch.tensor([0.5, -1.0, 2.0, 3.0]), torch.tensor([1.0, 1.0, -4.0, 0.0]), \
        torch.tensor([7.0, 0.0, 1.0, -2.0])

    def write(S, key, val):
        return delta_rule_scan(S, key[None, None], key[None, None], val[None, None], ones,
                               keep=ones)[0]

    def read(S, key):
        return delta_rule_scan(S, key[None, None], key[None, None], key[None, None],
                               0 * ones, keep=ones)[1][0, 0]

    S = write(S, eye[0], v1)
    torch.testing.assert_close(read(S, eye[0]), v1, rtol=0, atol=1e-6)
    S = write(S, eye[1], w)  # an orthogonal key does not disturb the first association
    torch.testing.assert_close(read(S, eye[0]), v1, rtol=0, atol=1e-6)
    S = write(S, eye[0], v2)  # overwrite: the delta rule erases v1
    torch.testing.assert_close(read(S, eye[0]), v2, rtol=0, atol=1e-6)
    torch.testing.assert_close(read(S, eye[1]), w, rtol=0, atol=1e-6)
    # a non-axis unit key
    key = torch.tensor([1.0, 2.0, -2.0, 0.5])
    key = key / key.norm()
    S = write(S, key, v1)
    torch.testing.assert_close(read(S, key), v1, rtol=0, atol=1e-5)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral", "gemma"])
def test_zero_init_is_the_backbone_exactly(arch):
    model = tiny_causal_lm(arch, seed=3)
    ids = torch.randint(0, 256, (2, 11), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = model(input_ids=ids).logits
        names = attach_delta_mem(model, DeltaMemConfig())
        assert len(names) == 2
        out1 = model(input_ids=ids).logits
        out2 = model(input_ids=ids).logits  # the state is non-zero now
    assert torch.equal(out1, ref) and torch.equal(out2, ref)
    assert all(float(m.state.abs().sum()) > 0 for m in delta_mem_modules(model))
    # a non-zero correction changes the output (the test above can fail)
    with torch.no_grad():
        delta_mem_parameters(model)[-1].add_(0.1)
        reset_delta_mem(model)
        assert not torch.equal(model(input_ids=ids).logits, ref)


def test_training_leaves_the_backbone_bitwise_unchanged():
    model = tiny_causal_lm(seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    attach_delta_mem(model, DeltaMemConfig(rank=4))
    params = delta_mem_parameters(model)
    mem_before = [p.detach().clone() for p in params]
    opt = torch.optim.Adam(params, lr=1e-2)
    ids = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(1))
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(input_ids=ids).logits[:, :-1].flatten(0, 1),
                                           ids[:, 1:].flatten())  # fmt: skip
        loss.backward()
        opt.step()
        reset_delta_mem(model)
    detach_delta_mem(model)
    after = model.state_dict()
    assert set(after) == set(before)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(p.grad is None for p in model.parameters())
    assert any(not torch.equal(a, b.detach()) for a, b in zip(mem_before, params, strict=True))


def test_state_lifecycle_carry_reset_and_batch_independence():
    model = tiny_causal_lm(seed=0)
    attach_delta_mem(model, DeltaMemConfig(rank=4), layers=[0])  # layer 0: h is token-wise
    (wrapper,) = delta_mem_modules(model)
    ids = torch.randint(0, 256, (2, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        model(input_ids=ids[:, :4])
        model(input_ids=ids[:, 4:])
        carried = wrapper.state.clone()
        reset_delta_mem(model)
        assert wrapper.state is None
        model(input_ids=ids)
        torch.testing.assert_close(carried, wrapper.state, rtol=0, atol=1e-6)
        both = wrapper.state.clone()
        for b in range(2):
            reset_delta_mem(model)
            model(input_ids=ids[b: b + 1])
            torch.testing.assert_close(wrapper.state[0], both[b], rtol=0, atol=1e-6)
        with pytest.raises(ValueError, match="batch size"):
            model(input_ids=ids)
        wrapper.state = torch.full_like(wrapper.state, float("nan"))
        with pytest.raises(ValueError, match=r"model\.layers\.0\.self_attn"):
            model(input_ids=ids[:1])


def test_gate_init_and_state_size():
    model = tiny_causal_lm(seed=0)
    attach_delta_mem(model, DeltaMemConfig())
    mem = delta_mem_modules(model)[0].memory
    _, _, _, beta = mem.project(torch.randn(3, 5, 64))
    torch.testing.assert_close(beta, torch.full_like(beta, 1 / (1 + math.exp(1.5))))
    assert state_floats(model) == [64, 64]
    mem.project(torch.randn(1, 2, 64))
    cfg = delta_mem_modules(model)[0].memory.config
    out = {"q": 64, "k": 32, "v": 32, "o": 64}
    assert num_memory_parameters(64, out, cfg) == sum(p.numel() for p in mem.parameters())


def test_heads_flag_limits_the_corrections():
    model = tiny_causal_lm(seed=0)
    attach_delta_mem(model, DeltaMemConfig(heads=("o", "q")))
    assert sorted(delta_mem_modules(model)[0].memory.up) == ["o", "q"]
    assert delta_mem_modules(model)[0].memory.config.heads == ("q", "o")


def test_refusals():
    with pytest.raises(ValueError, match="rank"):
        DeltaMemConfig(rank=0)
    with pytest.raises(ValueError, match="heads"):
        DeltaMemConfig(heads=())
    with pytest.raises(ValueError, match="heads"):
        DeltaMemConfig(heads=("q", "x"))
    with pytest.raises(ValueError, match="no supported attention"):
        attach_delta_mem(nn.Sequential(nn.Linear(3, 3)), target=lambda n, m: True)
    model = tiny_causal_lm(seed=0)
    attach_delta_mem(model)
    with pytest.raises(ValueError, match="already"):
        attach_delta_mem(model)
    with pytest.raises(ValueError, match="hidden_states"):
        delta_mem_modules(model)[0](torch.zeros(2, 64))


# --- the episode runner and the readers -------------------------------------------------


@pytest.fixture(scope="module")
def setup():
    tok = WordTokenizer()
    model = tiny_causal_lm(seed=5, vocab_size=256, hidden_size=32, num_layers=3,
                           intermediate_size=64)  # fmt: skip
    runner = EpisodeRunner(model, tok.encode, start=2, window=32)
    runner.precompute(all_texts(num_names=4, num_values=4))
    dialogues = [d for f in FAMILIES for d in make_dialogues(
        3, f, num_episodes=3, num_names=4, num_values=4, rng=np.random.default_rng(0))]
    return tok, model, runner, dialogues


def test_runner_top_layers_equal_the_full_model(setup):
    tok, model, runner, _ = setup
    texts = ["Bob likes tea.", "It is cold today, said Alice.", "Question: what"]
    h, mask, last = runner.batch(texts)
    got = runner.logits_at(runner.run_top(h), last)
    for j, t in enumerate(texts):
        ids = torch.tensor([tok.encode(t)])
        want = model(input_ids=ids).logits[0, -1]
        torch.testing.assert_close(got[j], want, rtol=1e-5, atol=1e-5)
    assert torch.equal(mask.sum(1), torch.tensor([len(tok.encode(t)) for t in texts]).float())


def test_delta_reader_at_init_is_the_frozen_reader(setup):
    _, _, runner, dialogues = setup
    chunk = [d for d in dialogues if d.family == "recall"]
    frozen = FrozenReader(runner)(chunk)
    delta = DeltaMemReader(runner, DeltaMemConfig(rank=4))(chunk)
    assert torch.equal(frozen, delta)


def test_readers_train_and_evaluate(setup):
    tok, _, runner, dialogues = setup
    values = VALUES[:4]
    cand = dict(zip(values, candidate_ids(tok.encode, values), strict=True))
    dm = DeltaMemReader(runner, DeltaMemConfig(rank=4), bptt=2)
    batches = iter([dialogues[:3], dialogues[3:6], dialogues[6:9]] * 2)
    losses = fit_reader(dm, batches, max_iter=4, lr=1e-2, answer_ids=lambda d: cand[d.answer])
    assert len(losses) == 4 and all(np.isfinite(losses))
    ups = [u for w in delta_mem_modules(dm.top) for u in w.memory.up.values()]
    assert any(float(u.detach().abs().sum()) > 0 for u in ups)  # trained away from 0
    res = evaluate_episodes(dm, dialogues, values)
    for f in FAMILIES:
        assert len(res.per_dialogue[f]) == 3
    assert 0.0 <= res.average <= 1.0
    for reader in (FrozenReader(runner), RetrievalReader(runner), InContextReader(runner),
                   MemoryTokensReader(runner, 2, seed=1)):  # fmt: skip
        out = evaluate_episodes(reader, dialogues, values)
        assert 0.0 <= out.average <= 1.0
    rank = lora_rank_for(dm.num_trainable(), runner)
    lora = LoRAReader(runner, rank)
    # one top layer: rank * sum(in + out) over q, k, v, o
    assert lora.num_trainable() == rank * ((32 + 32) + (32 + 16) * 2 + (32 + 32))
    assert abs(lora.num_trainable() / dm.num_trainable() - 1) < 0.1


def test_retrieval_reader_and_in_context_oracle_see_the_fact(setup):
    d = Dialogue("recall", ("Bob likes tea.", "Alice went to the park.",
                            "Question: what does Bob like? Answer: Bob likes"), "tea")  # fmt: skip
    assert RetrievalReader.window_text(d).startswith("Bob likes tea. Question")
    assert lexical_retrieve(["Bob likes tea.", "Bob now likes milk."], d.query) == 1


def test_episode_longer_than_the_window_is_refused(setup):
    _, _, runner, _ = setup
    with pytest.raises(ValueError, match="window"):
        runner.tokens(" ".join(["Bob"] * 40))


def test_dialogue_families():
    rng = np.random.default_rng(4)
    for d in make_dialogues(20, "overwrite", num_episodes=5, rng=rng):
        assert d.answer != d.stale
        assert d.episodes[0].endswith(f"likes {d.stale}.")
        assert any(e.endswith(f"now likes {d.answer}.") for e in d.episodes[1:-1])
        assert d.query.endswith("likes")
    for d in make_dialogues(20, "multi", num_episodes=5, rng=rng):
        facts = [e for e in d.history if " likes " in e]
        assert 2 <= len(facts) <= 4
        person = d.query.split()[-2]
        assert f"{person} likes {d.answer}." in facts
    texts = set(all_texts())
    for f in FAMILIES:
        for d in make_dialogues(10, f, num_episodes=4, rng=rng):
            assert set(d.episodes) <= texts


def test_write_mask_keeps_padding_out_of_the_state():
    model = tiny_causal_lm(seed=0)
    attach_delta_mem(model, DeltaMemConfig(rank=4), layers=[0])
    (wrapper,) = delta_mem_modules(model)
    ids = torch.randint(0, 256, (1, 6), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        model(input_ids=ids[:, :4])
        short = wrapper.state.clone()
        reset_delta_mem(model)
        with write_mask(model, torch.tensor([[1, 1, 1, 1, 0, 0]])):
            model(input_ids=ids)
    torch.testing.assert_close(wrapper.state, short, rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_every_reader_follows_the_model_dtype(dtype):
    """A bf16 or float64 backbone: the memory, the residual bank and the memory tokens take
    its dtype (they were float32 whatever the model, which raised on the first forward)."""
    tok = WordTokenizer()
    model = tiny_causal_lm(seed=5, vocab_size=256, hidden_size=32, num_layers=3,
                           intermediate_size=64).to(dtype)  # fmt: skip
    runner = EpisodeRunner(model, tok.encode, start=2, window=32)
    dialogues = [d for f in FAMILIES for d in make_dialogues(
        2, f, num_episodes=3, num_names=4, num_values=4, rng=np.random.default_rng(0))]
    values = VALUES[:4]
    cand = dict(zip(values, candidate_ids(tok.encode, values), strict=True))
    dm = DeltaMemReader(runner, DeltaMemConfig(rank=4), bptt=2)
    assert all(p.dtype == dtype for p in dm.top.parameters())
    losses = fit_reader(dm, iter([dialogues[:2], dialogues[2:4]]), max_iter=2, lr=1e-2,
                        answer_ids=lambda d: cand[d.answer])
    assert all(np.isfinite(losses))
    for reader in (dm, FrozenReader(runner), RetrievalReader(runner),
                   MemoryTokensReader(runner, 2, seed=1)):  # fmt: skip
        assert 0.0 <= evaluate_episodes(reader, dialogues, values).average <= 1.0
