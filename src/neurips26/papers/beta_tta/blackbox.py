"""The black box: a classifier reachable only through a probabilities-out API.

:class:`BlackBoxAPI` wraps a local ``nn.Module`` behind that boundary: it takes numpy
inputs, returns numpy probabilities computed under ``torch.no_grad()`` (so autograd cannot
reach the model), counts every sample it is asked about and the time its forward takes.
:class:`BlackBoxServer` runs such an API in another process behind a local HTTP endpoint on
127.0.0.1 (stdlib ``http.server`` and JSON), and :class:`HTTPBlackBox` is its client with
the same interface: the adaptation methods cannot tell them apart, and no gradient, weight
or activation can cross the boundary.
"""

from __future__ import annotations

import base64
import json
import multiprocessing as mp
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import torch
from torch import nn

from neurips26.common.validation import check_array, check_float, check_int

#: Tolerance on the row sums of returned probabilities.
PROB_ATOL = 1e-4
#: The most samples one call may carry.
MAX_BATCH = 100_000


def check_probabilities(probs, name: str = "probs", *, num_rows: int | None = None
                        ) -> np.ndarray:  # fmt: skip
    """Validate an API's output: a finite ``(B, K)`` array of non-negative rows summing to 1.

    Raises
    ------
    ValueError
        For NaN/inf, negative entries, or rows not summing to 1 within :data:`PROB_ATOL`
        (the message names ``name`` and hints that logits may have been returned).
    """
    p = check_array(probs, name, ndim=2)
    if num_rows is not None and len(p) != num_rows:
        raise ValueError(f"{name}: expected {num_rows} rows (one per sample), got {len(p)}")
    if (p < 0).any() or (p > 1 + PROB_ATOL).any():
        raise ValueError(
            f"{name}: expected probabilities in [0, 1], got values in [{p.min():.3g}, "
            f"{p.max():.3g}]; does the API return logits? apply a softmax first")
    off = float(np.abs(p.sum(1) - 1.0).max())
    if off > PROB_ATOL:
        raise ValueError(
            f"{name}: expected rows summing to 1 within {PROB_ATOL:g}, got a row {off:.3g} "
            "off; does the API return logits or unnormalised scores? apply a softmax first")
    return p


