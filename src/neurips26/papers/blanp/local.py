"""Layer-local training: a block, its local head and the head's frozen EMA critic.

A :class:`LocalLayer` wraps one block of a user's network: a parametric map
``a_l = f_l(h_{l-1})`` (a ``Linear``, a ``Conv2d``, a small stack), a parameter-free
post-map ``h_l = phi(a_l)`` (activation, pooling), a local classifier ``C_l`` on ``h_l``
and ``Cbar_l``, an exponential moving average of ``C_l`` that receives no gradient. Its
:meth:`LocalLayer.local_step` computes the layer's update from its detached input and the
labels only; nothing it does reaches another layer. :class:`BLANPNet` chains layers and
trains them one after another, freeing each layer's graph before the next is built.

Modes of :meth:`LocalLayer.local_step` (the update of the block ``f_l``; the head ``C_l``
always gets its own exact gradient on ``detach(h_l)``):

``"blanp"``        antithetic node perturbation of ``a_l`` scored by the EMA critic.
``"blanp_no_ema"`` the same, scored by the current head (ablation).
``"forward"``      forward-difference node perturbation scored by the EMA critic (ablation).
``"exact"``        BLANP-Exact: the exact gradient of ``CE(Cbar_l(phi(a_l)), y)`` in ``f_l``.
``"dgl"``          greedy local learning (DGL-style): the exact gradient of
                   ``CE(C_l(phi(a_l)), y)`` in ``f_l`` and ``C_l`` together, no critic.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurips26.common.validation import check_float, check_int

from .estimators import MAX_PROBES, as_tensor, probe_estimate

MODES = ("blanp", "blanp_no_ema", "forward", "exact", "dgl")
PERTURBATION_MODES = ("blanp", "blanp_no_ema", "forward")


def check_mode(mode) -> str:
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got unknown mode {mode!r}")
    return mode


def check_labels(y, num_classes: int, batch: int | None = None, name: str = "y") -> Tensor:
    """Integer labels in ``[0, num_classes)`` as an int64 tensor (of length ``batch``)."""
    t = as_tensor(y, name, dtype=torch.int64)
    if t.is_floating_point():
        if not bool((t == t.round()).all()):
            raise ValueError(f"{name} must hold integer class labels")
        t = t.long()
    t = t.long()
    if t.ndim != 1:
        raise ValueError(f"{name} must have shape (B,), got {tuple(t.shape)}")
    if batch is not None and t.shape[0] != batch:
        raise ValueError(f"{name} must have {batch} labels (one per input), got {t.shape[0]}")
    if int(t.min()) < 0 or int(t.max()) >= num_classes:
        raise ValueError(
            f"{name} must lie in [0, {num_classes}), got values in [{int(t.min())}, {int(t.max())}]"
        )
    return t


def _dtype(m: nn.Module) -> torch.dtype:
    p = next(m.parameters(), None)
    return p.dtype if p is not None else torch.float32


def run_module(m: nn.Module, x: Tensor, name: str) -> Tensor:
    """``m(x)``, with a shape or dtype mismatch reported as a ValueError naming ``name``."""
    try:
        return m(x)
    except (RuntimeError, IndexError) as exc:
        msg = str(exc).splitlines()[0]
        shape = tuple(x.shape)
        raise ValueError(f"{name}: shape {shape} does not fit the module ({msg})") from None


class GlobalPoolHead(nn.Module):
    """A local classifier for feature maps: global average pool then linear (inferred).

    Parameters
    ----------
    channels : int
        ``C`` of the ``(B, C, H, W)`` input.
    num_classes : int
    """

    def __init__(self, channels: int, num_classes: int) -> None:
        super().__init__()
        self.linear = nn.Linear(check_int(channels, "channels", min=1),
                                check_int(num_classes, "num_classes", min=1))  # fmt: skip

    def forward(self, h: Tensor) -> Tensor:
        return self.linear(h.mean(dim=tuple(range(2, h.ndim))))  # (B, C) -> (B, K)


def make_head(h: Tensor, num_classes: int) -> nn.Module:
    """A linear head for ``(B, D)`` features, a :class:`GlobalPoolHead` for ``(B, C, ...)``."""
    if h.ndim == 2:
        return nn.Linear(h.shape[1], num_classes)
    if h.ndim >= 3:
        return GlobalPoolHead(h.shape[1], num_classes)
    raise ValueError(f"h must have shape (B, D) or (B, C, ...), got {tuple(h.shape)}")


@dataclass(frozen=True)
class LayerStats:
    """One layer's local step.

    Attributes
    ----------
    loss : float
        ``CE(C_l(h_l), y)``: the local head's loss on the batch (before the update).
    accuracy : float
        The local head's accuracy on the batch.
    critic_loss : float
        The loss that drove the block's update (``CE(Cbar_l(h_l), y)`` for the modes with
        a critic, the head's for ``"blanp_no_ema"`` and ``"dgl"``).
    """

    loss: float
    accuracy: float
    critic_loss: float


def _params_free(m: nn.Module) -> bool:
    return next(m.parameters(), None) is None and next(m.buffers(), None) is None


def split_block(module: nn.Module) -> tuple[nn.Module, nn.Module]:
    """``(f, phi)``: a ``Sequential``'s trailing parameter-free modules become ``phi``.

    ``Sequential(Linear, ReLU)`` gives ``(Sequential(Linear), Sequential(ReLU))``; a module
    that is not a ``Sequential``, or ends in a parametric module, gives ``(module, Identity)``.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    if not isinstance(module, nn.Sequential):
        return module, nn.Identity()
    mods = list(module)
    k = len(mods)
    while k > 0 and _params_free(mods[k - 1]):
        k -= 1
    if k == 0:
        raise ValueError("module has no parameters: a local layer needs a trainable block")
    tail = mods[k:]
    return nn.Sequential(*mods[:k]), (nn.Sequential(*tail) if tail else nn.Identity())


