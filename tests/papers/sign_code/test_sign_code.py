"""sign_code: oracles (scikit-learn, scipy, identities), properties and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier

from neurips26.common.torch import make_generator
from neurips26.papers.sign_code import (
    ACTIVATIONS,
    SIGN_PRESERVING,
    SignCodeKNN,
    activation_sites,
    calibrate_magnitudes,
    flip_signs,
    hamming_distances,
    hamming_knn,
    is_sign_preserving,
    make_mlp,
    make_resnet,
    margin_decomposition,
    randomize_magnitudes,
    same_class_soft_overlap,
    sign_code,
    sign_overlap,
    train_classifier,
)


def _codes(n, d, seed):
    rng = np.random.default_rng(seed)
    return np.where(rng.random((n, d)) < 0.5, -1, 1).astype(np.int8)


def test_hamming_equals_scipy():
    a, b = _codes(7, 33, 0), _codes(5, 33, 1)
    ours = hamming_distances(a, b).numpy()
    assert np.array_equal(ours, np.rint(cdist(a, b, "hamming") * 33).astype(int))


@pytest.mark.parametrize("k", [1, 5, 15])
def test_knn_equals_sklearn_on_distinct_distances(k):
    # Codes built so that every query's distances to the training codes are distinct:
    # training code i differs from the all-ones code in its first i coordinates.
    n, d = 40, 64
    train = np.ones((n, d), dtype=np.int8)
    for i in range(n):
        train[i, :i] = -1
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, n)
    queries = np.ones((6, d), dtype=np.int8)
    for j in range(6):
        queries[j, : 5 * j] = -1  # distance to code i is |i - 5 j|: ties at +-, so shift
        queries[j, d - 1] = -1  # breaks the +-m ties: |i - 5j| + 1 vs ... distinct below
    dist = hamming_distances(queries, train).numpy()
    ok = [len(set(np.sort(row)[: k + 1])) == k + 1 for row in dist]
    sk = KNeighborsClassifier(k, metric="hamming", algorithm="brute").fit(train, y)
    ours = hamming_knn(train, y, queries, k=k)
    assert np.array_equal(ours[ok], sk.predict(queries)[ok]) and any(ok)


def test_knn_random_codes_agree_with_sklearn_where_unambiguous():
    train, q = _codes(200, 257, 4), _codes(50, 257, 5)
    y = np.random.default_rng(6).integers(0, 3, 200)
    dist = np.sort(hamming_distances(q, train).numpy(), axis=1)
    unique = dist[:, 0] < dist[:, 1]
    sk = KNeighborsClassifier(1, metric="hamming", algorithm="brute").fit(train, y).predict(q)
    assert np.array_equal(hamming_knn(train, y, q, k=1)[unique], sk[unique])
    # Blocked evaluation gives the same answer as one block.
    assert np.array_equal(hamming_knn(train, y, q, k=5, batch_size=7),
                          hamming_knn(train, y, q, k=5))  # fmt: skip


def test_sign_preservation_on_a_grid():
    z = torch.linspace(-3, 3, 601)
    z = z[z != 0]
    for name, make in ACTIVATIONS.items():
        keeps = bool((torch.sign(make()(z)) == torch.sign(z)).all())
        assert keeps == (name in SIGN_PRESERVING), name
        assert is_sign_preserving(make()) == keeps


def test_sign_code_shape_and_values():
    net = make_mlp(dim_in=10, width=16, num_classes=3, depth=3)
    x = torch.randn(9, 10, generator=make_generator(0))
    c = sign_code(net, x)
    assert c.shape == (9, 48) and set(c.unique().tolist()) <= {-1, 1}
    z1 = net.hidden[0](x)
    assert torch.equal(c[:, :16], torch.where(z1 >= 0, 1, -1).to(torch.int8))
    assert sign_code(net, x, layers="last").shape == (9, 16)
    assert torch.equal(sign_code(net, x, batch_size=2), c)
    res = make_resnet(in_channels=1, num_classes=3, channels=(2, 4, 4), blocks=1)
    cr = sign_code(res, torch.randn(2, 1, 8, 8, generator=make_generator(1)))
    assert cr.shape[0] == 2 and cr.shape[1] > 100


def test_identities_and_flip_fraction():
    net = make_mlp(dim_in=6, width=64, num_classes=4, activation="tanh")
    x = torch.randn(200, 6, generator=make_generator(2))
    with torch.no_grad():
        base = net(x)
        with flip_signs(net, fraction=0.0):
            assert torch.equal(net(x), base)
        with randomize_magnitudes(net, mode="true"):
            assert torch.allclose(net(x), base, atol=1e-6)
        with flip_signs(net, fraction=0.3, seed=4) as rec:
            net(x)
    f = 0.3
    for flipped, seen in zip(rec.flipped, rec.seen, strict=True):
        assert abs(flipped - f * seen) <= 3 * np.sqrt(seen * f * (1 - f))
    with torch.no_grad():
        assert torch.equal(net(x), base)  # hooks removed


def test_gaussian_magnitudes_keep_signs_and_scale():
    net = make_mlp(dim_in=6, width=32, num_classes=4)
    x = torch.randn(300, 6, generator=make_generator(3))
    rms = calibrate_magnitudes(net, x)
    seen = []
    handle = net.acts[1].register_forward_hook(lambda m, i, o: seen.append((i[0], o)))
    with torch.no_grad(), randomize_magnitudes(net, rms, seed=1):
        net(x)
    handle.remove()
    # The hook above runs before ours, so read the replaced output from the next layer's input.
    z, _ = seen[0]
    replaced = []
    h2 = net.hidden[2].register_forward_pre_hook(lambda m, i: replaced.append(i[0]))
    with torch.no_grad(), randomize_magnitudes(net, rms, seed=1):
        net(x)
    h2.remove()
    out = replaced[0]
    assert bool((torch.where(z >= 0, 1.0, -1.0) == torch.sign(out)).all())
    expected = rms[1] * np.sqrt(2 / np.pi)  # E|N(0, s^2)| = s sqrt(2/pi)
    assert abs(float(out.abs().mean()) - expected) < 0.05 * expected


def test_relu_refused_for_randomisation():
    net = make_mlp(dim_in=4, width=8, num_classes=2, activation="relu")
    with pytest.raises(ValueError, match="sign-preserving"):
        with randomize_magnitudes(net, mode="true"):
            pass
    with randomize_magnitudes(net, mode="true", allow_non_sign_preserving=True):
        pass


def test_overlap_exact_against_pairwise():
    c = _codes(30, 20, 7)
    y = np.random.default_rng(8).integers(0, 3, 30)
    agree = 1 - cdist(c, c, "hamming")
    same = (y[:, None] == y[None, :]) & ~np.eye(30, dtype=bool)
    diff = y[:, None] != y[None, :]
    stats = sign_overlap(c, y)
    assert np.isclose(stats.same, agree[same].mean()) and np.isclose(stats.different,
                                                                     agree[diff].mean())
    assert np.isclose(stats.gap, stats.same - stats.different)


def test_margin_parts_sum_and_runner_up():
    net = make_mlp(dim_in=5, width=12, num_classes=4)
    x = torch.randn(20, 5, generator=make_generator(9))
    y = np.arange(20) % 4
    p = margin_decomposition(net, x, y)
    assert np.allclose(p.sign_part + p.residual, p.total, atol=1e-10)
    with torch.no_grad():
        logits = net(x).double() - net.head.bias.double()
    margin = logits[np.arange(20), y] - logits[np.arange(20), p.runner_up]
    assert np.allclose(margin.numpy(), p.total, atol=1e-6)
    assert (p.runner_up != y).all()


def test_regulariser_lowers_same_class_overlap_and_training_learns():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    z = torch.randn(6, 10, generator=make_generator(0))
    val = same_class_soft_overlap(torch.cat([z[:3], z[:3]]), torch.tensor([0, 1, 2, 0, 1, 2]))
    assert torch.isclose(val, torch.tensor(1.0), atol=1e-5)  # identical pairs: cosine 1
    net = make_mlp(dim_in=8, width=32, num_classes=2)
    res = train_classifier(net, x, y, max_iter=80, lr=5e-3)
    assert res.final_loss < res.losses[0]
    res2 = train_classifier(make_mlp(dim_in=8, width=32, num_classes=2), x, y, max_iter=80,
                            lr=5e-3)  # fmt: skip
    assert res.losses == res2.losses
    train_classifier(make_mlp(dim_in=8, width=32, num_classes=2), x, y, max_iter=5,
                     overlap_penalty=1.0)  # fmt: skip


def test_estimator_and_clone():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(int)
    net = make_mlp(dim_in=4, width=16, num_classes=2)
    est = SignCodeKNN(net, k=3).fit(x, y)
    assert est.predict(x).shape == (60,) and set(est.classes_) == {0, 1}
    assert clone(est).get_params()["k"] == 3
    assert "SignCodeKNN" in repr(est)


def test_bad_input():
    net = make_mlp(dim_in=4, width=8, num_classes=2)
    c = _codes(5, 8, 0)
    with pytest.raises(ValueError, match="x"):
        sign_code(net, torch.full((2, 4), float("nan")))
    with pytest.raises(ValueError, match="x"):
        sign_code(net, torch.zeros(0, 4))
    with pytest.raises(TypeError, match="x"):
        sign_code(net, "abc")
    with pytest.raises(ValueError, match="layers"):
        sign_code(net, torch.zeros(2, 4), layers=[9])
    with pytest.raises(ValueError, match="model"):
        activation_sites(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="k"):
        hamming_knn(c, np.zeros(5, int), c, k=6)
    with pytest.raises(ValueError, match="k"):
        hamming_knn(c, np.zeros(5, int), c, k=0)
    with pytest.raises(ValueError, match="query_codes"):
        hamming_knn(c, np.zeros(5, int), _codes(2, 9, 1))
    with pytest.raises(ValueError, match="train_y"):
        hamming_knn(c, np.zeros(4, int), c)
    with pytest.raises(ValueError, match="codes"):
        sign_overlap(np.zeros((3, 4)), np.array([0, 0, 1]))
    with pytest.raises(ValueError, match="fraction"):
        with flip_signs(net, fraction=1.5):
            pass
    with pytest.raises(ValueError, match="mode"):
        with randomize_magnitudes(net, mode="uniform"):
            pass
    with pytest.raises(ValueError, match="rms"):
        with randomize_magnitudes(net):
            pass
    with pytest.raises(ValueError, match="y"):
        margin_decomposition(net, torch.zeros(3, 4), np.array([0, 1, 5]))
    with pytest.raises(ValueError, match="overlap_penalty"):
        train_classifier(net, np.zeros((4, 4)), np.zeros(4, int), max_iter=1,
                         overlap_penalty=-1.0)  # fmt: skip
    with pytest.raises(ValueError, match="x"):
        train_classifier(net, np.full((4, 4), np.nan), np.zeros(4, int), max_iter=1)
    with pytest.raises(ValueError, match="activation"):
        make_mlp(dim_in=4, width=8, num_classes=2, activation="swish")
    with pytest.raises(ValueError, match="width"):
        make_mlp(dim_in=4, width=0, num_classes=2)


@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_gelu_and_silu_sites_are_read_and_randomised(activation):
    """GELU and SiLU keep the sign of every pre-activation: their sites carry a sign code
    and accept magnitude randomisation (the true magnitudes give the logits back)."""
    net = make_mlp(dim_in=6, width=32, num_classes=4, activation=activation)
    x = torch.randn(50, 6, generator=make_generator(3))
    assert sign_code(net, x).shape == (50, 96)
    with torch.no_grad():
        base = net(x)
        with randomize_magnitudes(net, mode="true"):
            assert torch.allclose(net(x), base, atol=1e-6)


def test_default_random_network_and_labels():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(90, 3))
    y = np.array(["neg", "pos"])[(x[:, 0] > 0).astype(int)]
    est = SignCodeKNN(k=3).fit(x, y)
    # the random network: width 256, depth 2 (512 sites), read on standardised features
    assert est.codes_.shape == (90, 512) and est.n_features_in_ == 3
    assert est.classes_.tolist() == ["neg", "pos"]
    assert (est.predict(x) == y).mean() > 0.8
    again = SignCodeKNN(k=3).fit(x, y)
    assert torch.equal(again.codes_, est.codes_)  # the network is a function of random_state
    other = SignCodeKNN(k=3, random_state=1).fit(x, y)
    assert not torch.equal(other.codes_, est.codes_)
    with pytest.raises(ValueError, match="n_samples=2"):
        SignCodeKNN(k=3).fit(x[:2], y[:2])
    with pytest.raises(ValueError, match="model=None"):
        SignCodeKNN().fit(np.zeros((6, 1, 2, 2)), np.arange(6) % 2)
    with pytest.raises(TypeError, match="model"):
        SignCodeKNN("net").fit(x, y)
    with pytest.raises(ValueError, match="X has 2 features"):
        est.predict(x[:, :2])


def test_model_on_images_keeps_the_input_shape():
    net = make_resnet(in_channels=1, num_classes=2, channels=(4,), blocks=1)
    x = torch.randn(12, 1, 6, 6)
    est = SignCodeKNN(net, k=3).fit(x, np.arange(12) % 2)
    assert est.predict(x).shape == (12,) and not hasattr(est, "n_features_in_")
    with pytest.raises(ValueError, match="differ from the training inputs"):
        est.predict(torch.randn(3, 1, 5, 5))


def test_randomize_magnitudes_only_touches_the_named_sites():
    from neurips26.papers.sign_code import activation_sites, calibrate_magnitudes

    net = make_mlp(dim_in=4, width=8, num_classes=3, depth=3)
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    rms = calibrate_magnitudes(net, x)
    sites = [m for _, m in activation_sites(net)]
    last = sites[-1]
    seen = []
    handle = last.register_forward_hook(lambda m, i, o: seen.append(i[0].detach()))
    try:
        with torch.no_grad():
            clean = net(x)
            with randomize_magnitudes(net, rms, only=()):
                assert torch.equal(net(x), clean)  # no site named: the clean network
            with randomize_magnitudes(net, rms, only=(len(sites) - 1,)):
                noisy_last = net(x)
            with randomize_magnitudes(net, rms, only=(0,)):
                net(x)
    finally:
        handle.remove()
    assert not torch.equal(noisy_last, clean)
    # noise at the last site leaves its input (the earlier sites) clean; noise at site 0
    # reaches it
    assert torch.equal(seen[0], seen[1]) and torch.equal(seen[0], seen[2])
    assert not torch.equal(seen[0], seen[3])
    with pytest.raises(ValueError, match="only"):
        with randomize_magnitudes(net, rms, only=(len(sites),)):
            pass
    with pytest.raises(TypeError, match="only"):
        with randomize_magnitudes(net, rms, only=("0",)):
            pass


def _branch(blk, x):
    return blk.conv2(blk.act2(blk.bn2(blk.conv1(blk.act1(blk.bn1(x))))))


@pytest.mark.parametrize(("c_out", "stride"), [(2, 1), (4, 2)])
def test_a_block_without_skip_is_its_branch_alone(c_out, stride):
    from neurips26.common.torch import seeded
    from neurips26.papers.sign_code.networks import PreActBlock

    x = torch.randn(3, 2, 6, 6, generator=torch.Generator().manual_seed(0))
    with seeded(0):
        plain = PreActBlock(2, c_out, stride, "leaky_relu", skip=False).eval()
    with seeded(0):
        res = PreActBlock(2, c_out, stride, "leaky_relu").eval()
    with torch.no_grad():
        assert plain.shortcut is None  # no 1x1 shortcut either
        assert torch.equal(plain(x), _branch(plain, x))
        path = x if res.shortcut is None else res.shortcut(res.act1(res.bn1(x)))
        assert (res.shortcut is None) == (stride == 1)
        assert torch.equal(res(x), _branch(res, x) + path)


def test_resnet_without_skip_is_a_plain_stack_of_the_same_sites():
    kw = {"in_channels": 1, "num_classes": 3, "channels": (2, 4, 4), "blocks": 2, "seed": 0}
    plain, res = make_resnet(**kw, skip=False).eval(), make_resnet(**kw).eval()
    assert [n for n, _ in activation_sites(plain)] == [n for n, _ in activation_sites(res)]
    assert not any("shortcut" in n for n in plain.state_dict())
    assert not plain.skip and res.skip and all(not b.skip for b in plain.blocks)
    x = torch.randn(5, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = plain.stem(x)
        for blk in plain.blocks:
            out = _branch(blk, out)
        by_hand = plain.head(plain.act(plain.bn(out)).mean(dim=(2, 3)))
        assert torch.equal(plain(x), by_hand)
        assert not torch.allclose(plain(x), res(x))


def test_resnet_default_is_unchanged_by_the_skip_option():
    kw = {"in_channels": 1, "num_classes": 3, "channels": (2, 4, 4), "blocks": 1, "seed": 0}
    net, explicit = make_resnet(**kw).eval(), make_resnet(**kw, skip=True).eval()
    a, b = net.state_dict(), explicit.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    # the parameter layout and the outputs of the network before the option existed
    assert len(a) == 46 and sum(p.numel() for p in net.parameters()) == 677
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = net(x)
    assert torch.equal(out, explicit(x))
    ref = torch.tensor([[0.3299033045768738, 0.11300767958164215, 0.15966294705867767],
                        [0.325531929731369, 0.1140294000506401, 0.1564895212650299]])
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("skip", [1, 0, "no", None])
def test_resnet_skip_must_be_a_bool(skip):
    with pytest.raises(TypeError, match="skip"):
        make_resnet(in_channels=1, num_classes=2, channels=(2,), blocks=1, skip=skip)


def test_resnet_without_norm_has_no_batchnorm_and_the_default_is_unchanged():
    kw = {"in_channels": 1, "num_classes": 3, "channels": (2, 4, 4), "blocks": 1, "seed": 0}
    plain, net = make_resnet(**kw, norm=False).eval(), make_resnet(**kw).eval()
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in plain.modules())
    assert [n for n, _ in activation_sites(plain)] == [n for n, _ in activation_sites(net)]
    # the same convolution weights (BatchNorm draws no random numbers), so with BatchNorm
    # at its initial identity in eval mode the two networks compute the same function
    a = {k: v for k, v in net.state_dict().items() if "bn" not in k}
    b = plain.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(plain(x), net(x), rtol=1e-4, atol=1e-4)


def test_mlp_with_norm_standardises_every_pre_activation():
    from neurips26.papers.sign_code import make_mlp

    plain = make_mlp(dim_in=5, width=7, num_classes=3, depth=2, seed=0)
    normed = make_mlp(dim_in=5, width=7, num_classes=3, depth=2, seed=0, norm=True)
    assert plain.norms is None and len(normed.norms) == 2
    for lin_a, lin_b in zip(plain.hidden, normed.hidden, strict=True):
        assert torch.equal(lin_a.weight, lin_b.weight)  # same draws as the default
    x = torch.randn(64, 5, generator=torch.Generator().manual_seed(1))
    seen = []
    handle = normed.acts[1].register_forward_hook(lambda m, i, o: seen.append(i[0]))
    normed.train()
    normed(x)
    handle.remove()
    z = seen[0]  # the second activation's input: a batch-standardised pre-activation
    torch.testing.assert_close(z.mean(0), torch.zeros(7), atol=1e-5, rtol=0)
    torch.testing.assert_close(z.var(0, unbiased=False), torch.ones(7), atol=1e-3, rtol=0)


@pytest.mark.parametrize("norm", [1, "yes", None])
def test_norm_must_be_a_bool(norm):
    from neurips26.papers.sign_code import make_mlp

    with pytest.raises(TypeError, match="norm"):
        make_resnet(in_channels=1, num_classes=2, channels=(2,), blocks=1, norm=norm)
    with pytest.raises(TypeError, match="norm"):
        make_mlp(dim_in=2, width=2, num_classes=2, norm=norm)
