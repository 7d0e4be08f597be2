"""Real benchmark leaderboards shipped by PyPI ``benchbench`` (read as TSV, never imported).

- :func:`load_benchbench`: a models x items score table (MMLU: 98 Open-LLM-Leaderboard
  submissions x 57 subjects; ImageNet: 112 torchvision models x 1000 per-class top-1
  accuracies over the 50 validation images of each class).
"""

from __future__ import annotations

from pathlib import Path

from neurips26.common.data.images import package_dir

#: Tables :func:`load_benchbench` can read.
BENCHBENCH_TABLES = ("mmlu", "imagenet")


def benchbench_data_dir() -> Path:
    """The ``data/`` folder of the installed ``benchbench`` package (never imported).

    Raises
    ------
    DataNotInstalledError
        If ``benchbench`` is not installed (``pip install --no-deps benchbench``).
    """
    return package_dir("benchbench", hint="pip install --no-deps benchbench==1.0.1") / "data"


def load_benchbench(name: str):
    """A real models x items table from benchbench, read directly with pandas.

    Parameters
    ----------
    name : {"mmlu", "imagenet"}

    Returns
    -------
    pandas.DataFrame, shape (N, K)
        Models as rows (index: model name), items as columns, scores in [0, 1].
    """
    import pandas as pd

    if name not in BENCHBENCH_TABLES:
        raise ValueError(f"unknown benchbench table {name!r}; valid: 'mmlu', 'imagenet'")
    folder = benchbench_data_dir()
    if name == "mmlu":
        df = pd.read_csv(folder / "mmlu" / "leaderboard.tsv", sep="\t")
        cols = [c for c in df.columns if "hendrycksTest" in c]
        index = df["model_name"].astype(str) + "@" + df["split_name"].astype(str)
        out = df[cols].set_axis(index, axis=0)
        out.columns = [c.split("-", 1)[1].split("|")[0] for c in cols]
        return out.astype(float)
    df = pd.read_csv(folder / "imagenet" / "leaderboard.tsv", sep="\t")
    cols = [f"acc_{i}" for i in range(1000)]
    return df[cols].set_axis(df["Weight"].astype(str), axis=0).astype(float)