class LocalLayer(nn.Module):
    """One layer trained from local signals: block ``f_l``, post-map ``phi``, head, EMA critic.

    Parameters
    ----------
    block : nn.Module
        The parametric map ``a_l = f_l(h_{l-1})``; its output is what node perturbation
        perturbs (the pre-activation).
    head : nn.Module
        The local classifier ``C_l``: ``h_l -> logits (B, K)``.
    activation : nn.Module, optional
        The parameter-free post-map ``phi`` (default identity).
    sigma : float
        Relative perturbation size: the probe's scale is ``sigma * std(a_l)`` over the
        batch (paper default ``1e-2``).
    ema_decay : float
        ``tau`` in ``Cbar_l <- tau Cbar_l + (1 - tau) C_l`` (in ``[0, 1)``; default 0.99).
    num_probes : int
        ``K`` antithetic pairs per step.
    index : int
        The layer's position (named in error messages).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> layer = LocalLayer(nn.Linear(4, 8), nn.Linear(8, 3), activation=nn.ReLU())
    >>> h, stats = layer.local_step(torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1]),
    ...                             mode="exact")
    >>> tuple(h.shape), h.requires_grad, layer.block.weight.grad is not None
    ((5, 8), False, True)
    """

    def __init__(self, block: nn.Module, head: nn.Module, *, activation: nn.Module | None = None,
                 sigma: float = 1e-2, ema_decay: float = 0.99, num_probes: int = 1,
                 index: int = 0) -> None:  # fmt: skip
        super().__init__()
        for name, m in (("block", block), ("head", head)):
            if not isinstance(m, nn.Module):
                raise TypeError(f"{name} must be a torch.nn.Module, got {type(m).__name__}")
        if activation is not None and not isinstance(activation, nn.Module):
            kind = type(activation).__name__
            raise TypeError(f"activation must be a torch.nn.Module, got {kind}")
        if _params_free(block):
            raise ValueError("block has no parameters: a local layer needs a trainable block")
        self.block = block
        self.activation = activation if activation is not None else nn.Identity()
        self.head = head
        self.critic = copy.deepcopy(head)
        for p in self.critic.parameters():
            p.requires_grad_(False)
        self.sigma = check_float(sigma, "sigma", min=0, min_inclusive=False)
        self.ema_decay = check_float(ema_decay, "ema_decay", min=0, max=1, max_inclusive=False)
        self.num_probes = check_int(num_probes, "num_probes", min=1, max=MAX_PROBES)
        self.index = check_int(index, "index", min=0)

    def forward(self, h_in: Tensor) -> Tensor:
        """``h_l = phi(f_l(h_{l-1}))``."""
        return self.activation(self.block(h_in))

    @torch.no_grad()
    def update_critic(self) -> None:
        """Eq. (4): ``Cbar_l <- tau Cbar_l + (1 - tau) C_l``, parameter by parameter."""
        tau = self.ema_decay
        critic = list(self.critic.parameters())
        head = [p.detach() for p in self.head.parameters()]
        if len(critic) != len(head):
            raise ValueError("critic and head must have the same parameters")
        if critic:  # one fused call per operation instead of a Python loop over parameters
            torch._foreach_mul_(critic, tau)
            torch._foreach_add_(critic, head, alpha=1.0 - tau)
        for bc, bh in zip(self.critic.buffers(), self.head.buffers(), strict=True):
            bc.copy_(bh)

    def _check_finite(self, value: Tensor, what: str, step: int | None) -> float:
        v = float(value.detach())
        if not math.isfinite(v):
            at = f" at step {step}" if step is not None else ""
            raise ValueError(f"layer {self.index}: non-finite {what} {v}{at}; lower lr or sigma?")
        return v

    def local_step(self, h_in: Tensor, y: Tensor, *, mode: str = "blanp",
                   generator: torch.Generator | None = None, step: int | None = None
                   ) -> tuple[Tensor, LayerStats]:  # fmt: skip
        """Accumulate this layer's local gradients in ``.grad``; return ``detach(h_l)``.

        Parameters
        ----------
        h_in : Tensor, shape (B, ...)
            The layer's input ``h_{l-1}`` (detached here: no gradient leaves the layer).
        y : Tensor, shape (B,)
            Integer labels.
        mode : {"blanp", "blanp_no_ema", "forward", "exact", "dgl"}
            How the block's update is computed (module docstring).
        generator : torch.Generator, optional
            Source of the probes of the perturbation modes.
        step : int, optional
            The training step, named in the error a non-finite loss raises.

        Returns
        -------
        h_out : Tensor, shape (B, ...)
            ``detach(h_l)``, the next layer's input.
        stats : LayerStats

        Raises
        ------
        ValueError
            For an unknown mode, labels out of range or of the wrong length, a non-finite
            input, or a non-finite local loss (the layer index and step are named).
        """
        mode = check_mode(mode)
        h_in = as_tensor(h_in, "h_in", cast=_dtype(self.block))
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        h, stats, _ = self._local_step(h_in, y, mode, generator, step, labels_checked=False)
        return h, stats

    def _local_step(self, h_in: Tensor, y: Tensor, mode: str, generator, step,
                    labels_checked: bool) -> tuple[Tensor, LayerStats, Tensor]:  # fmt: skip
        """:meth:`local_step` on an input already checked (finite, of the block's dtype);
        also returns the labels as checked (int64).

        The training loop checks the batch once per step and the labels at its first
        layer, then calls this for every layer without checking them again; a non-finite
        value arising inside the network still raises, as a non-finite local or critic
        loss naming the layer and the step.
        """
        h_in = h_in.detach()
        a = run_module(self.block, h_in, "h_in")  # (B, ...) pre-activation, this layer only
        if mode in ("exact", "dgl"):
            h = self.activation(a)
            if mode == "exact":
                # BLANP-Exact: the frozen critic scores h_l; its parameters get no gradient.
                critic_out = self.critic(h)
                if not labels_checked:
                    y = check_labels(y, critic_out.shape[1], h_in.shape[0])
                critic_loss = F.cross_entropy(critic_out, y)
                self._check_finite(critic_loss, "critic loss", step)
                critic_loss.backward()  # grads reach f_l only (h_in detached, critic frozen)
                del critic_out
                logits = self.head(h.detach())  # the head learns on detach(h_l)
                head_loss = F.cross_entropy(logits, y)
            else:
                # DGL: one local loss through the current head trains f_l and C_l.
                logits = self.head(h)
                if not labels_checked:
                    y = check_labels(y, logits.shape[1], h_in.shape[0])
                head_loss = F.cross_entropy(logits, y)
                critic_loss = head_loss
            loss = self._check_finite(head_loss, "local loss", step)
            head_loss.backward()
            acc = float((logits.detach().argmax(1) == y).float().mean())
            return h.detach(), LayerStats(loss, acc, float(critic_loss.detach())), y

        scorer = self.head if mode == "blanp_no_ema" else self.critic
        a_det = a.detach()
        with torch.no_grad():
            h_det = self.activation(a_det)
            logits = self.head(h_det)
            if not labels_checked:
                y = check_labels(y, logits.shape[1], h_in.shape[0])
            scale = self.sigma * float(a_det.std()) if a_det.numel() > 1 else self.sigma
            scale = scale if scale > 0 else self.sigma
            # Eq. (3): ghat_a = mean_k (L(a + s u_k) - L(a - s u_k)) / (2 s) u_k; the
            # unperturbed point and every probe are scored in one batched pass of the scorer.
            g_a, crit, finite = probe_estimate(
                lambda z, yy: F.cross_entropy(scorer(self.activation(z)), yy, reduction="none"),
                a_det, y, sigma=scale, num_probes=self.num_probes, generator=generator,
                central=mode != "forward")  # fmt: skip
            self._check_finite(crit, "critic loss", step)
            if not finite:
                at = f" at step {step}" if step is not None else ""
                raise ValueError(f"layer {self.index}: non-finite perturbation estimate{at}")
        # Eq. (5): dW_l = mean_b ghat_a h_{l-1}' -- the chain rule through f_l alone. Run
        # before the head's graph exists, so the block's and the head's saved tensors are
        # never held together (the step's peak is the larger of the two, not their sum).
        a.backward(g_a / a.shape[0])
        head_loss = F.cross_entropy(self.head(h_det), y)  # the head learns on detach(h_l)
        loss = self._check_finite(head_loss, "local loss", step)
        head_loss.backward()
        acc = float((logits.argmax(1) == y).float().mean())
        return h_det, LayerStats(loss, acc, float(crit)), y


