"""BLANP in torch's optimizer idiom: ``zero_grad()``, a local backward, ``step()``.

Backprop's loop is ``opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()``. BLANP
has no global loss to differentiate: each layer's update comes from its own detached input
and the labels. :class:`BLANPOptimizer` keeps the loop's shape and swaps the one line that
cannot stay, ``loss.backward()``, for :meth:`BLANPOptimizer.local_backward` ``(x, y)``,
which fills every parameter's ``.grad`` with its layer-local estimate (antithetic node
perturbation against the frozen EMA critic, or one of the other modes). ``step()`` is
Adam's on those gradients, followed by the EMA update of every critic.

>>> import torch
>>> from torch import nn
>>> model = nn.Sequential(nn.Sequential(nn.Linear(4, 16), nn.ReLU()), nn.Linear(16, 3))
>>> opt = BLANPOptimizer(model, example=torch.zeros(2, 4), lr=1e-2)
>>> x, y = torch.randn(32, 4), torch.arange(32) % 3
>>> for _ in range(3):
...     opt.zero_grad()
...     stats = opt.local_backward(x, y)
...     opt.step()
>>> tuple(model(x).shape), len(stats.losses)
((32, 3), 1)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from neurips26.common.torch import make_generator
from neurips26.common.validation import check_float, check_seed

from .estimators import as_tensor
from .local import BLANPNet, StepResult, _dtype, check_mode


class BLANPOptimizer(torch.optim.Adam):
    """Adam over layer-local gradients, with the EMA critics updated after every step.

    Parameters
    ----------
    model : BLANPNet or nn.Module
        A :class:`BLANPNet`, or a network :func:`~neurips26.papers.blanp.local_net` can read
        (an ``nn.Sequential`` / ``nn.ModuleList`` of blocks whose last block is the
        classifier, the shared ``MLPClassifier`` or ``SmallCNN``). A user's ``Sequential``
        is trained in place: its blocks are the local layers and its classifier is the last
        layer's head, so ``model(x)`` predicts with the trained network.
    example : array_like, optional
        An input batch sizing the local heads; needed unless ``model`` is a ``BLANPNet``.
    lr : float
        Adam's learning rate.
    mode : {"blanp", "blanp_no_ema", "forward", "exact", "dgl"}
        The local rule (see :mod:`neurips26.papers.blanp.local`).
    sigma, ema_decay, num_probes : float, float, int
        Passed to the local layers when ``model`` is wrapped here (ignored for a
        ``BLANPNet``, which carries its own).
    betas, eps, weight_decay
        Adam's.
    fused : bool
        Use torch's fused Adam kernel (one pass over each parameter instead of one
        multi-tensor pass per operation; the same update up to float rounding, several
        times faster per step on the CPU). The default, ``False``, is bit for bit the
        update of ``torch.optim.Adam``'s default.
    seed : int
        Seeds the perturbation probes (and the new local heads' initialisation).

    Attributes
    ----------
    net : BLANPNet
        The network being trained (heads and critics included); ``net(x)`` predicts from
        the last head.
    mode : str

    Notes
    -----
    ``step(closure)`` follows torch's contract: ``closure`` re-evaluates the gradients
    (typically ``opt.zero_grad(); return opt.local_backward(x, y).loss``) and its return
    value is returned.
    """

    def __init__(self, model: nn.Module, *, example=None, lr: float = 1e-3, mode: str = "blanp",
                 sigma: float = 1e-2, ema_decay: float = 0.99, num_probes: int = 1,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, fused: bool = False,
                 seed: int = 0) -> None:  # fmt: skip
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        lr = check_float(lr, "lr", min=0.0, max=10.0)
        eps = check_float(eps, "eps", min=0.0, max=1.0)
        weight_decay = check_float(weight_decay, "weight_decay", min=0.0, max=1e3)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"betas must be a pair of floats, got {betas!r}")
        betas = tuple(check_float(b, "betas", min=0.0, max=1.0, max_inclusive=False)
                      for b in betas)  # fmt: skip
        self.mode = check_mode(mode)
        if not isinstance(fused, bool):
            raise TypeError(f"fused must be a bool, got {type(fused).__name__}")
        seed = check_seed(seed)
        if isinstance(model, BLANPNet):
            net = model
        else:
            if example is None:
                raise ValueError("example: an input batch is needed to size the local heads "
                                 "of a model that is not a BLANPNet")  # fmt: skip
            from .training import local_net

            net = local_net(model, example=example, sigma=sigma, ema_decay=ema_decay,
                            num_probes=num_probes, seed=seed)  # fmt: skip
        params = [p for p in net.parameters() if p.requires_grad]
        if not params:
            raise ValueError("model has no trainable parameters")
        # foreach (one call per operation over every parameter) is torch's default update bit
        # for bit; fused is one kernel per parameter, equal up to rounding
        kernel = {"fused": True} if fused else {"foreach": True}
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         **kernel)
        self.net = net
        self.generator = make_generator(seed, params[0].device)

    def local_backward(self, x, y) -> StepResult:
        """Each layer's local gradient, accumulated into ``.grad`` (no gradient crosses a
        layer): the stand-in for ``loss.backward()``.

        Parameters
        ----------
        x : Tensor or array_like, shape (B, ...)
        y : Tensor or array_like, shape (B,)
            Integer labels in ``[0, num_classes)``.

        Returns
        -------
        StepResult
            Each layer's local loss and batch accuracy (``.loss`` is the last layer's).

        Raises
        ------
        ValueError
            For non-finite inputs, labels out of range or of the wrong length, or a
            non-finite local loss (the layer and step are named).
        """
        net = self.net
        h = as_tensor(x, "x", cast=_dtype(net))
        if h.ndim < 2:
            raise ValueError(f"x must have shape (B, ...), got {tuple(h.shape)}")
        h = h.to(self.param_groups[0]["params"][0].device)
        if torch.is_tensor(y):
            y = y.to(h.device)
        losses, accs, crits = [], [], []
        for i, layer in enumerate(net.layers):
            try:
                h, stats, y = layer._local_step(h, y, self.mode, self.generator, net._step,
                                                labels_checked=i > 0)  # fmt: skip
            except ValueError as exc:
                if i == 0 and str(exc).startswith("h_in:"):  # the user's batch did not fit
                    raise ValueError("x" + str(exc)[4:]) from None
                raise
            losses.append(stats.loss)
            accs.append(stats.accuracy)
            crits.append(stats.critic_loss)
        return StepResult(tuple(losses), tuple(accs), tuple(crits))

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None):
        """Adam's update on the local gradients, then every critic's EMA update.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the gradients and returns the loss (torch's contract).

        Returns
        -------
        The closure's return value, or None.
        """
        if closure is not None and not callable(closure):
            raise TypeError(f"closure must be callable, got {type(closure).__name__}")
        loss = super().step(closure)
        for layer in self.net.layers:
            layer.update_critic()
        self.net._step += 1
        return loss