def check_images(x, name: str = "x", *, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A finite float32 batch ``(B, C, H, W)`` (matching ``shape = (C, H, W)`` if given)."""
    arr = check_array(x.detach().cpu().numpy() if torch.is_tensor(x) else x, name, ndim=4,
                      max_size=MAX_BATCH * 3 * 512 * 512)  # fmt: skip
    if shape is not None and tuple(arr.shape[1:]) != tuple(shape):
        raise ValueError(f"{name}: expected images of shape (B, {', '.join(map(str, shape))}),"
                         f" got {arr.shape}")  # fmt: skip
    if len(arr) > MAX_BATCH:
        raise ValueError(f"{name}: at most {MAX_BATCH} samples a call, got {len(arr)}")
    return arr.astype(np.float32)


class BlackBoxAPI:
    """A classifier behind a probabilities-only API that counts its calls.

    Parameters
    ----------
    model : nn.Module
        Maps ``(B, C, H, W)`` to logits ``(B, K)``; kept in eval mode, never trained here.
    input_shape : tuple of int, optional
        ``(C, H, W)`` the API accepts (inputs of any other shape are refused).
    temperature : float
        Softmax temperature of the returned probabilities.

    Attributes
    ----------
    num_calls : int
        Samples queried so far (a call on a batch of ``B`` adds ``B``).
    num_requests : int
        Calls so far (one per batch).
    forward_time : float
        Seconds spent inside the model's forward so far.

    Examples
    --------
    >>> api = BlackBoxAPI(nn.Sequential(nn.Flatten(), nn.Linear(4, 3)), input_shape=(1, 2, 2))
    >>> p = api(np.zeros((5, 1, 2, 2), np.float32))
    >>> p.shape, api.num_calls, bool(np.allclose(p.sum(1), 1))
    ((5, 3), 5, True)
    """

    def __init__(self, model: nn.Module, *, input_shape: tuple[int, ...] | None = None,
                 temperature: float = 1.0) -> None:  # fmt: skip
        if not isinstance(model, nn.Module):
            raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        if input_shape is not None:
            input_shape = tuple(check_int(int(s) if isinstance(s, np.integer) else s,
                                          "input_shape", min=1) for s in input_shape)
            if len(input_shape) != 3:
                raise ValueError(f"input_shape: expected (C, H, W), got {input_shape}")
        self._model = model.eval()
        self.input_shape = input_shape
        self.temperature = check_float(temperature, "temperature", min=0.0,
                                       min_inclusive=False)  # fmt: skip
        self.reset()

    def reset(self) -> None:
        """Set the call counters and the forward time to zero."""
        self.num_calls = 0
        self.num_requests = 0
        self.forward_time = 0.0

    def __call__(self, x) -> np.ndarray:
        """Probabilities ``(B, K)`` (numpy float64) of a batch ``x`` ``(B, C, H, W)``."""
        arr = check_images(x, "x", shape=self.input_shape)
        device = next(self._model.parameters(), torch.zeros(())).device
        tic = time.perf_counter()
        with torch.no_grad():
            logits = self._model(torch.from_numpy(arr).to(device))
            probs = torch.softmax(logits.double() / self.temperature, dim=1).cpu().numpy()
        self.forward_time += time.perf_counter() - tic
        self.num_calls += len(arr)
        self.num_requests += 1
        return check_probabilities(probs, "probs", num_rows=len(arr))


# ----------------------------------------------------------------------------- HTTP


def _encode(arr: np.ndarray) -> dict:
    arr = np.ascontiguousarray(arr)
    return {"dtype": str(arr.dtype), "shape": list(arr.shape),
            "data": base64.b64encode(arr.tobytes()).decode("ascii")}  # fmt: skip


def _decode(obj: dict) -> np.ndarray:
    dtype = np.dtype(obj["dtype"])
    if dtype.kind not in "fiu":
        raise ValueError(f"x: unsupported dtype {dtype}")
    data = base64.b64decode(obj["data"])
    return np.frombuffer(data, dtype=dtype).reshape(obj["shape"]).copy()


def _handler(api: BlackBoxAPI, lock: threading.Lock):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, obj: dict) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # http.server's name
            if self.path == "/stats":
                self._send(200, {"num_calls": api.num_calls, "num_requests": api.num_requests,
                                 "forward_time": api.forward_time})  # fmt: skip
            else:
                self._send(404, {"error": f"unknown path {self.path}"})

        def do_POST(self):
            if self.path != "/predict":
                self._send(404, {"error": f"unknown path {self.path}"})
                return
            try:
                n = int(self.headers.get("Content-Length", 0))
                x = _decode(json.loads(self.rfile.read(n)))
                with lock:
                    probs = api(x)
            except (ValueError, TypeError, KeyError) as exc:
                self._send(400, {"error": str(exc)})
                return
            self._send(200, {"probs": _encode(probs)})

    return Handler


def _serve(model: nn.Module, input_shape, conn) -> None:
    torch.set_num_threads(1)
    api = BlackBoxAPI(model, input_shape=input_shape)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api, threading.Lock()))
    conn.send(server.server_address[1])
    conn.close()
    server.serve_forever()


class BlackBoxServer:
    """Serve a model's probabilities from another process on ``http://127.0.0.1:<port>``.

    A context manager: entering starts the process (``spawn``: it shares no memory with
    this one) and waits for its port; leaving terminates it. Endpoints: ``POST /predict``
    with a JSON-encoded float32 batch returns the probabilities; ``GET /stats`` returns the
    server-side call counters.

    Parameters
    ----------
    model : nn.Module
        Pickled into the server process (its class must be importable there).
    input_shape : tuple of int, optional
        ``(C, H, W)`` the endpoint accepts.
    timeout : float
        Seconds to wait for the server to start.
    """

    def __init__(self, model: nn.Module, *, input_shape: tuple[int, ...] | None = None,
                 timeout: float = 60.0) -> None:  # fmt: skip
        if not isinstance(model, nn.Module):
            raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
        self.model = model
        self.input_shape = input_shape
        self.timeout = check_float(timeout, "timeout", min=0.0, min_inclusive=False)
        self.url: str | None = None
        self._proc = None

    def __enter__(self) -> BlackBoxServer:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_serve, args=(self.model, self.input_shape, child),
                                 daemon=True)  # fmt: skip
        self._proc.start()
        child.close()
        if not parent.poll(self.timeout):
            self._proc.terminate()
            raise RuntimeError(f"black-box server did not start within {self.timeout} s")
        self.url = f"http://127.0.0.1:{parent.recv()}"
        return self

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.join(5)
            self._proc = None

    def client(self) -> HTTPBlackBox:
        """An :class:`HTTPBlackBox` talking to this server."""
        if self.url is None:
            raise RuntimeError("the server is not running (use it in a `with` block)")
        return HTTPBlackBox(self.url)


class HTTPBlackBox:
    """Client of a :class:`BlackBoxServer`: the :class:`BlackBoxAPI` interface over HTTP.

    Parameters
    ----------
    url : str
        ``http://127.0.0.1:<port>``.
    timeout : float
        Seconds per request.

    Attributes
    ----------
    num_calls, num_requests : int
        Counted on this side (:meth:`server_stats` gives the server's own counts).
    forward_time : float
        Seconds of round trips (the black box's time as the caller sees it).
    """

    def __init__(self, url: str, *, timeout: float = 60.0) -> None:
        if not isinstance(url, str) or not url.startswith("http://127.0.0.1:"):
            raise ValueError(f"url: expected 'http://127.0.0.1:<port>', got {url!r}")
        self.url = url
        self.timeout = check_float(timeout, "timeout", min=0.0, min_inclusive=False)
        self.input_shape = None
        self.reset()

    def reset(self) -> None:
        """Set this side's counters to zero."""
        self.num_calls = 0
        self.num_requests = 0
        self.forward_time = 0.0

    def __call__(self, x) -> np.ndarray:
        arr = check_images(x, "x")
        body = json.dumps(_encode(arr)).encode()
        req = urllib.request.Request(f"{self.url}/predict", data=body,
                                     headers={"Content-Type": "application/json"})
        tic = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                out = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise ValueError(f"x: the API refused the batch: {exc.read().decode()}") from None
        self.forward_time += time.perf_counter() - tic
        self.num_calls += len(arr)
        self.num_requests += 1
        return check_probabilities(_decode(out["probs"]), "probs", num_rows=len(arr))

    def server_stats(self) -> dict:
        """The server's counters: ``num_calls``, ``num_requests``, ``forward_time``."""
        with urllib.request.urlopen(f"{self.url}/stats", timeout=self.timeout) as resp:
            return json.loads(resp.read())