@dataclass(frozen=True)
class StepResult:
    """One training step of a :class:`BLANPNet`.

    Attributes
    ----------
    losses : tuple of float, length L
        Each layer's local head loss.
    accuracies : tuple of float, length L
        Each layer's local head accuracy on the batch.
    critic_losses : tuple of float, length L
    """

    losses: tuple[float, ...]
    accuracies: tuple[float, ...]
    critic_losses: tuple[float, ...]

    @property
    def loss(self) -> float:
        """The last layer's local loss."""
        return self.losses[-1]


class BLANPNet(nn.Module):
    """A stack of :class:`LocalLayer` trained layer by layer, no gradient between layers.

    Parameters
    ----------
    layers : sequence of LocalLayer
        In order; layer ``l`` reads ``detach(h_{l-1})``.
    ensemble : bool
        Predict with the mean of every head's softmax instead of the last head's logits.

    Examples
    --------
    >>> net = BLANPNet.from_blocks([nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU()),
    ...                             nn.Sequential(nn.Linear(16, 16), nn.ReLU())],
    ...                            num_classes=10, example=torch.zeros(2, 1, 8, 8))
    >>> opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    >>> res = net.train_step(torch.rand(8, 1, 8, 8), torch.arange(8), optimizer=opt)
    >>> len(res.losses), tuple(net(torch.zeros(3, 1, 8, 8)).shape)
    (2, (3, 10))
    """

    def __init__(self, layers: Sequence[LocalLayer], *, ensemble: bool = False) -> None:
        super().__init__()
        layers = list(layers) if not isinstance(layers, nn.Module) else list(layers.children())
        if not layers:
            raise ValueError("layers must hold at least one LocalLayer, got none")
        for i, layer in enumerate(layers):
            if not isinstance(layer, LocalLayer):
                raise TypeError(f"layers[{i}] must be a LocalLayer, got {type(layer).__name__}")
            layer.index = i
        if not isinstance(ensemble, bool):
            raise TypeError(f"ensemble must be a bool, got {type(ensemble).__name__}")
        self.layers = nn.ModuleList(layers)
        self.ensemble = ensemble
        self._step = 0

    @classmethod
    def from_blocks(cls, blocks: Sequence[nn.Module], *, num_classes: int, example: Tensor,
                    heads: Sequence[nn.Module] | None = None, sigma: float = 1e-2,
                    ema_decay: float = 0.99, num_probes: int = 1,
                    ensemble: bool = False) -> BLANPNet:  # fmt: skip
        """Wrap a user's blocks; trailing parameter-free modules become ``phi``.

        Parameters
        ----------
        blocks : sequence of nn.Module
            The network's blocks in order (e.g. ``Sequential(Conv2d, ReLU, MaxPool2d)``).
        num_classes : int
        example : Tensor, shape (B, ...)
            An input batch, run once to size the heads.
        heads : sequence of nn.Module, optional
            One local classifier per block (default: linear, or global pool + linear for
            feature maps).
        sigma, ema_decay, num_probes : see :class:`LocalLayer`.
        """
        num_classes = check_int(num_classes, "num_classes", min=1, max=1 << 16)
        blocks = list(blocks) if blocks is not None else []
        if not blocks:
            raise ValueError("blocks must hold at least one module, got none")
        if heads is not None and len(heads) != len(blocks):
            raise ValueError(f"heads: expected {len(blocks)} heads, got {len(heads)}")
        h = as_tensor(example, "example", cast=_dtype(blocks[0]))
        layers = []
        for i, blk in enumerate(blocks):
            f, phi = split_block(blk)
            with torch.no_grad():
                h = run_module(phi, run_module(f, h, "example"), "example")
            head = heads[i] if heads is not None else make_head(h, num_classes)
            layers.append(LocalLayer(f, head, activation=phi, sigma=sigma, ema_decay=ema_decay,
                                     num_probes=num_probes, index=i))  # fmt: skip
        return cls(layers, ensemble=ensemble)

    def forward(self, x: Tensor) -> Tensor:
        """Logits ``(B, K)`` of the last head (or log of the heads' mean softmax)."""
        h = x
        probs = []
        for layer in self.layers:
            h = layer(h)
            if self.ensemble:
                probs.append(F.softmax(layer.head(h), dim=1))
        if self.ensemble:
            return torch.stack(probs).mean(0).clamp_min(1e-12).log()
        return self.layers[-1].head(h)

    def train_step(self, x: Tensor, y: Tensor, *, optimizer: torch.optim.Optimizer,
                   mode: str = "blanp", generator: torch.Generator | None = None
                   ) -> StepResult:  # fmt: skip
        """One step: every layer's local update in turn, then ``optimizer.step()`` and the
        EMA critics' update. At most one layer's graph is alive at any time.

        Parameters
        ----------
        x : Tensor, shape (B, ...)
        y : Tensor, shape (B,)
            Integer labels in ``[0, num_classes)``.
        optimizer : torch.optim.Optimizer
            Over this network's parameters (the critics have none that train).
        mode : str
            One of :data:`MODES`.
        generator : torch.Generator, optional
            Source of the perturbation probes.
        """
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"optimizer must be a torch.optim.Optimizer, "
                            f"got {type(optimizer).__name__}")  # fmt: skip
        check_mode(mode)
        h = as_tensor(x, "x", cast=_dtype(self))
        if h.ndim < 2:
            raise ValueError(f"x must have shape (B, ...), got {tuple(h.shape)}")
        optimizer.zero_grad(set_to_none=True)
        losses, accs, crits = [], [], []
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        for i, layer in enumerate(self.layers):
            h, stats, y = layer._local_step(h, y, mode, generator, self._step,
                                            labels_checked=i > 0)  # fmt: skip
            losses.append(stats.loss)
            accs.append(stats.accuracy)
            crits.append(stats.critic_loss)
        optimizer.step()
        for layer in self.layers:
            layer.update_critic()
        self._step += 1
        return StepResult(tuple(losses), tuple(accs), tuple(crits))
